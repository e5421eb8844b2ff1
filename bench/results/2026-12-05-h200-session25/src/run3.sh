#!/bin/bash
# Session 25, device run 3: dealt tiles (every elementwise mode from 2^20, `dealt`) against the
# committed kernels (spread tiles for two modes from 2^25, `final3`), both with this session's
# bench, two passes each in alternating order; then test_cuda of the dealt build (ten shards).
D=$1; S=$OUT/run3_summary.txt
mkdir -p /tmp/csv3; date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
i=0
for order in "final3 dealt" "dealt final3"; do
  for b in $order; do
    timeout 100 $D/mseloss_$b bench --device cuda --sizes 2^22,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions none,mean --op forward,backward,fused --runs 30 --csv /tmp/csv3/run3_${b}_$i.csv > /tmp/csv3/run3_${b}_$i.txt 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
  i=$((i+1))
done
tar -czf $OUT/run3_csv.tar.gz -C /tmp/csv3 .
for i in 0 1 2 3 4 5 6 7 8 9; do
  ( GTEST_TOTAL_SHARDS=10 GTEST_SHARD_INDEX=$i timeout 215 $D/test_cuda > /tmp/csv3/run3_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/10 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/csv3/run3_test_cuda_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
wait
cat /tmp/csv3/run3_test_cuda_*.log > $OUT/run3_test_cuda.log
date -u >> $S; cat $S
grep -E "FAILED|Failure" $OUT/run3_test_cuda.log | head -20
