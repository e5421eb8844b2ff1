#!/bin/bash
# Session 30, device run 3 (H200 only; on another card it stops at once): six more calls of ld3's
# forward mean at 2^25-2^26 (the x probe spread), and Nsight Compute at 2^25 of the fused passes
# that trail a copy on the H200 (run 2): fused mean bf16 (0.91 of the copy) and fp32 (0.99), fused
# none bf16 (0.95), with forward none bf16 (1.00) as the reference. Packed into $OUT/run3.tgz.
D=$1; W=/tmp/s30run3; rm -rf $W; mkdir -p $W; S=$W/run3_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
if ! grep -q H200 $S; then cat $S; echo "not an H200: stopped"; exit 3; fi
md5sum $D/mseloss_ld3 >> $S
for i in 0 1 2 3 4 5; do
  timeout 60 $D/mseloss_ld3 bench --device cuda --sizes 2^25,2^26 --dtypes bf16,f16,f32 --reductions mean,sum --op forward --runs 30 --csv $W/run3_fwd_$i.csv > /dev/null 2>&1
  echo "bench forward pass $i rc=$? $(date -u +%T)" >> $S
done
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,smsp__inst_executed.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio
for c in "bf16 fused mean" "f32 fused mean" "bf16 fused none" "bf16 forward none"; do
  set -- $c
  timeout 120 ncu --clock-control none --csv --page raw --metrics $M -k regex:mse_ -c 6 \
    $D/mseloss_ld3 bench --device cuda --sizes 2^25 --dtypes $1 --reductions $3 --op $2 --runs 3 \
    > $W/run3_ncu_$1_$2_$3.csv 2>&1
  echo "ncu $1 $2 $3 rc=$? $(date -u +%T)" >> $S
done
date -u >> $S
tar -czf $OUT/run3.tgz -C $W .
cp $S $OUT/
cat $S
