#!/bin/bash
# Session 13, device run 2: the kernels of this session (branch-free finish,
# dealt chunks for the fused pass, one block per chunk up to 16 chunks)
# against the committed build (head), large and small N, interleaved; then
# the whole GPU suite, memcheck and racecheck of the new paths, and the
# Python package and suite, in parallel.
set -o pipefail
B=build/hopper; NEW=$B/mseloss; HEAD=.exp/mseloss_head; S=$OUT/summary.txt
date -u > $S
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
t0=$(date +%s)
for rep in 1 2; do
  for b in $HEAD $NEW; do
    echo "== $b rep$rep" >> $OUT/big.txt
    timeout 60 $b bench --device cuda --sizes 2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>/dev/null | grep -v "^#" | grep -v "^op " >> $OUT/big.txt
    echo "== $b rep$rep" >> $OUT/small.txt
    timeout 60 $b bench --device cuda --sizes 1024,8192,16384,2^15,2^16,2^17,2^18,2^20 --dtypes f32,bf16 --reductions mean --op forward,fused --runs 30 2>/dev/null | grep -v "^#" | grep -v "^op " >> $OUT/small.txt
  done
done
echo "benches $(( $(date +%s)-t0 )) s" >> $S
( t0=$(date +%s); timeout 430 $B/tests/test_cuda > /tmp/test_cuda.log 2>&1; echo "test_cuda rc=$? in $(( $(date +%s)-t0 )) s: $(grep -E '^\[  (PASSED|FAILED)' /tmp/test_cuda.log | tr '\n' ' ')"; grep -E "^\[ +(OK|FAILED) +\]|Failure|Expected|Which is" /tmp/test_cuda.log | head -60 > $OUT/test_cuda.txt ) > /tmp/gpu.txt 2>&1 &
( t0=$(date +%s); MSELOSS_TEST_MAX_N=140000 timeout 200 compute-sanitizer --tool memcheck --leak-check full $B/tests/test_cuda --gtest_filter='*ChunkCounts*:*GridSize*' > /tmp/mc.log 2>&1; echo "memcheck(chunk counts, grids) rc=$? in $(( $(date +%s)-t0 )) s: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc.log | head -30
  t0=$(date +%s); MSELOSS_TEST_MAX_N=70000 timeout 120 compute-sanitizer --tool racecheck $B/tests/test_cuda --gtest_filter='*ChunkCounts*' > /tmp/rc.log 2>&1; echo "racecheck(chunk counts) rc=$? in $(( $(date +%s)-t0 )) s: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/rc.log | tr '\n' ' ')"; grep -m5 -A8 "rror\|azard" /tmp/rc.log | head -30
  t0=$(date +%s); MSELOSS_TEST_MAX_N=300001 timeout 150 compute-sanitizer --tool memcheck $B/tests/test_cuda --gtest_filter='*IdenticalBits*' > /tmp/mc2.log 2>&1; echo "memcheck(identical bits <= 300001) rc=$? in $(( $(date +%s)-t0 )) s: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc2.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc2.log | head -30 ) > /tmp/mc.txt 2>&1 &
( t0=$(date +%s); CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1; echo "pip rc=$? in $(( $(date +%s)-t0 )) s"; tail -3 /tmp/pip.log; R=$PWD; cd /tmp && t0=$(date +%s) && timeout 300 python3 -m pytest -q -p no:cacheprovider $R/tests/python > /tmp/pytest.log 2>&1; echo "pytest rc=$? in $(( $(date +%s)-t0 )) s: $(tail -1 /tmp/pytest.log)"; grep -E "FAILED|Error" /tmp/pytest.log | head -10 ) > /tmp/py.txt 2>&1 &
wait; cat /tmp/gpu.txt /tmp/mc.txt /tmp/py.txt >> $S
cat $S
