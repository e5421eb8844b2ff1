#!/bin/bash
# Session 28, device run 5 (prepared, not run): why forward `none` runs 3-6 % under backward mean
# on the H200 (run 1), though both read x and y and write one array through the same dealt tiles.
# Nsight Compute of the two kernels at 2^25, bf16 and fp32, with the device copy of the bench run
# as the reference: DRAM bytes and throughput, L2 hit rate and write-backs, and the stall mix.
D=$1; S=$OUT/run5_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,lts__t_sectors_op_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__registers_per_thread,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio
for t in bf16 f32; do
  for op in "forward none" "backward mean"; do
    set -- $op
    timeout 120 ncu --clock-control none --csv --page raw --metrics $M -k regex:mse_elementwise -c 8 \
      $D/mseloss_final bench --device cuda --sizes 2^25 --dtypes $t --reductions $2 --op $1 --runs 5 \
      > $OUT/run5_ncu_${t}_$1_$2.csv 2>&1
    echo "ncu $t $1 $2 rc=$? $(date -u +%T)" >> $S
  done
done
cat $S
