#!/bin/bash
# Session 29, device run 3: every load of a group issued before its arithmetic
# (issue_loads_first). `final`: the committed kernels (0f08b6c); `ld1`: the elementwise kernel's
# tiles; `ld2`: ld1 and the lean fused pass (all dtypes) and the 16-bit forward stream kernel (at
# 3 blocks per SM, its 8 loads need 80 registers). Three passes rotating, every op and reduction
# at 2^22-2^28; then test_cuda of ld2 and of ld1, twenty shards of one test each. Packed into
# $OUT/run3.tgz.
D=$1; W=/tmp/run3; mkdir -p $W; S=$W/run3_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
for i in 0 1 2; do
  for b in $(case $i in 0) echo final ld1 ld2;; 1) echo ld1 ld2 final;; 2) echo ld2 final ld1;; esac); do
    timeout 60 $D/mseloss_$b bench --device cuda --sizes 2^22,2^23,2^24,2^25,2^26,2^28 --dtypes bf16,f16,f32 --reductions none,mean --op forward,backward,fused --runs 30 --csv $W/run3_${b}_$i.csv > /dev/null 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
for t in ld2 ld1; do
  for i in $(seq 0 19); do
    ( GTEST_TOTAL_SHARDS=20 GTEST_SHARD_INDEX=$i timeout 150 $D/test_cuda_$t > $W/test_${t}_$i.log 2>&1; echo "test_cuda_$t shard $i/20 rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[ RUN' $W/test_${t}_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
  done
  wait
done
grep -hE "FAILED|Failure" $W/test_*.log | head -20 >> $S
date -u >> $S
tar -czf $OUT/run3.tgz -C $W .
cp $S $OUT/
cat $S
