#!/bin/bash
# Links .exp/test_cuda_exp$1: test_cuda against cuda_backend.cu compiled at -DMSELOSS_EXP=$1.
set -e
cd /work/main/build/hopper
V=$1
O=/tmp/cb_exp$V.o
[ -f $O ] || { echo "run build_variant.sh $V first"; exit 1; }
rm -f /tmp/libm_t$V.a
ar qc /tmp/libm_t$V.a CMakeFiles/mseloss.dir/src/api.cpp.o CMakeFiles/mseloss.dir/src/cpu/cpu_backend.cpp.o $O CMakeFiles/mseloss.dir/src/cuda/comparison_kernels.cu.o
ranlib /tmp/libm_t$V.a
/usr/bin/c++ -O3 -DNDEBUG tests/CMakeFiles/test_cuda.dir/test_cuda.cpp.o tests/CMakeFiles/test_cuda.dir/late_writer.cu.o -o /work/main/.exp/test_cuda_exp$V -L/usr/local/cuda/targets/x86_64-linux/lib tests/libmseloss_testing.a /usr/lib/x86_64-linux-gnu/libgtest_main.a /usr/local/cuda/lib/libcudart_static.a /tmp/libm_t$V.a /usr/local/cuda/lib/libcudart_static.a -ldl /usr/lib/x86_64-linux-gnu/librt.a -lquadmath /usr/lib/x86_64-linux-gnu/libgtest.a -lcudadevrt -lcudart_static -lrt -lpthread -ldl
echo built .exp/test_cuda_exp$V
