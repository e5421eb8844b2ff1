#!/bin/bash
# Session 17, device run 5: the final dispatch (sliced chunks, 4 blocks per
# chunk up to 8 chunks, 2 from 9 to 16; build/hopper) against v2 (commit
# 7d17c93), interleaved, twice; then the tests that cover the sliced kernel.
set -o pipefail
B=build/hopper; NEW=$B/mseloss; S=$OUT/summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
for rep in 1 2; do
  for b in .exp/mseloss_v2 $NEW; do
    echo "== $b rep$rep" >> $OUT/small.txt
    timeout 40 $b bench --device cuda --sizes 2^12,2^14,2^15,2^16,2^17,2^18,2^19 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>&1 | grep -v "^#" >> $OUT/small.txt
  done
done
echo "benches done $(date -u +%T)" >> $S
( MSELOSS_TEST_MAX_N=300001 timeout 150 $B/tests/test_cuda --gtest_filter='*IdenticalBits*:*ChunkCounts*:*Overlapped*' > /tmp/t1.log 2>&1; echo "test_cuda (identical bits <= 300001, chunk counts, overlapped) rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t1.log | tr '\n' ' ')"; grep -E "^\[ +(OK|FAILED) +\]" /tmp/t1.log; grep -m3 -A5 Failure /tmp/t1.log ) > /tmp/a.txt 2>&1 &
( timeout 150 $B/tests/test_cuda --gtest_filter='*BackToBack*:*FourConcurrent*:*SixteenThreads*:*GridSize*' > /tmp/t2.log 2>&1; echo "test_cuda (back-to-back, streams, threads, grids) rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t2.log | tr '\n' ' ')"; grep -E "^\[ +(OK|FAILED) +\]" /tmp/t2.log; grep -m3 -A5 Failure /tmp/t2.log ) > /tmp/b.txt 2>&1 &
( MSELOSS_TEST_MAX_N=140000 timeout 150 compute-sanitizer --tool memcheck $B/tests/test_cuda --gtest_filter='*ChunkCounts*' > /tmp/mc.log 2>&1; echo "memcheck(chunk counts <= 140000) rc=$?: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc.log | head -20 ) > /tmp/c.txt 2>&1 &
wait; cat /tmp/a.txt /tmp/b.txt /tmp/c.txt >> $S
date -u >> $S
cat $S
