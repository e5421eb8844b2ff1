#!/bin/bash
# Session 25, device run 4 (the last of the session's device time; run3.sh never got a machine):
# one bench pass each of final3 and dealt, then the tests that run the dealt tiles, four shards.
D=$1; S=$OUT/run4_summary.txt
mkdir -p /tmp/c4; date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
for b in final3 dealt; do
  timeout 40 $D/mseloss_$b bench --device cuda --sizes 2^22,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions none,mean --op forward,backward,fused --runs 30 --csv /tmp/c4/run4_${b}.csv > /tmp/c4/run4_${b}.txt 2>&1
  echo "bench $b rc=$? $(date -u +%T)" >> $S
done
tar -czf $OUT/run4_csv.tar.gz -C /tmp/c4 .
F='*DealtTiles*:*FourConcurrentStreams*:*SixteenThreads*:*HalfGradient*:*RepeatedBackwardAndFused*'
for i in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 130 $D/test_cuda --gtest_filter="$F" > /tmp/c4/t$i.log 2>&1; echo "test_cuda shard $i/4 rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[       OK|^\[  FAILED' /tmp/c4/t$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
wait
cat /tmp/c4/t*.log > $OUT/run4_test_cuda.log
date -u >> $S; cat $S
