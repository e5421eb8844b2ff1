#!/bin/bash
# Session 29, device run 5 (the last device minutes; benches only): `final` (0f08b6c) against
# `ld3` (the commit) at 2^24-2^26, three passes alternating, every op and reduction. Its value
# is on the H200; on an H100 it repeats run 4. Packed into $OUT/run5.tgz.
D=$1; W=/tmp/s29run5; rm -rf $W; mkdir -p $W; S=$W/run5_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/mseloss_* >> $S
for i in 0 1 2; do
  for b in $( [ $((i % 2)) = 0 ] && echo final ld3 || echo ld3 final ); do
    timeout 40 $D/mseloss_$b bench --device cuda --sizes 2^24,2^25,2^26 --dtypes bf16,f16,f32 --reductions none,mean --op forward,backward,fused --runs 30 --csv $W/run5_${b}_$i.csv > /dev/null 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
date -u >> $S
tar -czf $OUT/run5.tgz -C $W .
cp $S $OUT/
cat $S
