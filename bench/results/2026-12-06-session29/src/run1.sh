#!/bin/bash
# Session 29, device run 1: session 28's prepared runs 4 and 5 (the commit against b449b96 at its
# bounds and test_cuda of the commit; Nsight Compute of forward none against backward mean), then
# two checks of why forward `none` trails backward mean on the H200: the bench's order reversed
# (backward timed first), and `swap` (the bench with forward none writing the buffer backward mean
# writes, backward none the other). Outputs go to $OUT as they come.
D=$1; R=bench/results/2026-12-06-session28/src
bash $R/run4.sh $D > /dev/null 2>&1
bash $R/run5.sh $D > /dev/null 2>&1
S=$OUT/run1x_summary.txt; C=$OUT/run1x_csv; mkdir -p $C; date -u > $S
for i in 0 1; do
  for b in final swap; do
    timeout 40 $D/mseloss_$b bench --device cuda --sizes 2^24,2^25,2^26 --dtypes bf16,f32 --reductions none,mean --op forward,backward --runs 30 --csv $C/x_${b}_fb_$i.csv >> $C/x.txt 2>&1
    echo "bench $b forward,backward pass $i rc=$? $(date -u +%T)" >> $S
    timeout 40 $D/mseloss_$b bench --device cuda --sizes 2^24,2^25,2^26 --dtypes bf16,f32 --reductions none,mean --op backward,forward --runs 30 --csv $C/x_${b}_bf_$i.csv >> $C/x.txt 2>&1
    echo "bench $b backward,forward pass $i rc=$? $(date -u +%T)" >> $S
  done
done
date -u >> $S
cat $OUT/run4_summary.txt $OUT/run5_summary.txt $S
grep -hE "FAILED|Failure" $OUT/run4_csv/run4_test_cuda_*.log | head -20
