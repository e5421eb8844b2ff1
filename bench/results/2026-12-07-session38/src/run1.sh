#!/bin/bash
# Session 38, device run 1, on HEAD's build (cmake --preset hopper; the kernels of 7b6aa3a):
#  - compute-sanitizer racecheck and memcheck of the lean 16-bit fused pass through
#    race_driver (one call per case: bf16/fp16, mean/sum, default grid and 7 blocks, 661 chunks;
#    each call's bits checked against the CPU backend);
#  - beside it, `pip install .` of the working tree and the Python suite (the first device run
#    since session 30, and the first of the lean 16-bit fused pass through the PyTorch op);
#  - then, on a quiet GPU: two bench passes (forward and fused, none and mean, 2^24-2^28,
#    three dtypes) and bench/torch_bench.py at 2^10, 2^20, 2^25 with training steps in all
#    three dtypes.
# Usage: run1.sh DIR (mseloss, race_driver). Writes $OUT/run1_summary.txt and $OUT/run1.tgz.
D=$1; R=$PWD; W=/tmp/s38run1; rm -rf $W; mkdir -p $W; S=$W/run1_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
( t0=$SECONDS; CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 timeout 200 python3 -m pip install --no-build-isolation --no-deps -q . > $W/pip.log 2>&1; echo "pip rc=$? in $((SECONDS-t0)) s" >> $S
  t0=$SECONDS; cd /tmp && timeout 200 python3 -m pytest -q -p no:cacheprovider $R/tests/python > $W/pytest.log 2>&1; echo "pytest rc=$? in $((SECONDS-t0)) s: $(tail -1 $W/pytest.log)" >> $S ) &
t0=$SECONDS; timeout 100 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $D/race_driver 661 > $W/memcheck_661.log 2>&1
echo "memcheck rc=$? in $((SECONDS-t0)) s: $(grep -h 'ERROR SUMMARY' $W/memcheck_661.log) $(tail -1 $W/memcheck_661.log | grep -v SUMMARY)" >> $S
t0=$SECONDS; timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 $D/race_driver 661 > $W/racecheck_661.log 2>&1
echo "racecheck rc=$? in $((SECONDS-t0)) s: $(grep -h 'RACECHECK SUMMARY' $W/racecheck_661.log)" >> $S
grep -h "cases gave" $W/memcheck_661.log $W/racecheck_661.log >> $S
wait
grep -E "FAILED|Error" $W/pytest.log | head -10 >> $S
for i in 0 1; do
  timeout 60 $D/mseloss bench --device cuda --sizes 2^24,2^25,2^26,2^28 --dtypes bf16,f16,f32 --reductions none,mean --op forward,fused --runs 30 --csv $W/run1_bench_$i.csv > $W/run1_bench_$i.txt 2>&1
  echo "bench pass $i rc=$? $(date -u +%T)" >> $S
done
cd /tmp; t0=$SECONDS; PYTHONUNBUFFERED=1 timeout 150 python3 $R/bench/torch_bench.py --sizes 2^10,2^20,2^25 --dtypes float32,bfloat16,float16 --full-dtypes float32,bfloat16,float16 --runs 30 --csv $W/run1_torch_bench.csv > $W/run1_torch_bench.log 2>&1
echo "torch_bench rc=$? in $((SECONDS-t0)) s" >> $S
date -u >> $S
tar -czf $OUT/run1.tgz -C $W .
cp $S $OUT/
cat $S
