#!/bin/bash
# Session 31, device run 2: the commit (`final`: the lean fused pass for 16-bit inputs at every
# chunk count above the reduce kernel's grid) against session 30's HEAD (`head`) on whichever
# card comes: fused mean and none, every dtype, 2^22-2^28, three passes alternating; Nsight
# Compute of the two bf16 fused mean kernels at 2^25 (H200 only); test_cuda of the commit in
# twenty shards. Packed into $OUT/run2.tgz.
D=$1; W=/tmp/s31run2; rm -rf $W; mkdir -p $W; S=$W/run2_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
for i in 0 1 2; do
  for b in $( [ $((i % 2)) = 0 ] && echo head final || echo final head ); do
    timeout 90 $D/mseloss_$b bench --device cuda --sizes 2^22,2^23,2^24,2^25,2^26,2^28 --dtypes bf16,f16,f32 --reductions none,mean --op fused --runs 30 --csv $W/run2_bench_${b}_$i.csv > /dev/null 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
if grep -q H200 $S; then
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__registers_per_thread,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
for b in head final; do
  timeout 60 ncu --clock-control none --csv --page raw --metrics $M -k regex:mse_ -c 6 \
    $D/mseloss_$b bench --device cuda --sizes 2^25 --dtypes bf16 --reductions mean --op fused --runs 3 \
    > $W/run2_ncu_${b}_bf16_fused_mean.csv 2>&1
  echo "ncu $b rc=$? $(date -u +%T)" >> $S
done
fi
for i in $(seq 0 19); do
  ( GTEST_TOTAL_SHARDS=20 GTEST_SHARD_INDEX=$i timeout 200 $D/test_cuda_final > $W/test_final_$i.log 2>&1; echo "test_cuda_final shard $i/20 rc=$?" >> $S ) &
done; wait
grep -h "^\[  PASSED\|^\[  FAILED" $W/test_final_*.log | sort | uniq -c >> $S
grep -hE "FAILED|Failure" $W/test_final_*.log | head -20 >> $S
date -u >> $S
tar -czf $OUT/run2.tgz -C $W .
cp $S $OUT/
cat $S
