#!/bin/bash
# Session 37: compute-sanitizer on the commit's lean 16-bit fused pass at chunk counts it did not
# take before (more than 5 per SM): 661 chunks (5 x 132 + 1, last chunk cut short), 2049
# (2^25 + 5) and 4096 (the most, last chunk cut short), bf16 and fp16, mean and sum, default grid
# and a forced grid of 7 blocks (hundreds of chunks each; racecheck on that grid only). One
# timed run per point.
# Usage: sanitize.sh MSELOSS (the binary). Writes $OUT/sanitize_*.log and $OUT/sanitize_summary.txt.
B=$1; S=$OUT/sanitize_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S; md5sum $B >> $S
SIZES=10817539,33554437,67096579
run() { # tool, grid, extra
  local tool=$1 grid=$2; shift 2
  local g=""; [ $grid != default ] && g="--grid $grid"
  timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 "$@" $B bench --device cuda \
    --sizes $SIZES --dtypes bf16,f16 --reductions mean,sum --op fused --runs 1 $g \
    > $OUT/sanitize_${tool}_$grid.log 2>&1
  echo "$tool grid=$grid rc=$? $(date -u +%T) $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' $OUT/sanitize_${tool}_$grid.log)" >> $S
}
run memcheck default --leak-check full
run memcheck 7 --leak-check full
run racecheck 7

date -u >> $S; cat $S
