#!/bin/bash
# Session 39, device run 2. PACK holds mseloss_head (HEAD's kernels), mseloss_new (run 1's
# candidate: grad_target converted back from grad_input's stored values), mseloss_bit and
# test_cuda_bit (grad_target from grad_input's stored vector by flipping sign bits, the
# canonical NaN kept).
#  1. On a quiet GPU: benches of the three builds in rotating order, three passes, backward and
#     fused, mean and none, bf16/fp16/fp32, 2^20 and 2^22-2^24 (run 1: no change from 2^23), without
#     and with --grad-target.
#  2. Then, unless BENCH_ONLY is set, test_cuda_bit in 20 shards; memcheck of the CPU = GPU
#     sweep to N = 300001 beside them.
D=$(realpath $1); W=/tmp/s39run2; rm -rf $W; mkdir -p $W; S=$W/run2_summary.txt; R=$OUT
pack() { tar czf $R/.run2.tgz -C $W . && mv $R/.run2.tgz $R/run2.tgz; }
( while sleep 15; do pack; done ) & PACKER=$!
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
for i in 0 1 2; do
  case $((i % 3)) in 0) order="head new bit";; 1) order="bit head new";; 2) order="new bit head";; esac
  for b in $order; do
    for gt in "" "--grad-target"; do
      tag=$b$( [ -n "$gt" ] && echo gt )
      timeout 120 $D/mseloss_$b bench --device cuda --sizes 2^20,2^22,2^23,2^24 --dtypes bf16,f16,f32 --reductions mean,none --op backward,fused $gt --runs 50 --csv $W/run2_${tag}_$i.csv > /dev/null 2>&1
      echo "bench $tag pass $i rc=$? $(date -u +%T)" >> $S
    done
  done
done
if [ -z "$BENCH_ONLY" ]; then
( t0=$SECONDS; MSELOSS_TEST_MAX_N=300001 timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $D/test_cuda_bit --gtest_filter=CudaTest.IdenticalBitsToTheCpuForEveryDtypeReductionAndSize > $W/memcheck_sweep.log 2>&1
  echo "memcheck sweep (N <= 300001) rc=$? in $((SECONDS-t0)) s: $(grep -h 'ERROR SUMMARY' $W/memcheck_sweep.log) $(grep -h '^\[  PASSED\|^\[  FAILED' $W/memcheck_sweep.log)" >> $S ) &
for j in $(seq 0 19); do
  ( GTEST_TOTAL_SHARDS=20 GTEST_SHARD_INDEX=$j timeout 240 $D/test_cuda_bit > $W/test_bit_$j.log 2>&1; echo "test_cuda_bit shard $j/20 rc=$?" >> $S ) &
done; wait $(jobs -p | grep -v "^$PACKER$")
grep -h "^\[  PASSED\|^\[  FAILED" $W/test_bit_*.log | sort | uniq -c >> $S
grep -hE "FAILED|Failure" $W/test_bit_*.log $W/memcheck_sweep.log | head -20 >> $S
fi
date -u >> $S
kill $PACKER; wait $PACKER 2>/dev/null; pack
cat $S
