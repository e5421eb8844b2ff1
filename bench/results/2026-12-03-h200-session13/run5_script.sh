#!/bin/bash
# Session 13, device run 5: the final kernels (partials in transposed slots
# for a coalesced finish, workspace only where used): large and small N,
# then the whole GPU suite.
B=build/hopper; S=$OUT/summary.txt
date -u > $S
for rep in 1 2; do
  echo "== final rep$rep" >> $OUT/big.txt
  timeout 60 $B/mseloss bench --device cuda --sizes 2^20,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>/dev/null | grep -v "^#" | grep -v "^op " >> $OUT/big.txt
done
timeout 60 $B/mseloss bench --device cuda --sizes 1024,8192,16384,2^15,2^17,2^20 --dtypes f32,bf16 --reductions mean --op forward,fused --runs 30 2>/dev/null | grep -v "^#" > $OUT/small.txt
timeout 380 $B/tests/test_cuda > /tmp/test_cuda.log 2>&1; echo "test_cuda rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/test_cuda.log | tr '\n' ' ')" >> $S
grep -E "^\[ +(OK|FAILED) +\]|Failure|Expected|Which is" /tmp/test_cuda.log | head -60 > $OUT/test_cuda.txt
cat $S
