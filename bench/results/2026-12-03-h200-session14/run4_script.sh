#!/bin/bash
# Session 14, device run 4 (final tree): ncu of the 16-bit fused pass, ring
# (new) against registers (b7e7643), bf16 2^26; the PyTorch peers with the
# 50 us lead spin, all three dtypes.
S=$OUT/summary.txt
date -u > $S
python3 -c "import mseloss" 2>/dev/null || CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1
for b in .exp/mseloss_b7e7643 build/hopper/mseloss; do
  echo "== $b" >> $OUT/ncu.txt
  timeout 90 ncu --cache-control none --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
    -k regex:mse_reduce --launch-skip 3 --launch-count 1 $b bench --device cuda --sizes 2^26 --dtypes bf16 --reductions mean --op fused --runs 5 >> $OUT/ncu.txt 2>&1
done
echo "ncu done" >> $S
R=$PWD; cd /tmp; PYTHONUNBUFFERED=1 timeout 360 python3 $R/bench/torch_bench.py --sizes 2^10,2^20,2^25 --dtypes float32,bfloat16,float16 --runs 30 --csv $OUT/torch_bench.csv --plot $OUT/torch_bench.png > $OUT/torch_bench.txt 2>&1; echo "torch_bench rc=$?" >> $S
date -u >> $S
cat $S
