#!/usr/bin/env bash
# Session 43's CPU measurement: base (96596f6, before) and head (the CPU work
# of this session), in turn, three rounds, on this machine's 2 cores.
#   bash src/run.sh BASE_BIN HEAD_BIN OUTDIR
# Each bench call times the read probe and the copy in the same run; forward
# rows also pair the call with the probe (x_probe_paired).
set -euo pipefail
base=$1 head=$2 out=$3
mkdir -p "$out"
for r in 1 2 3; do
  for b in base head; do
    bin=$base; [ $b = head ] && bin=$head
    for op in forward backward fused; do
      "$bin" bench --device cpu --sizes 2^16,2^20,2^24 --dtypes f32,f64,f16,bf16 --reductions mean,none \
        --op $op --runs 20 --csv "$out/r${r}_${b}_${op}.csv" > "$out/r${r}_${b}_${op}.txt" 2>/dev/null
    done
    # Small N: where the thread count matters.
    "$bin" bench --device cpu --sizes 2^10..2^19 --dtypes f32,f16 --reductions mean --op forward \
      --runs 100 --csv "$out/r${r}_${b}_small.csv" > "$out/r${r}_${b}_small.txt" 2>/dev/null
  done
done
