#!/bin/bash
# Session 28, device run 1: the lean fused pass (mse_fused_stream_kernel) in four shapes
# (u<rows in flight>b<blocks per SM>) against `head` (b449b96), fused mean, three passes in
# rotating order; `head`'s full set once (forward/backward/fused, none/mean: a repeat of session
# 26's run 3, whose raw outputs were lost); test_cuda of u4b2 (ten shards); racecheck and memcheck
# of u4b2's fused pass through the bench (dealt chunks with a cut-short last chunk).
D=$1; S=$OUT/run1_summary.txt
mkdir -p /tmp/csv/full; date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
builds=(head u4b2 u8b2 u4b3 u2b3)
for i in 0 1 2; do
  for j in 0 1 2 3 4; do
    b=${builds[$(( (i + j) % 5 ))]}
    echo "== $b pass $i $(date -u +%T)" >> /tmp/csv/run1_ab.txt
    timeout 60 $D/mseloss_$b bench --device cuda --sizes 2^22,2^23,2^24,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions mean --op fused --runs 30 --csv /tmp/csv/run1_${b}_$i.csv >> /tmp/csv/run1_ab.txt 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
  if [ $i = 1 ]; then
    timeout 90 $D/mseloss_head bench --device cuda --sizes 2^24,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions none,mean --op forward,backward,fused --runs 30 --csv /tmp/csv/full/run1_head_0.csv > /tmp/csv/full/run1_full.txt 2>&1
    echo "bench head full rc=$? $(date -u +%T)" >> $S
  fi
done
for i in 0 1 2 3 4 5 6 7 8 9; do
  ( GTEST_TOTAL_SHARDS=10 GTEST_SHARD_INDEX=$i timeout 170 $D/test_cuda > /tmp/csv/run1_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/10 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/csv/run1_test_cuda_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
for tool in racecheck memcheck; do
  ( timeout 170 compute-sanitizer --tool $tool $( [ $tool = memcheck ] && echo --leak-check full ) $D/mseloss_u4b2 bench --device cuda --sizes 4194309,8388613 --dtypes f32,bf16 --reductions mean,sum --op fused --runs 2 > /tmp/csv/run1_$tool.log 2>&1; echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' /tmp/csv/run1_$tool.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
wait
cat /tmp/csv/run1_test_cuda_*.log > /tmp/csv/run1_test_cuda.log
date -u >> $S
tar -czf $OUT/run1_csv.tar.gz -C /tmp/csv .
cat $S
grep -E "FAILED|Failure" /tmp/csv/run1_test_cuda.log | head -20
