#!/bin/bash
# Session 19, device run 1 (build/hopper at the session's candidate): the
# forward at 2^24-2^26 with the paired probe ratio (three passes) and the
# fused pass, the sliced sizes graph-replayed, the training-step A/B (Python
# against C++ autograd), the GPU suite with the sanitizers, pip + pytest, a
# short torch_bench, and the SASS opcode mix of the persistent bf16 and fp16
# forward kernels.
set -o pipefail
B=build/hopper; M=$B/mseloss; S=$OUT/summary.txt; R=$PWD; D=bench/results/2026-12-04-h200-session19
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
( CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1; echo "pip rc=$?" > /tmp/pip.rc; tail -3 /tmp/pip.log >> /tmp/pip.rc ) &
PIP=$!
for rep in 1 2 3; do
  echo "== pass $rep" >> $OUT/big.txt
  timeout 90 $M bench --device cuda --sizes 2^24,2^25,2^26 --dtypes f32,bf16,f16 --reductions mean,sum --op forward --runs 50 --csv $OUT/big_pass$rep.csv 2>&1 | grep -v "^#" >> $OUT/big.txt
done
timeout 60 $M bench --device cuda --sizes 2^25,2^26 --dtypes f32,bf16,f16 --reductions mean --op fused --runs 50 2>&1 | grep -v "^#" >> $OUT/big.txt
echo "big benches done $(date -u +%T)" >> $S
timeout 60 $M bench --device cuda --sizes 2^14,2^15,2^16,2^17,2^18 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>&1 | grep -v "^#" > $OUT/small.txt
echo "small done $(date -u +%T)" >> $S
wait $PIP; cat /tmp/pip.rc >> $S
(cd /tmp && PYTHONUNBUFFERED=1 timeout 150 python3 $R/$D/fused_ab.py $R/bench > $OUT/fused_ab.txt 2>&1; echo "fused_ab rc=$? $(date -u +%T)") >> $S
for i in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 400 $B/tests/test_cuda > /tmp/t$i.log 2>&1; echo "test_cuda shard $i/4 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t$i.log | tr '\n' ' ')"; grep -E "^\[ +(OK|FAILED) +\]" /tmp/t$i.log; grep -m3 -A5 Failure /tmp/t$i.log ) > /tmp/a$i.txt 2>&1 &
done
( MSELOSS_TEST_MAX_N=140000 timeout 300 compute-sanitizer --tool memcheck --leak-check full $B/tests/test_cuda --gtest_filter='*ChunkCounts*:*GridSize*' > /tmp/mc.log 2>&1; echo "memcheck(chunk counts, grids <= 140000) rc=$?: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc.log | head -30
  MSELOSS_TEST_MAX_N=140000 timeout 200 compute-sanitizer --tool racecheck $B/tests/test_cuda --gtest_filter='*ChunkCounts*:*GridSize*' > /tmp/rc.log 2>&1; echo "racecheck(chunk counts, grids <= 140000) rc=$?: $(grep -E 'RACECHECK SUMMARY|^\[  (PASSED|FAILED)' /tmp/rc.log | tr '\n' ' ')"; grep -m5 -A8 "rror\|azard" /tmp/rc.log | head -30 ) > /tmp/b.txt 2>&1 &
( MSELOSS_TEST_MAX_N=300001 timeout 300 compute-sanitizer --tool memcheck $B/tests/test_cuda --gtest_filter='*IdenticalBits*:*AStreamFirstUsed*:*Overlapped*' > /tmp/mc2.log 2>&1; echo "memcheck(identical bits <= 300001, stream first used in a capture, overlapped launch) rc=$?: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc2.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc2.log | head -30
  timeout 120 $B/tests/test_shard > /tmp/sh.log 2>&1; echo "test_shard rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/sh.log | tr '\n' ' ')" ) > /tmp/c.txt 2>&1 &
( cd /tmp && timeout 250 python3 -m pytest -q -p no:cacheprovider $R/tests/python > /tmp/pytest.log 2>&1; echo "pytest rc=$?: $(tail -1 /tmp/pytest.log)"; grep -E "FAILED|Error" /tmp/pytest.log | head -10 ) > /tmp/d.txt 2>&1 &
( for T in BFloat16 Half; do
    f=$(cuobjdump -sass $M 2>/dev/null | grep -o "Function : _ZN7mseloss6detail4cuda17mse_reduce_kernelINS0_[0-9]*${T}ES3_Lb0ELb0ELi4ELb0ELb0EEEvNS1_12KernelParamsE" | head -1 | sed 's/Function : //')
    echo "== $T $f"; cuobjdump -sass -fun "$f" $M 2>/dev/null | grep -oE "^\s+/\*[0-9a-f]{4}\*/\s+[A-Z0-9_.]+" | awk '{print $2}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -40
  done ) > $OUT/sass_mix.txt 2>&1 &
wait; cat /tmp/a0.txt /tmp/a1.txt /tmp/a2.txt /tmp/a3.txt > $OUT/test_cuda.txt; grep -h "^test_cuda\|Failure" $OUT/test_cuda.txt >> $S; cat /tmp/b.txt /tmp/c.txt /tmp/d.txt >> $S
echo "tests done $(date -u +%T)" >> $S
cd /tmp; PYTHONUNBUFFERED=1 timeout 100 python3 $R/bench/torch_bench.py --sizes 2^10,2^20,2^25 --dtypes float32,bfloat16,float16 --runs 30 --csv $OUT/torch_bench.csv > $OUT/torch_bench.log 2>&1; echo "torch_bench rc=$? $(date -u +%T)" >> $S
cat $S
