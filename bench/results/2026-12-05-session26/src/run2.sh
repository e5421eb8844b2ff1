#!/bin/bash
# Session 26, device run 2 (H200 wanted): `head`, `dealt2`, `dealt3` as run 1 and `final`
# (dealt tiles from 2^24 at 2 blocks per SM, the candidate commit), four passes in rotating order;
# then test_cuda of `final` (ten shards) with racecheck and memcheck of its dealt kernels at 2^24 + 5.
D=$1; S=$OUT/run2_summary.txt
mkdir -p /tmp/csv; date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
builds=(head dealt2 dealt3 final)
for i in 0 1 2 3; do
  for j in 0 1 2 3; do
    b=${builds[$(( (i + j) % 4 ))]}
    echo "== $b pass $i $(date -u +%T)" >> /tmp/csv/run2_ab.txt
    timeout 100 $D/mseloss_$b bench --device cuda --sizes 2^22,2^23,2^24,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions none,mean --op forward,backward,fused --runs 30 --csv /tmp/csv/run2_${b}_$i.csv >> /tmp/csv/run2_ab.txt 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
for i in 0 1 2 3 4 5 6 7 8 9; do
  ( GTEST_TOTAL_SHARDS=10 GTEST_SHARD_INDEX=$i timeout 240 $D/test_cuda > /tmp/csv/run2_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/10 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/csv/run2_test_cuda_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
for tool in racecheck memcheck; do
  ( timeout 200 compute-sanitizer --tool $tool $( [ $tool = memcheck ] && echo --leak-check full ) $D/mseloss_final bench --device cuda --sizes 16777221 --dtypes f32,bf16 --reductions none,mean --op forward,backward,fused --runs 2 > /tmp/csv/run2_$tool.log 2>&1; echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' /tmp/csv/run2_$tool.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
wait
cat /tmp/csv/run2_test_cuda_*.log > /tmp/csv/run2_test_cuda.log
date -u >> $S
tar -czf $OUT/run2_csv.tar.gz -C /tmp/csv .
cat $S
grep -E "FAILED|Failure" /tmp/csv/run2_test_cuda.log | head -20
