#!/bin/bash
# Session 28, device run 2: where the lean fused pass (264 blocks) pays. Run 1 had u4b2 6-14 %
# faster than `head` (396 blocks) for 16-bit inputs at 2^23 (512 chunks) and 0-5 % slower from
# 2^24 (1024 chunks); fp32 faster at every N from 2^22 (512 chunks). Below 396 chunks `head` gives
# each chunk a block of its own. `head` against u4b2, fused mean, 320 to 1536 chunks, five
# passes alternating.
D=$1; S=$OUT/run2_summary.txt
mkdir -p /tmp/csv; date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
for i in 0 1 2 3 4; do
  for b in $( [ $((i % 2)) = 0 ] && echo head u4b2 || echo u4b2 head ); do
    timeout 60 $D/mseloss_$b bench --device cuda --sizes 5242880,6291456,7340032,8388608,10485760,12582912,16777216,25165824 --dtypes bf16,f16 --reductions mean --op fused --runs 30 --csv /tmp/csv/run2_${b}_$i.csv >> /tmp/csv/run2_ab.txt 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
    timeout 60 $D/mseloss_$b bench --device cuda --sizes 2621440,3145728,3670016,4194304,5242880 --dtypes f32 --reductions mean --op fused --runs 30 --csv /tmp/csv/run2_${b}_f32_$i.csv >> /tmp/csv/run2_ab.txt 2>&1
    echo "bench $b f32 pass $i rc=$? $(date -u +%T)" >> $S
  done
done
date -u >> $S
tar -czf $OUT/run2_csv.tar.gz -C /tmp/csv .
cat $S
