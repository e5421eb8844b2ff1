#!/bin/bash
# Session 16, device run 1: programmatic dependent launch (PDL) and a
# designated finishing block (exp1: the last block polls the tagged
# partials, no ticket), exp5: the same with tags for 16-bit inputs too.
# exp0 = the working tree (PDL available, ticket as before).
set -o pipefail
S=$OUT/summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
( timeout 200 build/hopper/tests/test_cuda --gtest_filter='*Overlapped*:*BackToBack*:*FourConcurrent*' > /tmp/t.log 2>&1; echo "test_cuda (overlapped, back-to-back, streams+graphs) rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t.log | tr '\n' ' ')"; grep -E -A1 "^\[ +(OK|FAILED) +\]" /tmp/t.log | head; grep -m3 -A4 Failure /tmp/t.log ) >> $S 2>&1
( timeout 120 .exp/test_cuda_exp8 --gtest_filter='*Overlapped*' > /tmp/b.log 2>&1; echo "no-wait build, overlapped test rc=$? (must fail): $(grep -E '^\[  (PASSED|FAILED)' /tmp/b.log | tr '\n' ' ')"; grep -c 'differs' /tmp/b.log; grep -m4 'differs' /tmp/b.log ) >> $S 2>&1
echo "tests done $(date -u +%T)" >> $S
for rep in 1 2; do
  for v in "0 --plain-launch" "0" "1 --plain-launch" "1" "5"; do
    set -- $v; b=.exp/mseloss_exp$1; shift
    echo "== exp$v rep$rep" >> $OUT/small.txt
    timeout 60 $b bench --device cuda --sizes 2^10,2^14,2^17,2^20 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 "$@" 2>&1 | grep -v "^#" >> $OUT/small.txt
    echo "== exp$v rep$rep" >> $OUT/big.txt
    timeout 90 $b bench --device cuda --sizes 2^22,2^25,2^26 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 "$@" 2>&1 | grep -v "^#" >> $OUT/big.txt
  done
done
echo "benches done $(date -u +%T)" >> $S
cat $S
