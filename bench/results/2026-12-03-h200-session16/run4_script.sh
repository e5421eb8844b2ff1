#!/bin/bash
# Session 16, device run 4 (final tree, cubin identical to run 3's): the GPU
# tests run 3's 430 s limit cut off, pip + pytest, then torch_bench alone.
set -o pipefail
B=build/hopper; S=$OUT/summary.txt; R=$PWD
date -u > $S; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
( timeout 300 $B/tests/test_cuda --gtest_filter='*ComparisonAlgorithms*:*HostPointers*:*SixteenThreads*:*TenThousand*:*ScaleGradient*:*AStreamFirstUsed*' > /tmp/t.log 2>&1; echo "test_cuda (the tests run 3 did not reach) rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t.log | tr '\n' ' ')"; grep -E "^\[ +(OK|FAILED) +\]" /tmp/t.log; grep -m3 -A5 Failure /tmp/t.log ) > /tmp/a.txt 2>&1 &
( CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1; echo "pip rc=$?"; tail -3 /tmp/pip.log
  cd /tmp && timeout 200 python3 -m pytest -q -p no:cacheprovider $R/tests/python > /tmp/pytest.log 2>&1; echo "pytest rc=$?: $(tail -1 /tmp/pytest.log)"; grep -E "FAILED|Error" /tmp/pytest.log | head -10 ) > /tmp/d.txt 2>&1 &
wait; cat /tmp/a.txt /tmp/d.txt >> $S
echo "tests done $(date -u +%T)" >> $S
cd /tmp; PYTHONUNBUFFERED=1 timeout 150 python3 $R/bench/torch_bench.py --sizes 2^10,2^20,2^25 --dtypes float32,bfloat16,float16 --runs 30 --csv $OUT/torch_bench.csv --plot $OUT/torch_bench.png > $OUT/torch_bench.log 2>&1; echo "torch_bench rc=$? $(date -u +%T)" >> $S
cat $S
