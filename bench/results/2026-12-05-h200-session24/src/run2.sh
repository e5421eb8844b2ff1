#!/bin/bash
# Session 24, device run 2: the training step's traffic (triad.cu), then test_cuda on the spread-tile
# build (four shards in parallel) with memcheck of the new test beside them.
D=$(dirname $0); S=$OUT/run2_summary.txt
date -u > $S
timeout 60 $D/triad 51 > $OUT/run2_triad.txt 2>&1; echo "triad rc=$? $(date -u +%T)" >> $S
for i in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 470 $D/test_cuda > $OUT/run2_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/4 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/run2_test_cuda_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
( timeout 470 compute-sanitizer --tool memcheck --leak-check full $D/test_cuda --gtest_filter='*ElementwiseModesFromTwoToThe25*' > $OUT/run2_memcheck.log 2>&1
  echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|PASSED|FAILED' $OUT/run2_memcheck.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
wait
date -u >> $S; cat $S; cat $OUT/run2_triad.txt
grep -E "FAILED|Failure" $OUT/run2_test_cuda_*.log | head -20
