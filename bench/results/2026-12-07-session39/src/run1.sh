#!/bin/bash
# Session 39, device run 1. PACK holds mseloss_head (HEAD's kernels), mseloss_new and
# test_cuda_new (the elementwise tiles negating grad_input's stored value for grad_target);
# both CLIs have the bench's new --grad-target.
#  1. test_cuda_new in 20 shards; beside them, compute-sanitizer on test_cuda_new:
#     racecheck of FusedPassesAroundTheLeanKernelsBoundsGiveTheCpuBits (the lean fused passes,
#     the check session 38 left to this test) and memcheck of the CPU = GPU sweep to N = 300001
#     (every elementwise mode, grad_target included, every dtype, the specials).
#  2. On a quiet GPU: benches of head and new in turn, four passes, backward and fused, mean and
#     none, bf16/fp16/fp32, 2^20-2^26, without and with --grad-target.
# Outputs are packed into $OUT/run1.tgz every 15 s and at the end (a run cut short keeps them).
D=$(realpath $1); W=/tmp/s39run1; rm -rf $W; mkdir -p $W; S=$W/run1_summary.txt; R=$OUT
pack() { tar czf $R/.run1.tgz -C $W . && mv $R/.run1.tgz $R/run1.tgz; }
( while sleep 15; do pack; done ) & PACKER=$!
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
F=CudaTest.FusedPassesAroundTheLeanKernelsBoundsGiveTheCpuBits
( t0=$SECONDS; timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 $D/test_cuda_new --gtest_filter=$F > $W/racecheck_fused.log 2>&1
  echo "racecheck $F rc=$? in $((SECONDS-t0)) s: $(grep -h 'RACECHECK SUMMARY' $W/racecheck_fused.log) $(grep -h '^\[  PASSED\|^\[  FAILED' $W/racecheck_fused.log)" >> $S ) &
( t0=$SECONDS; MSELOSS_TEST_MAX_N=300001 timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $D/test_cuda_new --gtest_filter=CudaTest.IdenticalBitsToTheCpuForEveryDtypeReductionAndSize > $W/memcheck_sweep.log 2>&1
  echo "memcheck sweep (N <= 300001) rc=$? in $((SECONDS-t0)) s: $(grep -h 'ERROR SUMMARY' $W/memcheck_sweep.log) $(grep -h '^\[  PASSED\|^\[  FAILED' $W/memcheck_sweep.log)" >> $S ) &
for j in $(seq 0 19); do
  ( GTEST_TOTAL_SHARDS=20 GTEST_SHARD_INDEX=$j timeout 240 $D/test_cuda_new > $W/test_new_$j.log 2>&1; echo "test_cuda_new shard $j/20 rc=$?" >> $S ) &
done; wait $(jobs -p | grep -v "^$PACKER$")
grep -h "^\[  PASSED\|^\[  FAILED" $W/test_new_*.log | sort | uniq -c >> $S
grep -hE "FAILED|Failure" $W/test_new_*.log $W/racecheck_fused.log $W/memcheck_sweep.log | head -20 >> $S
for i in 0 1 2 3; do
  for b in $( [ $((i % 2)) = 0 ] && echo head new || echo new head ); do
    for gt in "" "--grad-target"; do
      tag=$b$( [ -n "$gt" ] && echo gt )
      timeout 120 $D/mseloss_$b bench --device cuda --sizes 2^20,2^22,2^23,2^24,2^25,2^26 --dtypes bf16,f16,f32 --reductions mean,none --op backward,fused $gt --runs 50 --csv $W/run1_${tag}_$i.csv > /dev/null 2>&1
      echo "bench $tag pass $i rc=$? $(date -u +%T)" >> $S
    done
  done
done
date -u >> $S
kill $PACKER; wait $PACKER 2>/dev/null; pack
cat $S
