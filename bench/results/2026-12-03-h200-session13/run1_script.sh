#!/bin/bash
# Session 13, device run 1: where the fixed cost at 2^25 goes (MSELOSS_EXP:
# 1 no finish, 2 no ticket, 4 dynamic chunk counter, 8 fence by thread 0
# only), a lean one-chunk kernel at small N (16), a floor of lean one-block
# kernels, 32 a cluster kernel for K <= 16, ncu of bf16 vs fp16 at 2^26, the concurrent-streams test after
# its poison fix, and the variants' bits.
set -o pipefail
B=build/hopper; NEW=$B/mseloss; HEAD=.exp/mseloss_head; S=$OUT/summary.txt
date -u > $S
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
t0=$(date +%s)
.exp/floor > $OUT/floor.txt 2>&1
big() {  # label, binary, exp
  echo "== $1" >> $OUT/big.txt
  MSELOSS_EXP=$3 timeout 60 $2 bench --device cuda --sizes 2^25,2^26 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>/dev/null | grep -v "^#" | grep -v "^op " >> $OUT/big.txt
}
for rep in 1 2; do
  big "head rep$rep" $HEAD 0
  for e in 0 1 2 4 8 12; do big "exp$e rep$rep" $NEW $e; done
done
echo "big $(( $(date +%s)-t0 )) s" >> $S
t0=$(date +%s)
small() {
  echo "== $1" >> $OUT/small.txt
  MSELOSS_EXP=$3 timeout 60 $2 bench --device cuda --sizes 1024,8192,16384,2^15,2^16,2^17,2^20 --dtypes f32,bf16 --reductions mean --op forward,fused --runs 30 2>/dev/null | grep -v "^#" | grep -v "^op " >> $OUT/small.txt
}
for rep in 1 2; do
  small "head rep$rep" $HEAD 0
  for e in 0 16 48; do small "exp$e rep$rep" $NEW $e; done
done
echo "small $(( $(date +%s)-t0 )) s" >> $S
t0=$(date +%s)
for t in bf16 f16 f32; do
  timeout 60 ncu --cache-control none --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats \
    -k regex:mse_reduce --launch-skip 3 --launch-count 1 $HEAD bench --device cuda --sizes 2^26 --dtypes $t --reductions mean --runs 5 >> $OUT/ncu.txt 2>&1
done
echo "ncu $(( $(date +%s)-t0 )) s" >> $S
t0=$(date +%s)
timeout 120 $B/tests/test_cuda --gtest_filter='*FourConcurrent*:*AStreamFirst*:*SixteenThreads*' --gtest_repeat=3 > $OUT/test.log 2>&1
echo "concurrent tests rc=$? $(( $(date +%s)-t0 )) s: $(grep -cE '^\[  PASSED' $OUT/test.log) passed repeats, $(grep -cE '^\[  FAILED  \] [0-9]' $OUT/test.log) failed" >> $S
t0=$(date +%s)
MSELOSS_EXP=60 timeout 200 $B/tests/test_cuda --gtest_filter='*IdenticalBits*:*GridSize*:*Misaligned*:*TenThousand*:*HundredRepeated*' >> $OUT/test.log 2>&1
echo "exp60 tests rc=$? $(( $(date +%s)-t0 )) s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/test.log | tail -3 | tr '\n' ' ')" >> $S
cat $S
