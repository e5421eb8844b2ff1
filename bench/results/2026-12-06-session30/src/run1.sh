#!/bin/bash
# Session 30, device run 1: session 29's fix (`ld3`, the commit 882205f: issue_loads_first in the
# elementwise kernel's dealt tiles and the 16-bit lean fused pass) against `final` (0f08b6c) and
# `ld2` (the fix everywhere, with the 16-bit forward stream kernel at 3 blocks per SM), three
# passes rotating, every op and reduction at 2^23-2^28; Nsight Compute of ld3's forward `none`
# and backward mean at 2^25 (session 28's run5.sh metrics); test_cuda of ld3 in twenty shards
# beside `pip install .` and pytest of the working tree (HEAD); then bench/torch_bench.py at
# 2^10, 2^12, 2^20 and 2^25 on a quiet GPU. Everything packed into $OUT/run1.tgz.
D=$1; R=$PWD; W=/tmp/s30run1; rm -rf $W; mkdir -p $W; S=$W/run1_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
for i in 0 1 2; do
  case $i in 0) order="final ld3 ld2";; 1) order="ld3 ld2 final";; *) order="ld2 final ld3";; esac
  for b in $order; do
    timeout 60 $D/mseloss_$b bench --device cuda --sizes 2^23,2^24,2^25,2^26,2^28 --dtypes bf16,f16,f32 --reductions none,mean --op forward,backward,fused --runs 30 --csv $W/run1_${b}_$i.csv > /dev/null 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,lts__t_sectors_op_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__registers_per_thread,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio
for t in bf16 f32; do
  for op in "forward none" "backward mean"; do
    set -- $op
    timeout 120 ncu --clock-control none --csv --page raw --metrics $M -k regex:mse_elementwise -c 8 \
      $D/mseloss_ld3 bench --device cuda --sizes 2^25 --dtypes $t --reductions $2 --op $1 --runs 5 \
      > $W/run1_ncu_ld3_${t}_$1_$2.csv 2>&1
    echo "ncu ld3 $t $1 $2 rc=$? $(date -u +%T)" >> $S
  done
done
for i in $(seq 0 19); do
  ( GTEST_TOTAL_SHARDS=20 GTEST_SHARD_INDEX=$i timeout 200 $D/test_cuda_ld3 > $W/test_ld3_$i.log 2>&1; echo "test_cuda_ld3 shard $i/20 rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[ RUN' $W/test_ld3_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
( t0=$SECONDS; CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 timeout 200 python3 -m pip install --no-build-isolation --no-deps -q . > $W/pip.log 2>&1; echo "pip rc=$? in $((SECONDS-t0)) s" >> $S
  t0=$SECONDS; cd /tmp && timeout 250 python3 -m pytest -q -p no:cacheprovider $R/tests/python > $W/pytest.log 2>&1; echo "pytest rc=$? in $((SECONDS-t0)) s: $(tail -1 $W/pytest.log)" >> $S ) &
wait
grep -hE "FAILED|Failure" $W/test_*.log | head -20 >> $S
grep -E "FAILED|Error" $W/pytest.log | head -10 >> $S
cd /tmp; t0=$SECONDS; PYTHONUNBUFFERED=1 timeout 150 python3 $R/bench/torch_bench.py --sizes 2^10,2^12,2^20,2^25 --dtypes float32,bfloat16,float16 --runs 30 --csv $W/run1_torch_bench.csv > $W/run1_torch_bench.log 2>&1
echo "torch_bench rc=$? in $((SECONDS-t0)) s" >> $S
date -u >> $S
tar -czf $OUT/run1.tgz -C $W .
cp $S $OUT/
cat $S
