#!/bin/bash
# Session 16, device run 3: posted partials (8-byte slots emptied by the
# finisher; one round of loads for K = 4096) and the fixed finisher in every
# single-wave kernel (build/hopper) against run 2's candidate (tagged) and
# against exp2 (the fp32 fused single-wave kernel on the ticket). Then the
# full table, and the GPU suite, sanitizers, pytest, test_shard, and the
# back-to-back test on a build that takes empty slots as posted (must fail).
set -o pipefail
B=build/hopper; NEW=$B/mseloss; S=$OUT/summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
( CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1; echo "pip rc=$?" > /tmp/pip.rc ) &
PIP=$!
for rep in 1 2; do
  for b in .exp/mseloss_tagged $NEW .exp/mseloss_exp2; do
    echo "== $b rep$rep" >> $OUT/small.txt
    timeout 60 $b bench --device cuda --sizes 2^10,2^17,2^18,2^19,2^20 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>&1 | grep -v "^#" >> $OUT/small.txt
    echo "== $b rep$rep" >> $OUT/big.txt
    timeout 90 $b bench --device cuda --sizes 2^22,2^25,2^26 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>&1 | grep -v "^#" >> $OUT/big.txt
  done
done
echo "A/B benches done $(date -u +%T)" >> $S
timeout 150 $NEW bench --device cuda --sizes 2^10,2^12,2^14,2^16,2^18,2^20,2^22,2^24,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions mean,sum,none --op forward,backward,fused --runs 30 --csv $OUT/full.csv > $OUT/full.txt 2>&1; echo "full table rc=$? $(date -u +%T)" >> $S
timeout 60 $NEW bench --device cuda --sizes 2^10,2^20,2^25 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 --plain-launch > $OUT/full_plain.txt 2>&1; echo "plain rc=$?" >> $S
( timeout 430 $B/tests/test_cuda > /tmp/t.log 2>&1; echo "test_cuda rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t.log | tr '\n' ' ')"; grep -E "^\[ +(OK|FAILED) +\]|Failure" /tmp/t.log | head -40 > $OUT/test_cuda.txt; grep -m3 -A5 Failure /tmp/t.log ) > /tmp/a.txt 2>&1 &
( MSELOSS_TEST_MAX_N=140000 timeout 200 compute-sanitizer --tool memcheck --leak-check full $B/tests/test_cuda --gtest_filter='*ChunkCounts*:*GridSize*' > /tmp/mc.log 2>&1; echo "memcheck(chunk counts, grids <= 140000) rc=$?: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc.log | head -30
  MSELOSS_TEST_MAX_N=140000 timeout 150 compute-sanitizer --tool racecheck $B/tests/test_cuda --gtest_filter='*ChunkCounts*:*GridSize*' > /tmp/rc.log 2>&1; echo "racecheck(chunk counts, grids <= 140000) rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/rc.log | tr '\n' ' ')"; grep -m5 -A8 "rror\|azard" /tmp/rc.log | head -30 ) > /tmp/b.txt 2>&1 &
( MSELOSS_TEST_MAX_N=300001 timeout 220 compute-sanitizer --tool memcheck $B/tests/test_cuda --gtest_filter='*IdenticalBits*:*AStreamFirstUsed*:*Overlapped*' > /tmp/mc2.log 2>&1; echo "memcheck(identical bits <= 300001, stream first used in a capture, overlapped launch) rc=$?: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc2.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc2.log | head -30
  timeout 120 $B/tests/test_shard > /tmp/sh.log 2>&1; echo "test_shard rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/sh.log | tr '\n' ' ')" ) > /tmp/c.txt 2>&1 &
( timeout 250 .exp/test_cuda_exp16 --gtest_filter='*BackToBack*' > /tmp/br.log 2>&1; echo "empty-slots-taken-as-posted build, back-to-back test rc=$? (must fail): $(grep -E '^\[  (PASSED|FAILED)' /tmp/br.log | tr '\n' ' ')"; grep -m2 -A3 Failure /tmp/br.log
  wait $PIP; cat /tmp/pip.rc; tail -3 /tmp/pip.log
  R=$PWD; cd /tmp && timeout 200 python3 -m pytest -q -p no:cacheprovider $R/tests/python > /tmp/pytest.log 2>&1; echo "pytest rc=$?: $(tail -1 /tmp/pytest.log)"; grep -E "FAILED|Error" /tmp/pytest.log | head -10 ) > /tmp/d.txt 2>&1 &
wait; cat /tmp/a.txt /tmp/b.txt /tmp/c.txt /tmp/d.txt >> $S
date -u >> $S
cat $S
