#!/bin/bash
# Session 15, device run 1: fixed-cost experiments on the ticket and finish.
# exp0 = HEAD (3da3ff8); exp1 = ticket by one acq_rel atomic after the block
# barrier (no __threadfence); exp3 = exp1 + fp32-family partials packed as
# 8-byte doubles; exp4 = no ticket/finish at all (timing bound only, wrong
# loss); exp8 = a one-row instantiation of the few-chunks kernel for N <= W.
S=$OUT/summary.txt; date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> $S
E=.exp
for rep in 1 2; do
  for v in 0 8 1 3; do
    echo "== exp$v rep$rep" >> $OUT/small.txt
    timeout 60 $E/mseloss_exp$v bench --device cuda --sizes 2^10,2^11,2^14,2^17,2^20 --dtypes f32,bf16 --reductions mean --op forward,fused --runs 30 2>&1 | grep -v "^#" >> $OUT/small.txt
  done
done
echo "small done $(date -u +%T)" >> $S
for rep in 1 2; do
  for v in 0 1 3 4; do
    echo "== exp$v rep$rep" >> $OUT/big.txt
    timeout 90 $E/mseloss_exp$v bench --device cuda --sizes 2^22,2^25,2^26 --dtypes f32,bf16,f16 --reductions mean --op forward --runs 30 2>&1 | grep -v "^#" >> $OUT/big.txt
  done
done
echo "big fwd done $(date -u +%T)" >> $S
for rep in 1 2; do
  for v in 0 1 3; do
    echo "== exp$v rep$rep" >> $OUT/fused.txt
    timeout 60 $E/mseloss_exp$v bench --device cuda --sizes 2^25 --dtypes f32,bf16 --reductions mean --op fused --runs 30 2>&1 | grep -v "^#" >> $OUT/fused.txt
  done
done
echo "fused done $(date -u +%T)" >> $S
cat $S
# ncu: bf16 forward at 2^25, HEAD and the no-finish bound, against the read probe
for v in 0 4; do
  echo "== exp$v mse_reduce" >> $OUT/ncu.txt
  timeout 90 ncu --cache-control none --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
    -k regex:mse_reduce --launch-skip 3 --launch-count 1 $E/mseloss_exp$v bench --device cuda --sizes 2^25 --dtypes bf16 --reductions mean --op forward --runs 5 >> $OUT/ncu.txt 2>&1
done
echo "== probe" >> $OUT/ncu.txt
timeout 90 ncu --cache-control none --clock-control none --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
  -k regex:read_probe --launch-skip 3 --launch-count 1 $E/mseloss_exp0 bench --device cuda --sizes 2^25 --dtypes bf16 --reductions mean --op forward --runs 5 >> $OUT/ncu.txt 2>&1
echo "ncu done $(date -u +%T)" >> $S
cat $S
