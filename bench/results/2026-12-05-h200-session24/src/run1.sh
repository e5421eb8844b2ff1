#!/bin/bash
# Session 24, device run 1: HEAD's CLI (40731de) and the spread-tile CLI in turn, two passes each:
# the elementwise modes and the reductions that share their kernels, 2^22-2^28, fp32/bf16/fp16.
D=$(dirname $0); S=$OUT/run1_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
for i in 1 2; do
  for b in head final; do
    echo "== $b pass $i $(date -u +%T)" >> $OUT/run1_ab.txt
    timeout 140 $D/mseloss_$b bench --device cuda --sizes 2^22,2^24,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions none,mean --op forward,backward,fused --runs 30 --csv $OUT/run1_${b}_$i.csv >> $OUT/run1_ab.txt 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
date -u >> $S; cat $S
