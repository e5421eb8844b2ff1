#!/bin/bash
# Session 17, device run 1: exp2 = posted partials for every 16-bit reduce
# kernel (persistent forward and the fused ring too; ticket kept), exp3 =
# K = 2..16 chunks routed from the cluster kernel to the single-wave kernel,
# and 2- and 4-row forms of the one-block kernel. base = build/hopper (HEAD).
# Interleaved, 3 passes. Then the bit-exact tests on exp2 and exp3 builds.
set -o pipefail
S=$OUT/summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
for rep in 1 2 3; do
  for b in build/hopper/mseloss .exp/mseloss_exp2 .exp/mseloss_exp3; do
    echo "== $b rep$rep" >> $OUT/small.txt
    timeout 60 $b bench --device cuda --sizes 2^10,2^12,2^13,2^14,2^15,2^16,2^17,2^18,2^19 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>&1 | grep -v "^#" >> $OUT/small.txt
    echo "== $b rep$rep" >> $OUT/big.txt
    timeout 90 $b bench --device cuda --sizes 2^22,2^24,2^25,2^26 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>&1 | grep -v "^#" >> $OUT/big.txt
  done
done
echo "benches done $(date -u +%T)" >> $S
for v in 2 3; do
  ( MSELOSS_TEST_MAX_N=300001 timeout 200 .exp/test_cuda_exp$v --gtest_filter='*IdenticalBits*:*ChunkCounts*:*BackToBack*:*Overlapped*:*FourConcurrent*' > /tmp/t$v.log 2>&1; echo "test_cuda_exp$v rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t$v.log | tr '\n' ' ')"; grep -m3 -A5 Failure /tmp/t$v.log ) > /tmp/s$v.txt 2>&1 &
done
wait; cat /tmp/s2.txt /tmp/s3.txt >> $S
date -u >> $S
cat $S
