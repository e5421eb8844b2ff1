#!/bin/bash
# Session 29, device run 4: the candidate `ld3` (issue_loads_first in the elementwise kernel's
# dealt tiles, from 2^24, and in the 16-bit lean fused pass) against `final` (0f08b6c), three
# passes rotating, every op and reduction at 2^23-2^28; then test_cuda of ld3 in twenty shards.
# Packed into $OUT/run4.tgz (a folder of its own: a reused machine keeps /tmp).
D=$1; W=/tmp/s29run4; rm -rf $W; mkdir -p $W; S=$W/run4_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
for i in 0 1 2; do
  for b in $( [ $((i % 2)) = 0 ] && echo final ld3 || echo ld3 final ); do
    timeout 60 $D/mseloss_$b bench --device cuda --sizes 2^23,2^24,2^25,2^26,2^28 --dtypes bf16,f16,f32 --reductions none,mean --op forward,backward,fused --runs 30 --csv $W/run4_${b}_$i.csv > /dev/null 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
for i in $(seq 0 19); do
  ( GTEST_TOTAL_SHARDS=20 GTEST_SHARD_INDEX=$i timeout 150 $D/test_cuda_ld3 > $W/test_ld3_$i.log 2>&1; echo "test_cuda_ld3 shard $i/20 rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[ RUN' $W/test_ld3_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
wait
grep -hE "FAILED|Failure" $W/test_*.log | head -20 >> $S
date -u >> $S
tar -czf $OUT/run4.tgz -C $W .
cp $S $OUT/
cat $S
