#!/bin/bash
# Session 21, device run 3: the finisher reads posted partials in pairs (16-byte loads, new slot layout) against HEAD.
S=$OUT/run3_summary.txt; H=.exp/head/build/hopper/mseloss; M=build/hopper/mseloss
date -u > $S
for i in 1 2; do
  for v in B P; do timeout 100 .exp/s21/trace_$v 30 > $OUT/run3_trace_${v}_$i.txt 2>&1; echo "trace $v $i rc=$?" >> $S; done
done
for i in 1 2; do
  for b in $H $M; do
    echo "== $b pass $i $(date -u +%T)" >> $OUT/run3_ab.txt
    timeout 100 $b bench --device cuda --sizes 2^24,2^25,2^26 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 50 2>&1 | grep -v "^#" >> $OUT/run3_ab.txt
  done
done
echo "ab done $(date -u +%T)" >> $S
which cuobjdump >> $S 2>&1
K='_ZN7mseloss6detail4cuda17mse_reduce_kernelINS0_8BFloat16ES3_Lb0ELb0ELi4ELb0ELb0EEEvNS1_12KernelParamsE'
cuobjdump -sass -fun "$K" $M > $OUT/run3_sass_bf16_fwd.txt 2>&1; echo "sass rc=$? lines $(wc -l < $OUT/run3_sass_bf16_fwd.txt)" >> $S
for i in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 400 build/hopper/tests/test_cuda > $OUT/run3_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/4 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/run3_test_cuda_$i.log | tr '\n' ' ')" >> $S ) &
done
wait
date -u >> $S
cat $S
for f in $OUT/run3_trace_*; do echo "## $f"; grep -v "per rep" $f | cut -c1-330; done
grep -E "STL|LDL" $OUT/run3_sass_bf16_fwd.txt | head
grep -E "^op|forward|fused" $OUT/run3_ab.txt | awk '{print $1, $4,$6,$7,$9,$10}' | paste - - - - - - - | head -20
