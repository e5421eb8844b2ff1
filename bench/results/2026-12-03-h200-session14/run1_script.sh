#!/bin/bash
# Session 14, device run 1: the cp.async ring (MSELOSS_EXP=1: 6 stages, 4
# blocks/SM; 2: 8 stages, 3 blocks/SM) against the register rows (0),
# interleaved; then in parallel: the whole GPU suite on the committed path
# (EXP=0), the bit-exact tests and memcheck on the ring, pip + pytest.
set -o pipefail
B=build/hopper; S=$OUT/summary.txt
date -u > $S
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
for rep in 1 2; do
  for e in 0 2 1; do
    echo "== exp$e rep$rep" >> $OUT/big.txt
    MSELOSS_EXP=$e timeout 90 $B/mseloss bench --device cuda --sizes 2^22,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>/dev/null | grep -v "^#" | grep -v "^op " >> $OUT/big.txt
  done
done
echo "benches done $(date -u)" >> $S
( timeout 400 $B/tests/test_cuda > /tmp/t0.log 2>&1; echo "test_cuda exp0 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t0.log | tr '\n' ' ')"; grep -E "^\[ +(OK|FAILED) +\]|Failure|Expected|Which is" /tmp/t0.log | head -60 > $OUT/test_cuda_exp0.txt ) > /tmp/a.txt 2>&1 &
( MSELOSS_EXP=2 timeout 400 $B/tests/test_cuda --gtest_filter='*IdenticalBits*:*ChunkCounts*:*GridSize*:*HugeN*:*HalfGradient*:*FourConcurrent*:*Hundred*:*RepeatedBackward*' > /tmp/t2.log 2>&1; echo "test_cuda exp2 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t2.log | tr '\n' ' ')"; grep -E "^\[ +(OK|FAILED) +\]|Failure|Expected|Which is" /tmp/t2.log | head -40 > $OUT/test_cuda_exp2.txt ) > /tmp/b.txt 2>&1 &
( MSELOSS_EXP=1 timeout 300 $B/tests/test_cuda --gtest_filter='*IdenticalBits*:*GridSize*:*HugeN*' > /tmp/t1.log 2>&1; echo "test_cuda exp1 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t1.log | tr '\n' ' ')"; grep -E "^\[ +(OK|FAILED) +\]|Failure|Expected|Which is" /tmp/t1.log | head -40 > $OUT/test_cuda_exp1.txt
  MSELOSS_EXP=2 MSELOSS_TEST_MAX_N=300001 timeout 150 compute-sanitizer --tool memcheck $B/tests/test_cuda --gtest_filter='*IdenticalBits*:*GridSize*' > /tmp/mc.log 2>&1; echo "memcheck exp2 (<= 300001) rc=$?: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc.log | head -30 ) > /tmp/c.txt 2>&1 &
( CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1; echo "pip rc=$?"; tail -3 /tmp/pip.log; R=$PWD; cd /tmp && timeout 300 python3 -m pytest -q -p no:cacheprovider $R/tests/python > /tmp/pytest.log 2>&1; echo "pytest rc=$?: $(tail -1 /tmp/pytest.log)"; grep -E "FAILED|Error" /tmp/pytest.log | head -10 ) > /tmp/d.txt 2>&1 &
wait; cat /tmp/a.txt /tmp/b.txt /tmp/c.txt /tmp/d.txt >> $S
date -u >> $S
cat $S
