#!/bin/bash
# Session 21, device run 5: grid-strided groups of gs chunks (gs = 2, 4; MSELOSS_EXP_GS), one posted subtree per group, against HEAD.
S=$OUT/run5_summary.txt; H=.exp/head/build/hopper/mseloss; M=build/hopper/mseloss
date -u > $S
for i in 1 2; do
  timeout 100 .exp/s21/trace_B 30 > $OUT/run5_trace_B_$i.txt 2>&1; echo "trace B $i rc=$?" >> $S
  MSELOSS_EXP_GS=2 timeout 100 .exp/s21/trace_G3 30 > $OUT/run5_trace_G3gs2_$i.txt 2>&1; echo "trace G3 gs2 $i rc=$?" >> $S
done
for i in 1 2; do
  for v in H 2 4; do
    if [ $v = H ]; then b=$H; e=; else b=$M; e="MSELOSS_EXP_GS=$v"; fi
    echo "== $v pass $i $(date -u +%T)" >> $OUT/run5_ab.txt
    env $e timeout 100 $b bench --device cuda --sizes 2^22,2^23,2^24,2^25,2^26,2^27 --dtypes f32,bf16,f16 --reductions mean --op forward --runs 50 2>&1 | grep -v "^#" >> $OUT/run5_ab.txt
  done
done
echo "ab done $(date -u +%T)" >> $S
for i in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 400 build/hopper/tests/test_cuda > $OUT/run5_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/4 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/run5_test_cuda_$i.log | tr '\n' ' ')" >> $S ) &
done
wait
date -u >> $S
cat $S
for f in $OUT/run5_trace_*; do echo "## $f"; grep -v "per rep" $f | cut -c1-330; done
