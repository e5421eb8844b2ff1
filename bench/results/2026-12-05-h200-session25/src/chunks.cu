// Session 25: why the library's fused mean (read x, y; write the gradient) runs 2 % faster than its
// forward `none` (read x, y; write the loss), the same bytes (H200, session 24 run 2: 99.9 against
// 102.1 us at fp32 2^25). The fused pass walks contiguous chunks dealt from a counter, 3 blocks
// per SM; the `none` kernel walks spread tiles, statically, at full occupancy. Here read-2-write-1
// kernels (o = (x - y)^2, streaming stores) of each shape, timed in turn with a copy of the same
// bytes and the library's two calls.
#include <cuda_runtime.h>
#include <mseloss/mseloss.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)

constexpr int kThreads = 256;

__global__ void spin(long long ns) {
  long long t0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (;;) { long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); if (t - t0 > ns) break; }
}

__device__ __forceinline__ float4 sq(float4 a, float4 b) {
  const float p = a.x - b.x, q = a.y - b.y, r = a.z - b.z, s = a.w - b.w;
  return make_float4(p * p, q * q, r * r, s * s);
}

// Chunks of kChunk4 vectors, rows of kThreads vectors, U rows in flight per thread. kDealt: a
// block's first chunk is blockIdx.x, the next ones come from *counter (asked one chunk ahead, as
// the library's fused pass does); else grid-stride over chunks. n4 is a multiple of kChunk4.
template <int U, int kChunk4, bool kDealt, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks) chunks(const float4* x, const float4* y, float4* o, long long n4,
                                                               unsigned* counter) {
  __shared__ unsigned next[2];
  const long long nchunks = n4 / kChunk4;
  int parity = 0;
  for (long long c = blockIdx.x; c < nchunks;) {
    if (kDealt && threadIdx.x == 0) next[parity] = gridDim.x + atomicAdd(counter, 1u);
    const long long base = c * kChunk4 + threadIdx.x;
#pragma unroll 1
    for (int r0 = 0; r0 < kChunk4 / kThreads; r0 += U) {
      float4 a[U], b[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        a[u] = __ldcs(x + base + (r0 + u) * kThreads);
        b[u] = __ldcs(y + base + (r0 + u) * kThreads);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) __stcs(o + base + (r0 + u) * kThreads, sq(a[u], b[u]));
    }
    if (kDealt) {
      __syncthreads();
      c = next[parity];
      parity ^= 1;
    } else {
      c += gridDim.x;
    }
  }
}

// Spread: U vectors in flight, a grid's width apart (the library's `none` kernel from 2^25).
template <int U>
__global__ void __launch_bounds__(kThreads) spread(const float4* x, const float4* y, float4* o, long long n4, unsigned*) {
  const long long w = (long long)gridDim.x * kThreads;
  long long i0 = (long long)blockIdx.x * kThreads + threadIdx.x;
  for (; i0 + (U - 1) * w < n4; i0 += U * w) {
    float4 a[U], b[U];
#pragma unroll
    for (int u = 0; u < U; ++u) { a[u] = __ldcs(x + i0 + u * w); b[u] = __ldcs(y + i0 + u * w); }
#pragma unroll
    for (int u = 0; u < U; ++u) __stcs(o + i0 + u * w, sq(a[u], b[u]));
  }
  for (; i0 < n4; i0 += w) __stcs(o + i0, sq(x[i0], y[i0]));
}

