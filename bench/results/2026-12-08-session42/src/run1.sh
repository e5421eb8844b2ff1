#!/bin/bash
# Session 42, device run 1: session 41's run 4 (never ran there), plus the new specials test.
#  1. head (32efc82) and bitm (HEAD's kernels), backward mean and sum, fp16 (changed kernels)
#     and bf16 (identical kernels: the A/A control), 2^20-2^24, without and with --grad-target,
#     PASSES passes (default 4) in ABBA order, 200 runs a point.
#  2. test_cuda_spec (HEAD's library + this session's test) in 20 shards; memcheck of the
#     CPU = GPU sweep to N = 300001 beside them.
#  3. The new test on test_cuda_mutant, whose negated_half_vector flips the sign of the
#     canonical NaN too: it must fail (a test that cannot fail proves nothing).
D=$(realpath $1); W=/tmp/s42run1; rm -rf $W; mkdir -p $W; S=$W/run1_summary.txt; R=$OUT
pack() { tar czf $R/.run1.tgz -C $W . && mv $R/.run1.tgz $R/run1.tgz; }
( while sleep 15; do pack; done ) & PACKER=$!
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
for i in $(seq 0 $((${PASSES:-4} - 1))); do
  case $((i % 4)) in 0|3) order="head bitm";; *) order="bitm head";; esac
  for b in $order; do
    for gt in "" "--grad-target"; do
      tag=$b$( [ -n "$gt" ] && echo gt )
      timeout 120 $D/mseloss_$b bench --device cuda --sizes 2^20,2^21,2^22,2^23,2^24 --dtypes bf16,f16 --reductions mean,sum --op backward $gt --runs 200 --csv $W/run1_${tag}_$i.csv > /dev/null 2>&1
      echo "bench $tag pass $i rc=$? $(date -u +%T)" >> $S
    done
  done
done
NEW=CudaTest.SpecialValuesGiveTheCpuBitsAndAnExactlyNegatedGradTargetInEveryGradientForm
( t0=$SECONDS; MSELOSS_TEST_MAX_N=300001 timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $D/test_cuda_spec --gtest_filter=CudaTest.IdenticalBitsToTheCpuForEveryDtypeReductionAndSize > $W/memcheck_sweep.log 2>&1
  echo "memcheck sweep (N <= 300001) rc=$? in $((SECONDS-t0)) s: $(grep -h 'ERROR SUMMARY' $W/memcheck_sweep.log) $(grep -h '^\[  PASSED\|^\[  FAILED' $W/memcheck_sweep.log)" >> $S ) &
for j in $(seq 0 19); do
  ( GTEST_TOTAL_SHARDS=20 GTEST_SHARD_INDEX=$j timeout 300 $D/test_cuda_spec > $W/test_spec_$j.log 2>&1; echo "test_cuda_spec shard $j/20 rc=$?" >> $S ) &
done; wait $(jobs -p | grep -v "^$PACKER$")
grep -h "^\[  PASSED\|^\[  FAILED\|^\[  SKIPPED" $W/test_spec_*.log | sort | uniq -c >> $S
grep -h "OK \] $NEW" $W/test_spec_*.log >> $S
grep -hE "FAILED|Failure" $W/test_spec_*.log $W/memcheck_sweep.log | head -20 >> $S
timeout 240 $D/test_cuda_mutant --gtest_filter=$NEW > $W/test_mutant.log 2>&1
echo "mutant, new test: rc=$? (must be nonzero); $(grep -c 'is not the exact negation' $W/test_mutant.log) negation failures, $(grep -c 'grad_target differs' $W/test_mutant.log) CPU-bit failures" >> $S
grep -h "is not the exact negation" $W/test_mutant.log | head -8 >> $S
date -u >> $S
kill $PACKER; wait $PACKER 2>/dev/null; pack
cat $S
