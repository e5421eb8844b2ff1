#!/bin/bash
# Session 16, device run 2: the final candidate (build/hopper: PDL; tagged
# partials and a fixed finishing block in the single-wave forward kernels and
# the 16-bit single-wave ring) against run 1's tree (exp0) and the candidate
# with the fixed finisher in the fp32 fused single-wave kernel too (exp1);
# the candidate with --plain-launch. Then the full table, torch_bench, pytest,
# test_shard, and the no-wait build's overlapped test (must fail).
set -o pipefail
B=build/hopper; NEW=$B/mseloss; S=$OUT/summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
( CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1; echo "pip rc=$?" > /tmp/pip.rc ) &
PIP=$!
for rep in 1 2; do
  for v in ".exp/mseloss_exp0" "$NEW" ".exp/mseloss_exp1" "$NEW --plain-launch"; do
    set -- $v; b=$1; shift
    echo "== $v rep$rep" >> $OUT/small.txt
    timeout 60 $b bench --device cuda --sizes 2^10,2^17,2^18,2^19,2^20,2^21 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 "$@" 2>&1 | grep -v "^#" >> $OUT/small.txt
    echo "== $v rep$rep" >> $OUT/big.txt
    timeout 90 $b bench --device cuda --sizes 2^22,2^25,2^26 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 "$@" 2>&1 | grep -v "^#" >> $OUT/big.txt
  done
done
echo "A/B benches done $(date -u +%T)" >> $S
timeout 150 $NEW bench --device cuda --sizes 2^10,2^12,2^14,2^16,2^18,2^20,2^22,2^24,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions mean,sum,none --op forward,backward,fused --runs 30 --csv $OUT/full.csv > $OUT/full.txt 2>&1; echo "full table rc=$? $(date -u +%T)" >> $S
timeout 60 $NEW bench --device cuda --sizes 2^10,2^20,2^25 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 --plain-launch > $OUT/full_plain.txt 2>&1; echo "plain rc=$?" >> $S
wait $PIP; cat /tmp/pip.rc >> $S; tail -3 /tmp/pip.log >> $S
R=$PWD; cd /tmp; PYTHONUNBUFFERED=1 timeout 200 python3 $R/bench/torch_bench.py --sizes 2^10,2^20,2^25 --dtypes float32,bfloat16,float16 --runs 30 --csv $OUT/torch_bench.csv --plot $OUT/torch_bench.png > $OUT/torch_bench.txt 2>&1; echo "torch_bench rc=$? $(date -u +%T)" >> $S; cd $R
( cd /tmp && timeout 200 python3 -m pytest -q -p no:cacheprovider $R/tests/python > /tmp/pytest.log 2>&1; echo "pytest rc=$?: $(tail -1 /tmp/pytest.log)"; grep -E "FAILED|Error" /tmp/pytest.log | head -10 ) > /tmp/d.txt 2>&1 &
( timeout 120 $B/tests/test_shard > /tmp/sh.log 2>&1; echo "test_shard rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/sh.log | tr '\n' ' ')"
  timeout 100 .exp/test_cuda_exp8 --gtest_filter='*Overlapped*' > /tmp/b.log 2>&1; echo "no-wait build, overlapped test rc=$? (must fail): $(grep -c differs /tmp/b.log) differences" ) > /tmp/c.txt 2>&1 &
wait; cat /tmp/c.txt /tmp/d.txt >> $S
date -u >> $S
cat $S
