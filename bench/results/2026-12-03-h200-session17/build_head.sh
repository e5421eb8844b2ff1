#!/bin/bash
# Builds the mseloss CLI with cuda_backend.cu compiled at -DMSELOSS_EXP=$1 into .exp/mseloss_exp$1.
set -e
cd /work/main/build/hopper
V=$1
O=/tmp/cb_head.o
/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler  -DMSELOSS_WITH_CUDA=1 -I/tmp/headwt/include -I/tmp/headwt/src -isystem=/usr/local/cuda/include -O3 -DNDEBUG --generate-code=arch=compute_90,code=[compute_90,sm_90] -Xcompiler=-fPIC -Xptxas=-warn-spills --expt-relaxed-constexpr -fmad=false -prec-div=true -prec-sqrt=true -ftz=false -Xcompiler=-ffp-contract=off -std=c++17 -x cu -c /tmp/headwt/src/cuda/cuda_backend.cu -o $O
rm -f /tmp/libm_head.a
ar qc /tmp/libm_head.a CMakeFiles/mseloss.dir/src/api.cpp.o CMakeFiles/mseloss.dir/src/cpu/cpu_backend.cpp.o $O CMakeFiles/mseloss.dir/src/cuda/comparison_kernels.cu.o
ranlib /tmp/libm_head.a
c++ -O3 -DNDEBUG CMakeFiles/mseloss_cli.dir/tools/mseloss/main.cpp.o -o /work/main/.exp/mseloss_head -L/usr/local/cuda/targets/x86_64-linux/lib libmseloss_tools.a /tmp/libm_head.a /usr/local/cuda/lib/libcudart_static.a -ldl /usr/lib/x86_64-linux-gnu/librt.a -lcudadevrt -lcudart_static -lrt -lpthread -ldl
echo built .exp/mseloss_head
