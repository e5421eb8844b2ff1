#!/bin/bash
# Session 26, device run 1: the committed kernels (`head`: spread tiles for `none` and fused `none`
# from 2^25) against dealt tiles for every elementwise mode from 2^20 at 2, 3 and 4 blocks per SM
# (`dealt2/3/4`), four passes in rotating order; then test_cuda of the dealt3 build (ten shards)
# with racecheck and memcheck of the dealt kernels through the CLI's bench at 2^21.
D=$1; S=$OUT/run1_summary.txt
mkdir -p /tmp/csv; date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
builds=(head dealt2 dealt3 dealt4)
for i in 0 1 2 3; do
  for j in 0 1 2 3; do
    b=${builds[$(( (i + j) % 4 ))]}
    echo "== $b pass $i $(date -u +%T)" >> /tmp/csv/run1_ab.txt
    timeout 100 $D/mseloss_$b bench --device cuda --sizes 2^20,2^22,2^24,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions none,mean --op forward,backward,fused --runs 30 --csv /tmp/csv/run1_${b}_$i.csv >> /tmp/csv/run1_ab.txt 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
for i in 0 1 2 3 4 5 6 7 8 9; do
  ( GTEST_TOTAL_SHARDS=10 GTEST_SHARD_INDEX=$i timeout 240 $D/test_cuda > /tmp/csv/run1_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/10 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/csv/run1_test_cuda_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
for tool in racecheck memcheck; do
  ( timeout 200 compute-sanitizer --tool $tool $( [ $tool = memcheck ] && echo --leak-check full ) $D/mseloss_dealt3 bench --device cuda --sizes 2^21 --dtypes f32,bf16 --reductions none,mean --op forward,backward,fused --runs 2 > /tmp/csv/run1_$tool.log 2>&1; echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' /tmp/csv/run1_$tool.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
wait
cat /tmp/csv/run1_test_cuda_*.log > /tmp/csv/run1_test_cuda.log
date -u >> $S
tar -czf $OUT/run1_csv.tar.gz -C /tmp/csv .
cat $S
grep -E "FAILED|Failure" /tmp/csv/run1_test_cuda.log | head -20
