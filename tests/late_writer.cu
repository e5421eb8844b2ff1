// A kernel for test_cuda that lets the next kernel in its stream launch at
// once (programmatic dependent launch) and writes its output only later: a
// kernel launched after it that reads that output before waiting for it
// (griddepcontrol.wait) reads stale data.
#include "late_writer.hpp"

namespace testing_mse {

namespace {

__global__ void late_copy_kernel(unsigned char* dst, const unsigned char* src, std::size_t bytes,
                                 unsigned long long delay_ns) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < delay_ns);
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes; i += step)
    dst[i] = src[i];
}

}  // namespace

cudaError_t launch_late_copy(void* dst, const void* src, std::size_t bytes, unsigned long long delay_ns,
                             cudaStream_t stream) {
  late_copy_kernel<<<64, 256, 0, stream>>>(static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src),
                                           bytes, delay_ns);
  return cudaGetLastError();
}

}  // namespace testing_mse
