#!/bin/bash
# Session 26, device run 3 (H200 wanted): `head` against `final` (dealt tiles from 2^24, 2 blocks
# per SM), three passes each in alternating order, then test_cuda of `final` in ten shards.
D=$1; S=$OUT/run3_summary.txt
mkdir -p /tmp/csv; date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
for i in 0 1 2; do
  for b in $( [ $((i % 2)) = 0 ] && echo head final || echo final head ); do
    echo "== $b pass $i $(date -u +%T)" >> /tmp/csv/run3_ab.txt
    timeout 60 $D/mseloss_$b bench --device cuda --sizes 2^24,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions none,mean --op forward,backward,fused --runs 30 --csv /tmp/csv/run3_${b}_$i.csv >> /tmp/csv/run3_ab.txt 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
for i in 0 1 2 3 4 5 6 7 8 9; do
  ( GTEST_TOTAL_SHARDS=10 GTEST_SHARD_INDEX=$i timeout 170 $D/test_cuda > /tmp/csv/run3_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/10 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/csv/run3_test_cuda_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
wait
cat /tmp/csv/run3_test_cuda_*.log > /tmp/csv/run3_test_cuda.log
date -u >> $S
tar -czf $OUT/run3_csv.tar.gz -C /tmp/csv .
cat $S
grep -E "FAILED|Failure" /tmp/csv/run3_test_cuda.log | head -20
