#!/bin/bash
# Session 22, device run 16 (final): mse_stream_kernel against HEAD (7319382) in the bench, forward mean,
# two passes each in turn; the experiment harness on the final library (its loss against the host tree,
# and the same-run standalone kernels); then test_cuda on the final build, four shards in parallel.
S=$OUT/run16_summary.txt; H=.exp/v1/build/hopper/mseloss; M=build/hopper/mseloss
date -u > $S
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
for i in 1 2; do
  for b in $H $M; do
    echo "== $b pass $i $(date -u +%T)" >> $OUT/run16_ab.txt
    timeout 120 $b bench --device cuda --sizes 2^20,2^22,2^24,2^25,2^26,2^27,2^28 --dtypes f32,bf16,f16 --reductions mean --op forward --runs 50 >> $OUT/run16_ab.txt 2>&1
    echo "bench $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
(cd .exp/s22 && QUICK=1 SPIN_NS=50000 timeout 120 ./lib_final > $OUT/run16_harness.txt 2>&1; echo "harness rc=$? $(date -u +%T)" >> $S)
for i in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 330 build/hopper/tests/test_cuda > $OUT/run16_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/4 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/run16_test_cuda_$i.log | tr '\n' ' ')" >> $S ) &
done
wait
date -u >> $S
cat $S
grep -E "FAILED|Failure" $OUT/run16_test_cuda_*.log | head -20
grep -E "WRONG|library gives" $OUT/run16_harness.txt | head -8
