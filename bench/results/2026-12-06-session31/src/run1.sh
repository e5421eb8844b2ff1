#!/bin/bash
# Session 31, device run 1 (session 30's run5.sh on any card: ANY=1 lets a non-H200 run): run 4 cut to
# its question, `lean16` against `head` for the fused pass (mean and none, every dtype,
# 2^23-2^28), three passes alternating; Nsight Compute of the two bf16 fused mean kernels at 2^25;
# test_cuda of lean16 in twenty shards where lean16 won. Packed into $OUT/run5.tgz.
D=$1; W=/tmp/s31run; rm -rf $W; mkdir -p $W; S=$W/run5_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
if [ -z "$ANY" ] && ! grep -q H200 $S; then cat $S; echo "not an H200: stopped"; exit 3; fi
md5sum $D/* >> $S
for i in 0 1 2; do
  for b in $( [ $((i % 2)) = 0 ] && echo head lean16 || echo lean16 head ); do
    timeout 60 $D/mseloss_$b bench --device cuda --sizes 2^23,2^24,2^25,2^26,2^28 --dtypes bf16,f16,f32 --reductions none,mean --op fused --runs 30 --csv $W/run5_${b}_$i.csv > /dev/null 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__registers_per_thread,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio
for b in head lean16; do
  timeout 60 ncu --clock-control none --csv --page raw --metrics $M -k regex:mse_ -c 6 \
    $D/mseloss_$b bench --device cuda --sizes 2^25 --dtypes bf16 --reductions mean --op fused --runs 3 \
    > $W/run5_ncu_${b}_bf16_fused_mean.csv 2>&1
  echo "ncu $b rc=$? $(date -u +%T)" >> $S
done
WIN=$(python3 - $W <<'PY'
import csv, glob, statistics, sys
t = {}
for f in glob.glob(sys.argv[1] + '/run5_*_*.csv'):
    b = f.split('/')[-1].split('_')[1]
    for r in csv.DictReader(open(f)):
        if r['op'] == 'fused' and r['reduction'] == 'mean' and r['dtype'] != 'float32' and 2**24 <= int(r['n']) <= 2**26:
            t.setdefault((b, r['dtype'], r['n']), []).append(float(r['us']))
ratios = [statistics.median(t[('lean16',) + k[1:]]) / statistics.median(v) for k, v in t.items() if k[0] == 'head']
print('yes' if ratios and statistics.median(ratios) < 0.995 else 'no', ' '.join('%.3f' % r for r in sorted(ratios)))
PY
)
echo "lean16 over head, 16-bit fused mean 2^24-2^26: $WIN" >> $S
case $WIN in
  yes*)
    for i in $(seq 0 19); do
      ( GTEST_TOTAL_SHARDS=20 GTEST_SHARD_INDEX=$i timeout 200 $D/test_cuda_lean16 > $W/test_lean16_$i.log 2>&1; echo "test_cuda_lean16 shard $i/20 rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[ RUN' $W/test_lean16_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
    done
    wait
    grep -hE "FAILED|Failure" $W/test_*.log | head -20 >> $S;;
esac
date -u >> $S
tar -czf $OUT/run5.tgz -C $W .
cp $S $OUT/
cat $S
