#!/bin/bash
# Session 31, device run 3: run 2 writing straight into $OUT (no tarball at the end), so that a
# run cut short by the session's last device seconds still returns what it measured: the patched
# build (`final`) against `head`, fused mean and none, every dtype, 2^22-2^28, three passes alternating;
# test_cuda of the patched build in twenty shards; Nsight Compute only on an H200.
# Tables: ../../2026-12-06-session28/src/ab.py $OUT head,final (run3_<build>_<pass>.csv) and
# ../../2026-12-06-session30/src/ncu_table.py $OUT ncu3_.
D=$1; W=$OUT; S=$W/run3_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
for i in 0 1 2; do
  for b in $( [ $((i % 2)) = 0 ] && echo head final || echo final head ); do
    timeout 90 $D/mseloss_$b bench --device cuda --sizes 2^22,2^23,2^24,2^25,2^26,2^28 --dtypes bf16,f16,f32 --reductions none,mean --op fused --runs 30 --csv $W/run3_${b}_$i.csv > /dev/null 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
  if [ $i = 0 ]; then
    for j in $(seq 0 19); do
      ( GTEST_TOTAL_SHARDS=20 GTEST_SHARD_INDEX=$j timeout 200 $D/test_cuda_final > $W/test_final_$j.log 2>&1; echo "test_cuda_final shard $j/20 rc=$?" >> $S ) &
    done; wait
    grep -h "^\[  PASSED\|^\[  FAILED" $W/test_final_*.log | sort | uniq -c >> $S
    grep -hE "FAILED|Failure" $W/test_final_*.log | head -20 >> $S
  fi
done
if grep -q H200 $S; then
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__registers_per_thread,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
for b in head final; do
  timeout 60 ncu --clock-control none --csv --page raw --metrics $M -k regex:mse_ -c 6 \
    $D/mseloss_$b bench --device cuda --sizes 2^25 --dtypes bf16 --reductions mean --op fused --runs 3 \
    > $W/ncu3_${b}_bf16_fused_mean.csv 2>&1
  echo "ncu $b rc=$? $(date -u +%T)" >> $S
done
fi
date -u >> $S
cat $S
