#!/bin/bash
# Session 28, device run 3: the commit (`final`: mse_fused_stream_kernel for fp32 fused passes,
# and for 16-bit ones at 3-5 chunks per SM) against `head` (b449b96), fused mean, three passes
# alternating, sizes around the bounds (fp32 272/296 chunks; 16-bit 396 and 660 chunks) and
# 2^22-2^28; test_cuda of `final` (ten shards); racecheck and memcheck of `final`'s lean fused pass
# through the bench (fp32 273 chunks, bf16 397 chunks, last chunk cut short).
D=$1; S=$OUT/run3_summary.txt
mkdir -p /tmp/csv; date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
for i in 0 1 2; do
  for b in $( [ $((i % 2)) = 0 ] && echo head final || echo final head ); do
    timeout 60 $D/mseloss_$b bench --device cuda --sizes 2228224,2424832,2^22,2^23,2^24,2^25,2^26,2^28 --dtypes f32 --reductions mean --op fused --runs 30 --csv /tmp/csv/run3_${b}_f32_$i.csv >> /tmp/csv/run3_ab.txt 2>&1
    echo "bench $b f32 pass $i rc=$? $(date -u +%T)" >> $S
    timeout 60 $D/mseloss_$b bench --device cuda --sizes 2^22,6488064,2^23,10813440,2^24,2^25,2^26,2^28 --dtypes bf16,f16 --reductions mean --op fused --runs 30 --csv /tmp/csv/run3_${b}_16_$i.csv >> /tmp/csv/run3_ab.txt 2>&1
    echo "bench $b 16 pass $i rc=$? $(date -u +%T)" >> $S
  done
done
for i in 0 1 2 3 4 5 6 7 8 9; do
  ( GTEST_TOTAL_SHARDS=10 GTEST_SHARD_INDEX=$i timeout 200 $D/test_cuda > /tmp/csv/run3_test_cuda_$i.log 2>&1; echo "test_cuda shard $i/10 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/csv/run3_test_cuda_$i.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
done
for tool in racecheck memcheck; do
  for c in "f32 2228229" "bf16 6488069"; do
    set -- $c
    ( timeout 200 compute-sanitizer --tool $tool $( [ $tool = memcheck ] && echo --leak-check full ) $D/mseloss_final bench --device cuda --sizes $2 --dtypes $1 --reductions mean --op fused --runs 1 > /tmp/csv/run3_${tool}_$1.log 2>&1; echo "$tool $1 rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' /tmp/csv/run3_${tool}_$1.log | tr '\n' ' ') $(date -u +%T)" >> $S ) &
  done
done
wait
cat /tmp/csv/run3_test_cuda_*.log > /tmp/csv/run3_test_cuda.log
date -u >> $S
tar -czf $OUT/run3_csv.tar.gz -C /tmp/csv .
cat $S
grep -E "FAILED|Failure" /tmp/csv/run3_test_cuda.log | head -20
