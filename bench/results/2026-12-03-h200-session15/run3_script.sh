#!/bin/bash
# Session 15, device run 3: why run 2's tagged build slowed the 16-bit passes
# (fused ring 0.93 -> 0.80 of a copy, bf16 forward at 2^28 -5 %). HEAD (exp0),
# the tagged build (new), tagged except the ring kernel (exp1), tagged for
# fp32 only (exp2); ncu occupancy/launch stats and SASS of the ring kernel.
S=$OUT/summary.txt; date -u > $S
for rep in 1 2; do
  for v in exp0 new exp1 exp2; do
    echo "== $v rep$rep" >> $OUT/big.txt
    timeout 90 .exp/mseloss_$v bench --device cuda --sizes 2^22,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>&1 | grep -v "^#" >> $OUT/big.txt
  done
done
echo "benches done $(date -u +%T)" >> $S
for v in exp0 new; do
  echo "== $v ring" >> $OUT/ncu.txt
  timeout 90 ncu --cache-control none --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    -k regex:mse_reduce --launch-skip 3 --launch-count 1 .exp/mseloss_$v bench --device cuda --sizes 2^25 --dtypes bf16 --reductions mean --op fused --runs 5 >> $OUT/ncu.txt 2>&1
  echo "== $v bf16 forward 2^28" >> $OUT/ncu.txt
  timeout 90 ncu --cache-control none --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    -k regex:mse_reduce --launch-skip 3 --launch-count 1 .exp/mseloss_$v bench --device cuda --sizes 2^28 --dtypes bf16 --reductions mean --op forward --runs 5 >> $OUT/ncu.txt 2>&1
  cuobjdump -sass -fun '_ZN7mseloss6detail4cuda17mse_reduce_kernelINS0_8BFloat16ES3_Lb0ELb1ELi4ELb0ELb1EEEvNS1_12KernelParamsE' .exp/mseloss_$v > $OUT/sass_ring_$v.txt 2>&1
  cuobjdump -sass -fun '_ZN7mseloss6detail4cuda17mse_reduce_kernelINS0_8BFloat16ES3_Lb0ELb0ELi4ELb0ELb0EEEvNS1_12KernelParamsE' .exp/mseloss_$v > $OUT/sass_bf16fwd_$v.txt 2>&1
done
echo "ncu done $(date -u +%T)" >> $S
cat $S
