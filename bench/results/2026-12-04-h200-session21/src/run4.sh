#!/bin/bash
# Session 21, device run 4: the first block done finishes (polls with __nanosleep while the others work; the last ticket resets the counter) against HEAD.
S=$OUT/run4_summary.txt; H=.exp/head/build/hopper/mseloss; M=build/hopper/mseloss
date -u > $S
for i in 1 2; do
  for v in B F128 F0; do timeout 100 .exp/s21/trace_$v 30 > $OUT/run4_trace_${v}_$i.txt 2>&1; echo "trace $v $i rc=$?" >> $S; done
done
for i in 1 2; do
  for b in $H $M; do
    echo "== $b pass $i $(date -u +%T)" >> $OUT/run4_ab.txt
    timeout 100 $b bench --device cuda --sizes 2^22,2^23,2^24,2^25,2^26 --dtypes f32,bf16,f16 --reductions mean --op forward --runs 50 2>&1 | grep -v "^#" >> $OUT/run4_ab.txt
  done
done
echo "ab done $(date -u +%T)" >> $S
date -u >> $S
cat $S
for f in $OUT/run4_trace_*; do echo "## $f"; grep -v "per rep" $f | cut -c1-330; done
grep -E "forward" $OUT/run4_ab.txt | awk '{print $4,$6,$7,$9,$10}' | paste - - - - - - - - - - - - - - -
