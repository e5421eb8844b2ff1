#!/bin/bash
# Session 14, device run 6: the ticket's fence in warp 0 only (the warp that
# stored the partials) against every thread fencing (d8f92be), interleaved;
# then the bit-exact, grid, concurrency and repeat tests on the new build.
B=build/hopper; NEW=$B/mseloss; HEAD=.exp/mseloss_d8f92be; S=$OUT/summary.txt
date -u > $S
for rep in 1 2; do
  for b in $HEAD $NEW; do
    echo "== $b rep$rep" >> $OUT/big.txt
    timeout 60 $b bench --device cuda --sizes 2^22,2^25,2^26 --dtypes f32,bf16 --reductions mean --op forward,fused --runs 30 2>/dev/null | grep -v "^#" | grep -v "^op " >> $OUT/big.txt
  done
done
echo "benches done" >> $S
( timeout 300 $B/tests/test_cuda --gtest_filter='*IdenticalBits*' > /tmp/t1.log 2>&1; echo "test_cuda (bit-exact sweep) rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t1.log | tr '\n' ' ')"; grep -E -A1 "^\[ +(OK|FAILED) +\]|Failure" /tmp/t1.log | head -20 ) > /tmp/a.txt 2>&1 &
( timeout 300 $B/tests/test_cuda --gtest_filter='*GridSize*:*ChunkCounts*:*FourConcurrent*:*RepeatedBackward*:*TenThousand*:*SixteenThreads*:*Hundred*' > /tmp/t2.log 2>&1; echo "test_cuda (grids, chunk counts, streams, repeats) rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t2.log | tr '\n' ' ')"; grep -E -A1 "^\[ +(OK|FAILED) +\]|Failure" /tmp/t2.log | head -30 ) > /tmp/b.txt 2>&1 &
wait; cat /tmp/a.txt /tmp/b.txt >> $S
cat $S
