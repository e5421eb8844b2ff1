#!/bin/bash
# Session 17, device run 4: the sliced-chunk kernel (build/hopper: 2 to 16
# chunks of fp32/16-bit inputs, 2 blocks of 128 threads per chunk) against
# v2 (commit 7d17c93, .exp/mseloss_v2)
# and exp11 (4 blocks of 64 threads per chunk), interleaved, 3 passes. Then
# the GPU suite on the candidate (4 shards) with the sanitizers, the sliced
# tests on exp11, pip + pytest (test_shard: not carried; shards do not take the sliced kernel); then torch_bench at the middle
# sizes on a quiet GPU.
set -o pipefail
B=build/hopper; NEW=$B/mseloss; S=$OUT/summary.txt; R=$PWD
date -u > $S; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
for rep in 1 2 3; do
  for b in .exp/mseloss_v2 $NEW .exp/mseloss_exp11; do
    echo "== $b rep$rep" >> $OUT/small.txt
    timeout 60 $b bench --device cuda --sizes 2^10,2^12,2^13,2^14,2^15,2^16,2^17,2^18,2^19,2^20 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>&1 | grep -v "^#" >> $OUT/small.txt
  done
done
echo "benches done $(date -u +%T)" >> $S
for i in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 400 $B/tests/test_cuda > /tmp/t$i.log 2>&1; echo "test_cuda shard $i/4 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t$i.log | tr '\n' ' ')"; grep -E "^\[ +(OK|FAILED) +\]" /tmp/t$i.log; grep -m3 -A5 Failure /tmp/t$i.log ) > /tmp/a$i.txt 2>&1 &
done
( MSELOSS_TEST_MAX_N=140000 timeout 300 compute-sanitizer --tool memcheck --leak-check full $B/tests/test_cuda --gtest_filter='*ChunkCounts*:*GridSize*' > /tmp/mc.log 2>&1; echo "memcheck(chunk counts, grids <= 140000) rc=$?: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc.log | head -30
  MSELOSS_TEST_MAX_N=140000 timeout 200 compute-sanitizer --tool racecheck $B/tests/test_cuda --gtest_filter='*ChunkCounts*:*GridSize*' > /tmp/rc.log 2>&1; echo "racecheck(chunk counts, grids <= 140000) rc=$?: $(grep -E 'RACECHECK SUMMARY|^\[  (PASSED|FAILED)' /tmp/rc.log | tr '\n' ' ')"; grep -m5 -A8 "rror\|azard" /tmp/rc.log | head -30 ) > /tmp/b.txt 2>&1 &
( MSELOSS_TEST_MAX_N=300001 timeout 330 compute-sanitizer --tool memcheck $B/tests/test_cuda --gtest_filter='*IdenticalBits*:*AStreamFirstUsed*:*Overlapped*' > /tmp/mc2.log 2>&1; echo "memcheck(identical bits <= 300001, stream first used in a capture, overlapped launch) rc=$?: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc2.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc2.log | head -30
  ) > /tmp/c.txt 2>&1 &
( MSELOSS_TEST_MAX_N=300001 timeout 300 .exp/test_cuda_exp11 --gtest_filter='*IdenticalBits*:*ChunkCounts*:*Overlapped*:*BackToBack*:*FourConcurrent*:*TenThousand*' > /tmp/e.log 2>&1; echo "test_cuda_exp11 (sliced tests) rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/e.log | tr '\n' ' ')"; grep -m3 -A5 Failure /tmp/e.log ) > /tmp/e.txt 2>&1 &
( CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1; echo "pip rc=$?"; tail -3 /tmp/pip.log
  cd /tmp && timeout 250 python3 -m pytest -q -p no:cacheprovider $R/tests/python > /tmp/pytest.log 2>&1; echo "pytest rc=$?: $(tail -1 /tmp/pytest.log)"; grep -E "FAILED|Error" /tmp/pytest.log | head -10 ) > /tmp/d.txt 2>&1 &
wait; cat /tmp/a0.txt /tmp/a1.txt /tmp/a2.txt /tmp/a3.txt > $OUT/test_cuda.txt; grep -h "^test_cuda\|Failure" $OUT/test_cuda.txt >> $S; cat /tmp/b.txt /tmp/c.txt /tmp/e.txt /tmp/d.txt >> $S
echo "tests done $(date -u +%T)" >> $S
cd /tmp; PYTHONUNBUFFERED=1 timeout 100 python3 $R/bench/torch_bench.py --sizes 2^14,2^15,2^16,2^17,2^18,2^19 --dtypes float32,bfloat16,float16 --runs 30 --csv $OUT/torch_bench.csv > $OUT/torch_bench.log 2>&1; echo "torch_bench rc=$? $(date -u +%T)" >> $S
cat $S
