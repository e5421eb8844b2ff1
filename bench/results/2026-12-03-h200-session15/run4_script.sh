#!/bin/bash
# Session 15, device run 4 (final tree): fp32 partials tagged (finisher
# collects them as they land, no fence), 16-bit and fp64 on the fenced
# ticket, the one-row kernel for N <= W; against HEAD 3da3ff8 (exp0),
# interleaved. Then the GPU suite, the back-to-back test against a build
# that accepts any tag (must fail), sanitizers, test_shard, pip + pytest.
set -o pipefail
B=build/hopper; NEW=$B/mseloss; HEAD=.exp/mseloss_exp0; S=$OUT/summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
( CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1; echo "pip rc=$?" > /tmp/pip.rc ) &
PIP=$!
for rep in 1 2; do
  for b in $HEAD $NEW; do
    echo "== $b rep$rep" >> $OUT/small.txt
    timeout 60 $b bench --device cuda --sizes 2^10,2^11,2^12,2^14,2^17,2^18,2^19,2^20 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>&1 | grep -v "^#" >> $OUT/small.txt
    echo "== $b rep$rep" >> $OUT/big.txt
    timeout 90 $b bench --device cuda --sizes 2^22,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>&1 | grep -v "^#" >> $OUT/big.txt
  done
done
echo "benches done $(date -u +%T)" >> $S
( timeout 120 .exp/test_cuda_broken_tags --gtest_filter='*BackToBack*' > /tmp/broken.log 2>&1; echo "accept-any-tag build, back-to-back test rc=$? (must fail): $(grep -E '^\[  (PASSED|FAILED)' /tmp/broken.log | tr '\n' ' ')"; grep -m2 -A3 "Failure" /tmp/broken.log ) >> $S 2>&1
wait $PIP; cat /tmp/pip.rc >> $S; tail -3 /tmp/pip.log >> $S
( timeout 420 $B/tests/test_cuda > /tmp/t.log 2>&1; echo "test_cuda rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t.log | tr '\n' ' ')"; grep -E -A1 "^\[ +(OK|FAILED) +\]|Failure" /tmp/t.log | head -80 > $OUT/test_cuda.txt ) > /tmp/a.txt 2>&1 &
( MSELOSS_TEST_MAX_N=140000 timeout 200 compute-sanitizer --tool memcheck --leak-check full $B/tests/test_cuda --gtest_filter='*ChunkCounts*:*GridSize*' > /tmp/mc.log 2>&1; echo "memcheck(chunk counts, grids <= 140000) rc=$?: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc.log | head -30
  MSELOSS_TEST_MAX_N=140000 timeout 150 compute-sanitizer --tool racecheck $B/tests/test_cuda --gtest_filter='*ChunkCounts*:*GridSize*' > /tmp/rc.log 2>&1; echo "racecheck(chunk counts, grids <= 140000) rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/rc.log | tr '\n' ' ')"; grep -m5 -A8 "rror\|azard" /tmp/rc.log | head -30 ) > /tmp/b.txt 2>&1 &
( MSELOSS_TEST_MAX_N=300001 timeout 200 compute-sanitizer --tool memcheck $B/tests/test_cuda --gtest_filter='*IdenticalBits*:*AStreamFirstUsed*' > /tmp/mc2.log 2>&1; echo "memcheck(identical bits <= 300001, stream first used in a capture) rc=$?: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc2.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc2.log | head -30
  timeout 120 $B/tests/test_shard > /tmp/sh.log 2>&1; echo "test_shard rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/sh.log | tr '\n' ' ')" ) > /tmp/c.txt 2>&1 &
( R=$PWD; cd /tmp && timeout 300 python3 -m pytest -q -p no:cacheprovider $R/tests/python > /tmp/pytest.log 2>&1; echo "pytest rc=$?: $(tail -1 /tmp/pytest.log)"; grep -E "FAILED|Error" /tmp/pytest.log | head -10 ) > /tmp/d.txt 2>&1 &
wait; cat /tmp/a.txt /tmp/b.txt /tmp/c.txt /tmp/d.txt >> $S
date -u >> $S
cat $S
