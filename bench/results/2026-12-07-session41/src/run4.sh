#!/bin/bash
# Session 41, device run 4: the build to commit (`bitm`: grad_target from grad_input's stored
# bits in the fp16 backward mean/sum tile only; its 9 changed kernels are byte-identical to
# bith's and bit's fp16 grad_device_scalar forms, the other 276 to head's).
#  1. head and bitm, backward mean and sum, fp16 (changed) and bf16 (identical kernels: the
#     A/A control), 2^20-2^24, without and with --grad-target, 4 passes ABBA (PASSES=n for fewer), 200 runs a point.
#  2. test_cuda of bitm in 20 shards; memcheck of the CPU = GPU sweep to N = 300001 beside them.
#     TEST=name picks another test binary of the pack (session 42: test_cuda_spec).
T=${TEST:-test_cuda_bitm}; D=$(realpath $1); W=/tmp/s41run4; rm -rf $W; mkdir -p $W; S=$W/run4_summary.txt; R=$OUT
pack() { tar czf $R/.run4.tgz -C $W . && mv $R/.run4.tgz $R/run4.tgz; }
( while sleep 15; do pack; done ) & PACKER=$!
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
for i in $(seq 0 $((${PASSES:-4} - 1))); do
  case $((i % 4)) in 0|3) order="head bitm";; *) order="bitm head";; esac
  for b in $order; do
    for gt in "" "--grad-target"; do
      tag=$b$( [ -n "$gt" ] && echo gt )
      timeout 120 $D/mseloss_$b bench --device cuda --sizes 2^20,2^21,2^22,2^23,2^24 --dtypes bf16,f16 --reductions mean,sum --op backward $gt --runs 200 --csv $W/run4_${tag}_$i.csv > /dev/null 2>&1
      echo "bench $tag pass $i rc=$? $(date -u +%T)" >> $S
    done
  done
done
( t0=$SECONDS; MSELOSS_TEST_MAX_N=300001 timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $D/$T --gtest_filter=CudaTest.IdenticalBitsToTheCpuForEveryDtypeReductionAndSize > $W/memcheck_sweep.log 2>&1
  echo "memcheck sweep (N <= 300001) rc=$? in $((SECONDS-t0)) s: $(grep -h 'ERROR SUMMARY' $W/memcheck_sweep.log) $(grep -h '^\[  PASSED\|^\[  FAILED' $W/memcheck_sweep.log)" >> $S ) &
for j in $(seq 0 19); do
  ( GTEST_TOTAL_SHARDS=20 GTEST_SHARD_INDEX=$j timeout 240 $D/$T > $W/test_bitm_$j.log 2>&1; echo "$T shard $j/20 rc=$?" >> $S ) &
done; wait $(jobs -p | grep -v "^$PACKER$")
grep -h "^\[  PASSED\|^\[  FAILED" $W/test_bitm_*.log | sort | uniq -c >> $S
grep -hE "FAILED|Failure" $W/test_bitm_*.log $W/memcheck_sweep.log | head -20 >> $S
date -u >> $S
kill $PACKER; wait $PACKER 2>/dev/null; pack
cat $S
