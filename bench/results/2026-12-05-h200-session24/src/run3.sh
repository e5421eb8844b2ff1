#!/bin/bash
# Session 24, device run 3: the same harness for all builds (head2 = HEAD 40731de's kernels with this
# session's bench), against the spread tiles for every elementwise mode (final) and for the `none`
# loss and the fused `none` pass only (final2); orders rotate; then HEAD's own CLI against head2
# (the bench change alone).
D=$(dirname $0); S=$OUT/run3_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
i=0
for order in "head2 final final2" "final2 final head2" "final head2 final2" "head2 final2 final" "head head2" "head2 head"; do
  i=$((i+1))
  for b in $order; do
    echo "== $b pass $i $(date -u +%T)" >> $OUT/run3_ab.txt
    timeout 100 $D/mseloss_$b bench --device cuda --sizes 2^22,2^24,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions none,mean --op forward,backward,fused --runs 30 --csv $OUT/run3_${b}_$i.csv >> $OUT/run3_ab.txt 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
date -u >> $S; cat $S
# then test_cuda on the committed build (final2), four shards in parallel
for i in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 420 $D/test_cuda > $OUT/run3_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/4 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/run3_test_cuda_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
wait
date -u >> $S; tail -5 $S
grep -E "FAILED|Failure" $OUT/run3_test_cuda_*.log | head -20
