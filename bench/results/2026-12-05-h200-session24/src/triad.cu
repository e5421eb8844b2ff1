// Session 24: the training step's traffic (read x and y, write one array) on the H200:
// a device copy of the same bytes, the read and write halves alone, read-2-write-1 kernels
// (triads) of several shapes, and the library's fused mean and `none` forward, in turn.
#include <cuda_runtime.h>
#include <mseloss/mseloss.hpp>
#include <algorithm>
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

// Reads x and y (n4 vectors each), 4 of each in flight per thread, a grid's width apart.
__global__ void read_probe(const float4* x, const float4* y, long long n4, float* sink) {
  float acc = 0;
  const long long w = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * w < n4; i += 4 * w) {
    float4 a[4], b[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) { a[u] = __ldcs(x + i + u * w); b[u] = __ldcs(y + i + u * w); }
#pragma unroll
    for (int u = 0; u < 4; ++u) acc += a[u].x + a[u].y + a[u].z + a[u].w + b[u].x + b[u].y + b[u].z + b[u].w;
  }
  for (; i < n4; i += w) { float4 a = __ldcs(x + i), b = __ldcs(y + i); acc += a.x + a.w + b.x + b.w; }
  if (acc == 1234.5f) *sink = acc;
}

// Writes o (n4 vectors), 4 in flight per thread, a grid's width apart.
template <bool kStreaming>
__global__ void write_only(float4* o, long long n4) {
  const long long w = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const float v = (float)threadIdx.x;
  for (; i < n4; i += w) {
    float4 q = make_float4(v, v, v, v);
    if (kStreaming) __stcs(o + i, q); else o[i] = q;
  }
}

__device__ __forceinline__ float4 grad(float4 a, float4 b, float s) {
  return make_float4(2.f * (a.x - b.x) * s, 2.f * (a.y - b.y) * s, 2.f * (a.z - b.z) * s, 2.f * (a.w - b.w) * s);
}

// o = 2 (x - y) s. kSpread: U vectors in flight, a grid's width apart; else U contiguous vectors
// of a block's tile (U rows of kThreads vectors). kStreaming: __stcs, else plain stores.
template <int U, bool kSpread, bool kStreaming>
__global__ void triad(const float4* x, const float4* y, float4* o, long long n4, float s) {
  const long long w = (long long)gridDim.x * blockDim.x;
  long long i0 = kSpread ? (long long)blockIdx.x * blockDim.x + threadIdx.x : (long long)blockIdx.x * blockDim.x * U + threadIdx.x;
  const long long step = (long long)U * w;
  for (; i0 + (kSpread ? (U - 1) * w : (U - 1) * (long long)blockDim.x) < n4; i0 += step) {
    float4 a[U], b[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long i = kSpread ? i0 + u * w : i0 + u * (long long)blockDim.x;
      a[u] = __ldcs(x + i); b[u] = __ldcs(y + i);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long i = kSpread ? i0 + u * w : i0 + u * (long long)blockDim.x;
      if (kStreaming) __stcs(o + i, grad(a[u], b[u], s)); else o[i] = grad(a[u], b[u], s);
    }
  }
  // the rest (n4 is a multiple of the tile here; kept for safety)
  for (long long i = n4 / step * step + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += w)
    o[i] = grad(x[i], y[i], s);
}

template <class K> int grid_of(K k) {
  int dev, sms, per;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, kThreads, 0));
  return sms * per;
}

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 51;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float* sink;
  CK(cudaMalloc(&sink, 4));
  int dev;
  CK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("# %s, %d SMs, runs %d, 2 rotating sets, 50 us GPU lead before each timed call\n", prop.name, prop.multiProcessorCount, runs);
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
        {"memcpy 6N bytes (the step's bytes)", [&](int k) { CK(cudaMemcpyAsync(c[k], c[k ^ 1], bytes * 3 / 2, cudaMemcpyDeviceToDevice, st)); }},
        {"read probe x,y (2N)", [&](int k) { read_probe<<<grid_of(read_probe), kThreads, 0, st>>>((float4*)x[k], (float4*)y[k], n4, sink); }},
        {"write-only N, st.cs", [&](int k) { write_only<true><<<grid_of(write_only<true>), kThreads, 0, st>>>((float4*)o[k], n4); }},
        {"write-only N, st", [&](int k) { write_only<false><<<grid_of(write_only<false>), kThreads, 0, st>>>((float4*)o[k], n4); }},
        {"triad 1 vector, st.cs", [&](int k) { triad<1, true, true><<<grid_of(triad<1, true, true>), kThreads, 0, st>>>((float4*)x[k], (float4*)y[k], (float4*)o[k], n4, 0.5f); }},
        {"triad spread 4, st.cs", [&](int k) { triad<4, true, true><<<grid_of(triad<4, true, true>), kThreads, 0, st>>>((float4*)x[k], (float4*)y[k], (float4*)o[k], n4, 0.5f); }},
        {"triad spread 4, st", [&](int k) { triad<4, true, false><<<grid_of(triad<4, true, false>), kThreads, 0, st>>>((float4*)x[k], (float4*)y[k], (float4*)o[k], n4, 0.5f); }},
        {"triad spread 8, st.cs", [&](int k) { triad<8, true, true><<<grid_of(triad<8, true, true>), kThreads, 0, st>>>((float4*)x[k], (float4*)y[k], (float4*)o[k], n4, 0.5f); }},
        {"triad tile 4, st.cs", [&](int k) { triad<4, false, true><<<grid_of(triad<4, false, true>), kThreads, 0, st>>>((float4*)x[k], (float4*)y[k], (float4*)o[k], n4, 0.5f); }},
        {"mseloss fused mean (loss + grad)", [&](int k) {
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
    // the fused pass's loss, checked against the host: x - y is the same constant everywhere
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
        std::sort(t.begin(), t.end());
        med[ci].push_back(t[t.size() / 2]);
      }
    }
    std::printf("\nfp32 N = 2^%d (x, y: %zu MiB each); median us per pass, and the step's bytes (12N) / time\n", lg, bytes >> 20);
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      std::printf("  %-36s", cases[ci].first.c_str());
      for (double m : med[ci]) std::printf(" %8.2f", m);
      const double best = *std::min_element(med[ci].begin(), med[ci].end());
      std::printf("   %5.2f TB/s at 12N\n", 12.0 * n / best / 1e6);
    }
    float l;
    CK(cudaMemcpy(&l, loss, 4, cudaMemcpyDeviceToHost));
    float hx, hy;
    CK(cudaMemcpy(&hx, x[0], 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&hy, y[0], 4, cudaMemcpyDeviceToHost));
    const float d = hx - hy;
    std::printf("  check: fused loss %.9g, (x - y)^2 on the host %.9g\n", l, (double)d * d);
    for (int k = 0; k < 2; ++k) { CK(cudaFree(x[k])); CK(cudaFree(y[k])); CK(cudaFree(o[k])); CK(cudaFree(c[k])); }
    CK(cudaFree(loss));
  }
  return 0;
}
