#!/bin/bash
# Session 21, device run 1: where the forward's last microseconds go (trace build), and the day's baseline.
S=$OUT/run1_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
timeout 120 .exp/s21/trace 30 > $OUT/run1_trace.txt 2>&1; echo "trace rc=$?" >> $S
timeout 120 .exp/s21/trace 30 > $OUT/run1_trace_b.txt 2>&1; echo "trace_b rc=$?" >> $S
timeout 90 build/hopper/mseloss bench --device cuda --sizes 2^24,2^25,2^26 --dtypes f32,bf16,f16 --reductions mean --op forward --runs 50 --csv $OUT/run1_big.csv > $OUT/run1_big.txt 2>&1; echo "big rc=$?" >> $S
cat $S
cat $OUT/run1_trace.txt $OUT/run1_trace_b.txt | grep -v "per rep"
grep -v "^#" $OUT/run1_big.txt | cut -c1-200
