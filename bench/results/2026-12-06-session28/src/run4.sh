#!/bin/bash
# Session 28, device run 4 (cut to fit the session's last device minutes): the commit (`final`:
# mse_fused_stream_kernel for fused passes with more chunks than the reduce kernel's 3 blocks per
# SM, 16-bit ones only up to 5 per SM) against `head` (b449b96), fused mean, two passes
# alternating, at the bounds (396/397 chunks; 16-bit 660/661) and 2^22-2^28; then test_cuda of
# `final` in twenty shards (a test each), each stopped at 130 s. Results go to $OUT as they come.
D=$1; S=$OUT/run4_summary.txt; C=$OUT/run4_csv
mkdir -p $C; date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
for i in 0 1; do
  for b in $( [ $((i % 2)) = 0 ] && echo head final || echo final head ); do
    timeout 30 $D/mseloss_$b bench --device cuda --sizes 3244032,3252224,2^22,2^23,2^24,2^25,2^26,2^28 --dtypes f32 --reductions mean --op fused --runs 30 --csv $C/run4_${b}_f32_$i.csv >> $C/run4_ab.txt 2>&1
    echo "bench $b f32 pass $i rc=$? $(date -u +%T)" >> $S
    timeout 30 $D/mseloss_$b bench --device cuda --sizes 2^22,6488064,6504448,2^23,10813440,10829824,2^24,2^25,2^26,2^28 --dtypes bf16,f16 --reductions mean --op fused --runs 30 --csv $C/run4_${b}_16_$i.csv >> $C/run4_ab.txt 2>&1
    echo "bench $b 16 pass $i rc=$? $(date -u +%T)" >> $S
  done
done
for i in $(seq 0 19); do
  ( GTEST_TOTAL_SHARDS=20 GTEST_SHARD_INDEX=$i timeout 130 $D/test_cuda > $C/run4_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/20 rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[ RUN' $C/run4_test_cuda_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
wait
date -u >> $S
cat $S
grep -hE "FAILED|Failure" $C/run4_test_cuda_*.log | head -20
