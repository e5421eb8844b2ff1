// The seed's three designs on NVIDIA, kept as measured comparisons for the
// optimisation story (docs/performance.md). They accumulate in fp32 as the
// seed's Triton kernels do, and the atomic ones are not run-to-run
// deterministic: only mse_reduce_kernel carries the numerics guarantee.
#include "cuda/cuda_common.cuh"

namespace mseloss::detail::cuda {
namespace {

// The seed's baseline BLOCK_SIZE table (elements per program).
std::int64_t seed_block_elems(std::int64_t n) {
  if (n <= 16 * 1024) return 256;
  if (n <= 128 * 1024) return 512;
  if (n <= 4 * 1024 * 1024) return 512;
  return 1024;
}

__device__ __forceinline__ float block_sum(float v) {
  __shared__ float warp_sums[kWarps];
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  v = threadIdx.x < kWarps ? warp_sums[threadIdx.x] : 0.f;
  if (threadIdx.x < 32)
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

template <class T>
__device__ __forceinline__ float term32(const T* x, const T* y, std::int64_t i) {
  float d = static_cast<float>(Traits<T>::load(x[i])) - static_cast<float>(Traits<T>::load(y[i]));
  return d * d;
}

// atomic: grid = ceil(N / BLOCK), one program per block of elements, one atomicAdd each.
template <class T>
__global__ void __launch_bounds__(kThreads) seed_atomic_kernel(const KernelParams p, std::int64_t block_elems) {
  const T* x = static_cast<const T*>(p.x);
  const T* y = static_cast<const T*>(p.y);
  const std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * block_elems;
  float acc = 0.f;
  for (std::int64_t k = threadIdx.x; k < block_elems && b + k < p.n; k += kThreads) acc += term32(x, y, b + k);
  acc = block_sum(acc);
  if (threadIdx.x == 0) atomicAdd(&p.ws->atomic_sum, acc);
}

// gridstride-atomic / gridstride-store: grid = SM count, 16-byte loads in a
// grid-strided loop; the block's sum is added atomically or stored.
template <class T, bool kStore>
__global__ void __launch_bounds__(kThreads) seed_gridstride_kernel(const KernelParams p) {
  constexpr int V = 16 / sizeof(T);
  const T* x = static_cast<const T*>(p.x);
  const T* y = static_cast<const T*>(p.y);
  float acc = 0.f;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kThreads * V;
  std::int64_t i = (static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x) * V;
  if (p.vec) {
    for (; i + V <= p.n; i += step) {
      union { uint4 u; T e[V]; } a, b;
      a.u = __ldcs(reinterpret_cast<const uint4*>(x + i));
      b.u = __ldcs(reinterpret_cast<const uint4*>(y + i));
#pragma unroll
      for (int v = 0; v < V; ++v) {
        float d = static_cast<float>(Traits<T>::load(a.e[v])) - static_cast<float>(Traits<T>::load(b.e[v]));
        acc += d * d;
      }
    }
  }
  for (; i < p.n; i += step)
    for (int v = 0; v < V && i + v < p.n; ++v) acc += term32(x, y, i + v);
  acc = block_sum(acc);
  if (threadIdx.x == 0) {
    if (kStore) p.ws->partials[blockIdx.x].hi = acc;
    else atomicAdd(&p.ws->atomic_sum, acc);
  }
}

// Second pass: sums the stored partials (or takes the atomic sum), applies
// the mean, writes the loss and zeroes the accumulator for the next call.
template <class OutT>
__global__ void __launch_bounds__(kThreads) seed_finish_kernel(const KernelParams p, int parts) {
  float v = 0.f;
  if (parts > 0) {
    for (int k = threadIdx.x; k < parts; k += kThreads) v += static_cast<float>(p.ws->partials[k].hi);
    v = block_sum(v);
  } else {
    v = p.ws->atomic_sum;
  }
  if (threadIdx.x == 0) {
    if (p.mean) v = p.n == 0 ? NAN : v / static_cast<float>(p.n);
    using OC = typename Traits<OutT>::Compute;
    *static_cast<OutT*>(p.out) = Traits<OutT>::store(static_cast<OC>(v));
    p.ws->atomic_sum = 0.f;
  }
}

template <class T, class OutT>
void launch_typed(const Problem& p, KernelParams& kp, cudaStream_t stream) {
  if (p.dtype == DType::f64 || !p.contiguous)
    throw InvalidArgument(std::string("options.algorithm: ") + to_string(p.algorithm) +
                          " is a comparison for contiguous fp32/fp16/bf16 inputs");
  int parts = 0;
  if (p.algorithm == Algorithm::atomic) {
    const std::int64_t be = seed_block_elems(p.n);
    const std::int64_t grid = (p.n + be - 1) / be;
    if (grid > 0) seed_atomic_kernel<T><<<static_cast<unsigned>(grid), kThreads, 0, stream>>>(kp, be);
  } else {
    const int grid = p.grid_blocks > 0 ? std::min(p.grid_blocks, static_cast<int>(kMaxChunks)) : sm_count();
    if (p.algorithm == Algorithm::gridstride_store) {
      seed_gridstride_kernel<T, true><<<grid, kThreads, 0, stream>>>(kp);
      parts = grid;
    } else {
      seed_gridstride_kernel<T, false><<<grid, kThreads, 0, stream>>>(kp);
    }
  }
  MSELOSS_CUDA_CHECK(cudaGetLastError());
  seed_finish_kernel<OutT><<<1, kThreads, 0, stream>>>(kp, parts);
  MSELOSS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_comparison(const Problem& p, KernelParams& kp, cudaStream_t stream) {
  const bool f32_out = p.out.dtype == DType::f32;
  switch (p.dtype) {
    case DType::f32: return launch_typed<float, float>(p, kp, stream);
    case DType::f16: return f32_out ? launch_typed<Half, float>(p, kp, stream) : launch_typed<Half, Half>(p, kp, stream);
    case DType::bf16:
      return f32_out ? launch_typed<BFloat16, float>(p, kp, stream) : launch_typed<BFloat16, BFloat16>(p, kp, stream);
    case DType::f64: return launch_typed<float, float>(p, kp, stream);  // refused inside
  }
}

}  // namespace mseloss::detail::cuda
