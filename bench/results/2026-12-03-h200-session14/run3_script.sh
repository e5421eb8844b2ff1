#!/bin/bash
# Session 14, device run 3 (final tree): the full C++ table and the PyTorch peers.
S=$OUT/summary.txt
date -u > $S
python3 -c "import mseloss" 2>/dev/null || CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1
timeout 150 build/hopper/mseloss bench --device cuda --sizes 2^10,2^14,2^17,2^20,2^22,2^25,2^26,2^28 --dtypes f32,bf16,f16 --reductions mean,sum,none --op forward,backward,fused --runs 30 --csv $OUT/bench.csv > $OUT/bench.txt 2>&1; echo "bench rc=$?" >> $S
R=$PWD; cd /tmp; PYTHONUNBUFFERED=1 timeout 330 python3 $R/bench/torch_bench.py --sizes 2^10,2^14,2^17,2^20,2^25 --dtypes float32,bfloat16 --runs 30 --csv $OUT/torch_bench.csv --plot $OUT/torch_bench.png > $OUT/torch_bench.txt 2>&1; echo "torch_bench rc=$?" >> $S
date -u >> $S
cat $S
