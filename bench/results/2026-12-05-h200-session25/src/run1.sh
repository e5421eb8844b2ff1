#!/bin/bash
# Session 25, device run 1: six builds under rotating orders, six passes (bench/results/.../README.md
# names the builds). head/head2/final/final2 as session 24's run3.sh; head3/final3 take the bench
# that times every copy size before the operations.
D=$1; S=$OUT/run1_summary.txt
mkdir -p /tmp/csv; date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
builds=(head2 final2 head3 final3 final head)
for i in 0 1 2 3 4 5; do
  for j in 0 1 2 3 4 5; do
    b=${builds[$(( (i + j) % 6 ))]}
    echo "== $b pass $i $(date -u +%T)" >> $OUT/run1_ab.txt
    timeout 100 $D/mseloss_$b bench --device cuda --sizes 2^22,2^24,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions none,mean --op forward,backward,fused --runs 30 --csv /tmp/csv/run1_${b}_$i.csv >> $OUT/run1_ab.txt 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
date -u >> $S; cat $S
tar -czf $OUT/run1_csv.tar.gz -C /tmp/csv .
