#!/bin/bash
# Session 17, device run 2: the candidate (build/hopper: clusters up to 8
# chunks, 9-16 on the single-wave kernel; 2- and 4-row one-block forms;
# posted partials for persistent fp16) against HEAD (.exp/mseloss_head) and
# exp9 (the candidate with 16-bit forward passes of 2-8 chunks on the
# single-wave kernel too), interleaved, 3 passes. ncu: the bf16 and fp16
# persistent forward at 2^26, HEAD against exp2 (every 16-bit kernel posted;
# run 1). Then the GPU suite in 4 shards with the sanitizers, test_shard,
# pip + pytest; then torch_bench on a quiet GPU.
set -o pipefail
B=build/hopper; NEW=$B/mseloss; S=$OUT/summary.txt; R=$PWD
date -u > $S; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
for rep in 1 2 3; do
  for b in .exp/mseloss_head $NEW .exp/mseloss_exp9; do
    echo "== $b rep$rep" >> $OUT/small.txt
    timeout 60 $b bench --device cuda --sizes 2^10,2^11,2^12,2^13,2^14,2^15,2^16,2^17,2^18,2^19,2^20 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>&1 | grep -v "^#" >> $OUT/small.txt
    echo "== $b rep$rep" >> $OUT/big.txt
    timeout 90 $b bench --device cuda --sizes 2^22,2^24,2^25,2^26 --dtypes f32,bf16,f16 --reductions mean,sum --op forward,fused --runs 30 2>&1 | grep -v "^#" >> $OUT/big.txt
  done
done
echo "benches done $(date -u +%T)" >> $S
M=gpu__time_duration.sum,dram__bytes_read.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
for b in .exp/mseloss_head .exp/mseloss_exp2; do
  for t in bf16 f16; do
    echo "== $b $t" >> $OUT/ncu.txt
    timeout 60 ncu --kernel-name regex:mse_reduce_kernel --launch-skip 3 --launch-count 1 --metrics $M $b bench --device cuda --sizes 2^26 --dtypes $t --reductions mean --op forward --runs 5 2>&1 | grep -E "mse_reduce|gpu__|dram__|l1tex__|launch__|sm__" >> $OUT/ncu.txt
  done
done
echo "ncu done $(date -u +%T)" >> $S
for i in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 400 $B/tests/test_cuda > /tmp/t$i.log 2>&1; echo "test_cuda shard $i/4 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/t$i.log | tr '\n' ' ')"; grep -E "^\[ +(OK|FAILED) +\]" /tmp/t$i.log; grep -m3 -A5 Failure /tmp/t$i.log ) > /tmp/a$i.txt 2>&1 &
done
( MSELOSS_TEST_MAX_N=140000 timeout 300 compute-sanitizer --tool memcheck --leak-check full $B/tests/test_cuda --gtest_filter='*ChunkCounts*:*GridSize*' > /tmp/mc.log 2>&1; echo "memcheck(chunk counts, grids <= 140000) rc=$?: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc.log | head -30
  MSELOSS_TEST_MAX_N=140000 timeout 200 compute-sanitizer --tool racecheck $B/tests/test_cuda --gtest_filter='*ChunkCounts*:*GridSize*' > /tmp/rc.log 2>&1; echo "racecheck(chunk counts, grids <= 140000) rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/rc.log | tr '\n' ' ')"; grep -m5 -A8 "rror\|azard" /tmp/rc.log | head -30 ) > /tmp/b.txt 2>&1 &
( MSELOSS_TEST_MAX_N=300001 timeout 300 compute-sanitizer --tool memcheck $B/tests/test_cuda --gtest_filter='*IdenticalBits*:*AStreamFirstUsed*:*Overlapped*' > /tmp/mc2.log 2>&1; echo "memcheck(identical bits <= 300001, stream first used in a capture, overlapped launch) rc=$?: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc2.log | tr '\n' ' ')"; grep -m5 -B2 -A8 "Invalid\|rror:" /tmp/mc2.log | head -30
  timeout 120 $B/tests/test_shard > /tmp/sh.log 2>&1; echo "test_shard rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/sh.log | tr '\n' ' ')" ) > /tmp/c.txt 2>&1 &
( CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1; echo "pip rc=$?"; tail -3 /tmp/pip.log
  cd /tmp && timeout 250 python3 -m pytest -q -p no:cacheprovider $R/tests/python > /tmp/pytest.log 2>&1; echo "pytest rc=$?: $(tail -1 /tmp/pytest.log)"; grep -E "FAILED|Error" /tmp/pytest.log | head -10 ) > /tmp/d.txt 2>&1 &
wait; cat /tmp/a0.txt /tmp/a1.txt /tmp/a2.txt /tmp/a3.txt > $OUT/test_cuda.txt; grep -h "^test_cuda\|Failure" $OUT/test_cuda.txt >> $S; cat /tmp/b.txt /tmp/c.txt /tmp/d.txt >> $S
echo "tests done $(date -u +%T)" >> $S
cd /tmp; PYTHONUNBUFFERED=1 timeout 100 python3 $R/bench/torch_bench.py --sizes 2^10,2^12,2^17,2^18,2^20,2^25 --dtypes float32,bfloat16,float16 --runs 30 --csv $OUT/torch_bench.csv --plot $OUT/torch_bench.png > $OUT/torch_bench.log 2>&1; echo "torch_bench rc=$? $(date -u +%T)" >> $S
cat $S