using Kernel = void (*)(const float4*, const float4*, float4*, long long, unsigned*);

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 51;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  int dev, sms;
  CK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  sms = prop.multiProcessorCount;
  // One fresh zero counter per launch: nothing resets a counter inside the timed interval.
  constexpr int kCounters = 1 << 20;
  unsigned* counters;
  CK(cudaMalloc(&counters, kCounters * sizeof(unsigned)));
  CK(cudaMemset(counters, 0, kCounters * sizeof(unsigned)));
  int launch = 0;
  std::printf("# %s, %d SMs, runs %d, 2 rotating sets, 50 us GPU lead before each timed call\n", prop.name, sms, runs);
  for (int lg : {25, 26}) {
    const long long n = 1LL << lg, n4 = n / 4;
    const size_t bytes = n * 4;
    float *x[2], *y[2], *o[2], *c[2], *loss;
    for (int k = 0; k < 2; ++k) {
      CK(cudaMalloc(&x[k], bytes)); CK(cudaMalloc(&y[k], bytes)); CK(cudaMalloc(&o[k], bytes)); CK(cudaMalloc(&c[k], bytes * 3 / 2));
      CK(cudaMemset(x[k], 0x3c, bytes)); CK(cudaMemset(y[k], 0x3b, bytes)); CK(cudaMemset(c[k], 0x3a, bytes * 3 / 2));
    }
    CK(cudaMalloc(&loss, 4));
    int rot = 0;
    using Fn = std::function<void(int)>;
    mseloss::Options opt;
    opt.stream = st;
    std::vector<std::pair<std::string, Fn>> cases = {
        {"memcpy 6N bytes (the same bytes)", [&](int k) { CK(cudaMemcpyAsync(c[k], c[k ^ 1], bytes * 3 / 2, cudaMemcpyDeviceToDevice, st)); }},
        {"mseloss fused mean", [&](int k) {
           mseloss::forward_backward(mseloss::TensorView::contiguous(x[k], mseloss::DType::f32, {n}, mseloss::Device::cuda),
                                     mseloss::TensorView::contiguous(y[k], mseloss::DType::f32, {n}, mseloss::Device::cuda),
                                     mseloss::TensorView::contiguous(loss, mseloss::DType::f32, {1}, mseloss::Device::cuda),
                                     mseloss::TensorView::contiguous(o[k], mseloss::DType::f32, {n}, mseloss::Device::cuda), {}, 1.0, opt); }},
        {"mseloss forward none", [&](int k) {
           mseloss::Options on = opt; on.reduction = mseloss::Reduction::none;
           mseloss::forward(mseloss::TensorView::contiguous(x[k], mseloss::DType::f32, {n}, mseloss::Device::cuda),
                            mseloss::TensorView::contiguous(y[k], mseloss::DType::f32, {n}, mseloss::Device::cuda),
                            mseloss::TensorView::contiguous(o[k], mseloss::DType::f32, {n}, mseloss::Device::cuda), on); }},
    };
    auto add = [&](const char* name, Kernel kern, int blocks_per_sm) {
      int per;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, kThreads, 0));
      const int bps = blocks_per_sm > 0 ? std::min(blocks_per_sm, per) : per;
      char label[96];
      std::snprintf(label, sizeof label, "%s, %d blocks/SM (max %d)", name, bps, per);
      cases.emplace_back(label, [&, kern, bps](int k) {
        kern<<<sms * bps, kThreads, 0, st>>>((float4*)x[k], (float4*)y[k], (float4*)o[k], n4, counters + (launch++ % kCounters));
      });
    };
    add("spread 4 (the none kernel's walk)", spread<4>, 0);
    add("spread 1", spread<1>, 0);
    add("static chunks 8K, 4 rows", chunks<4, 2048, false, 3>, 3);
    add("dealt chunks 8K, 4 rows", chunks<4, 2048, true, 3>, 3);
    add("dealt chunks 8K, 4 rows", chunks<4, 2048, true, 4>, 4);
    add("dealt chunks 8K, 2 rows", chunks<2, 2048, true, 8>, 8);
    add("dealt chunks 16K, 4 rows", chunks<4, 4096, true, 3>, 3);
    add("dealt chunks 4K, 4 rows", chunks<4, 1024, true, 3>, 3);
    add("dealt chunks 8K, 2 rows", chunks<2, 2048, true, 6>, 6);
    add("dealt chunks 8K, 8 rows", chunks<8, 2048, true, 2>, 2);
    std::vector<std::vector<double>> med(cases.size());
    for (int pass = 0; pass < 3; ++pass) {
      for (size_t ci = 0; ci < cases.size(); ++ci) {
        auto& f = cases[ci].second;
        for (int w = 0; w < 3; ++w) { f(rot); rot ^= 1; }
        std::vector<float> t;
        for (int r = 0; r < runs; ++r) {
          spin<<<1, 1, 0, st>>>(50000);
          CK(cudaEventRecord(e0, st));
          f(rot);
          CK(cudaEventRecord(e1, st));
          CK(cudaEventSynchronize(e1));
          float ms;
          CK(cudaEventElapsedTime(&ms, e0, e1));
          t.push_back(ms * 1e3f);
          rot ^= 1;
        }
        CK(cudaGetLastError());
        // every kernel wrote (x - y)^2 everywhere: check the first, a middle and the last element
        if (ci >= 2) {
          const int k = rot ^ 1;
          float hx, hy, ho[3];
          const long long at[3] = {0, n / 2 + 5, n - 1};
          CK(cudaMemcpy(&hx, x[k], 4, cudaMemcpyDeviceToHost));
          CK(cudaMemcpy(&hy, y[k], 4, cudaMemcpyDeviceToHost));
          for (int j = 0; j < 3; ++j) CK(cudaMemcpy(&ho[j], o[k] + at[j], 4, cudaMemcpyDeviceToHost));
          const float d = hx - hy;
          for (int j = 0; j < 3; ++j)
            if (ho[j] != d * d) { std::printf("CHECK FAILED: %s o[%lld] = %g, want %g\n", cases[ci].first.c_str(), at[j], ho[j], d * d); return 1; }
          CK(cudaMemsetAsync(o[k], 0xff, bytes, st));  // poison for the next case
        }
        std::sort(t.begin(), t.end());
        med[ci].push_back(t[t.size() / 2]);
      }
    }
    std::printf("\nfp32 N = 2^%d; median us of each pass, and the copy's best median / this one's best\n", lg);
    const double copy = *std::min_element(med[0].begin(), med[0].end());
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      std::printf("  %-52s", cases[ci].first.c_str());
      for (double m : med[ci]) std::printf(" %8.2f", m);
      std::printf("   x copy %.3f\n", copy / *std::min_element(med[ci].begin(), med[ci].end()));
    }
    for (int k = 0; k < 2; ++k) { CK(cudaFree(x[k])); CK(cudaFree(y[k])); CK(cudaFree(o[k])); CK(cudaFree(c[k])); }
    CK(cudaFree(loss));
  }
  return 0;
}
