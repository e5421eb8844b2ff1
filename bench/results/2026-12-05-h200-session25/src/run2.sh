#!/bin/bash
# Session 25, device run 2: test_cuda of the committed kernels (final2's), four shards in parallel,
# then memcheck on the spread-tile test.
D=$1; S=$OUT/run2_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
for i in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 500 $D/test_cuda > $OUT/run2_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/4 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/run2_test_cuda_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
wait
timeout 60 compute-sanitizer --tool memcheck --leak-check full $D/test_cuda --gtest_filter='*FromTwoToThe25*' > $OUT/run2_memcheck.log 2>&1
echo "memcheck rc=$?: $(grep -E 'PASSED|FAILED|ERROR SUMMARY|LEAK SUMMARY' $OUT/run2_memcheck.log | tr '\n' ' ') $(date -u +%T)" >> $S
date -u >> $S; cat $S
grep -E "FAILED|Failure" $OUT/run2_test_cuda_*.log | head -20
