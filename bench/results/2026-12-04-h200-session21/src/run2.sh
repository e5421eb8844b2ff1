#!/bin/bash
# Session 21, device run 2: grouped chunks (each block an aligned group of chunks, one posted subtree per block)
# against HEAD: the trace driver (2^25 bf16/fp32) and the bench A/B (2^22..2^26), then test_cuda on the grouped build.
S=$OUT/run2_summary.txt; H=.exp/head/build/hopper/mseloss; M=build/hopper/mseloss
date -u > $S
for i in 1 2; do
  for v in B G2; do timeout 100 .exp/s21/trace_$v 30 > $OUT/run2_trace_${v}_$i.txt 2>&1; echo "trace $v $i rc=$?" >> $S; done
done
for i in 1 2; do
  for b in $H $M; do
    echo "== $b pass $i $(date -u +%T)" >> $OUT/run2_ab.txt
    timeout 100 $b bench --device cuda --sizes 2^22,2^23,2^24,2^25,2^26 --dtypes f32,bf16,f16 --reductions mean --op forward --runs 50 2>&1 | grep -v "^#" >> $OUT/run2_ab.txt
  done
done
echo "ab done $(date -u +%T)" >> $S
for i in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 400 build/hopper/tests/test_cuda > $OUT/run2_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/4 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/run2_test_cuda_$i.log | tr '\n' ' ')" >> $S ) &
done
wait
date -u >> $S
cat $S
for f in $OUT/run2_trace_*; do echo "## $f"; grep -v "per rep" $f; done
grep -E "^op|forward" $OUT/run2_ab.txt | awk '{print $4,$6,$7,$9,$10}' | paste - - - - - - - - - - - - - - - - | head -20
