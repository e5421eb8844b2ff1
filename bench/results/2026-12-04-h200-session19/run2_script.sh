#!/bin/bash
# Session 19, device run 2: is run 1's fused pass (fp32 2^25: 111 us, 0.89
# of a copy, against 98-100 us in sessions 14-17) real? HEAD (feb04cb,
# .exp/mseloss_head) against the candidate (build/hopper), interleaved:
# pass 1 while pip compiles the package on the host's CPUs (as in run 1),
# passes 2-3 on a quiet machine. Then the candidate's forward with the paired
# probe columns, and torch_bench (2^10, 2^20, 2^25) on a quiet GPU.
set -o pipefail
B=build/hopper; M=$B/mseloss; H=.exp/mseloss_head; S=$OUT/summary.txt; R=$PWD; W=/tmp/run2; mkdir -p $W
date -u > $S; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
( CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1; echo "pip rc=$? $(date -u +%T)" > /tmp/pip.rc ) &
PIP=$!
ab() {
  for b in $H $M $H $M; do
    echo "== $b pass $1 $(date -u +%T)" >> $W/ab.txt
    timeout 60 $b bench --device cuda --sizes 2^25,2^26 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 50 2>&1 | grep -v "^#" >> $W/ab.txt
  done
}
ab 1-during-pip
echo "pass 1 done $(date -u +%T)" >> $S
wait $PIP; cat /tmp/pip.rc >> $S
ab 2-quiet; ab 3-quiet
echo "A/B done $(date -u +%T)" >> $S
timeout 90 $M bench --device cuda --sizes 2^24,2^25,2^26 --dtypes f32,bf16,f16 --reductions mean,sum --op forward --runs 50 --csv $W/paired.csv > $W/paired.txt 2>&1; echo "paired rc=$?" >> $S
cd /tmp; PYTHONUNBUFFERED=1 timeout 150 python3 $R/bench/torch_bench.py --sizes 2^10,2^20,2^25 --dtypes float32,bfloat16,float16 --runs 30 --csv $W/torch_bench.csv --plot $W/torch_bench.png > $W/torch_bench.log 2>&1; echo "torch_bench rc=$? $(date -u +%T)" >> $S
cp $S $W/; tar -C $W -czf $OUT/run2.tgz .
cat $S
