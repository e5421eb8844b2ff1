// Session 22 experiment: does a bulk-copy (TMA, cp.async.bulk) pipeline keep the
// forward's main loop at the read probe where the register loop (HEAD's) does not?
// Three kernels over the same bytes, no finish in any (per-chunk partials stored):
//   probe      - the bench's read probe (grid-strided, 4 rows of 16-byte loads)
//   reg<T>     - HEAD's loop: chunk per block, 4 rows of loads per round, fp64 lane sums
//   tma<T,S,RS>- the same folds, rows arriving through S stages of RS rows (x and y)
//                in shared memory filled by one thread's bulk copies on mbarriers
// Timed with events behind a GPU spin, median of 101, three rotating buffer sets.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

constexpr int kThreads = 256;
struct Bf16 { uint16_t b; };

template <class T> struct Tr;
template <> struct Tr<float> { static constexpr int V = 4;
  __device__ static void unpack(const uint4& w, float* f) { f[0]=__uint_as_float(w.x); f[1]=__uint_as_float(w.y); f[2]=__uint_as_float(w.z); f[3]=__uint_as_float(w.w);} };
template <> struct Tr<Bf16> { static constexpr int V = 8;
  __device__ static void unpack(const uint4& w, float* f) { const unsigned u[4]={w.x,w.y,w.z,w.w};
#pragma unroll
    for (int k=0;k<4;++k){ f[2*k]=__uint_as_float(u[k]<<16); f[2*k+1]=__uint_as_float(u[k]&0xffff0000u);} } };

template <class T>
__device__ __forceinline__ void fold(double* acc, const uint4& xw, const uint4& yw) {
  constexpr int V = Tr<T>::V;
  float a[V], b[V];
  Tr<T>::unpack(xw, a); Tr<T>::unpack(yw, b);
#pragma unroll
  for (int v = 0; v < V; ++v) { const double d = (double)(a[v] - b[v]); acc[v] = fma(d, d, acc[v]); }
}

template <int V>
__device__ __forceinline__ double lane_tree(double* acc) {
#pragma unroll
  for (int s = 1; s < V; s *= 2)
#pragma unroll
    for (int k = 0; k + s < V; k += 2 * s) acc[k] = acc[k] + acc[k + s];
  double v = acc[0];
#pragma unroll
  for (int off = 1; off < 32; off *= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

__device__ __forceinline__ void spin_ns(unsigned long long ns) {
  unsigned long long t0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (;;) { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); if (t - t0 > ns) break; }
}
__global__ void spin_kernel(unsigned long long ns) { spin_ns(ns); }

__global__ void read_probe_kernel(const uint4* x, const uint4* y, std::int64_t n_vec, unsigned* sink) {
  constexpr int U = 4;
  unsigned acc = 0;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * step < n_vec; i += U * step) {
    uint4 a[U], b[U];
#pragma unroll
    for (int u = 0; u < U; ++u) { a[u] = __ldcs(x + i + u * step); b[u] = __ldcs(y + i + u * step); }
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= a[u].x ^ a[u].y ^ a[u].z ^ a[u].w ^ b[u].x ^ b[u].y ^ b[u].z ^ b[u].w;
  }
  for (; i < n_vec; i += step) { uint4 a = __ldcs(x + i), b = __ldcs(y + i); acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w; }
  if (acc == 0x9e3779b9u) *sink = acc;
}

// HEAD's loop shape: chunk c = blockIdx.x + k grid, rows of 16-byte vectors, U rows
// of x and y in flight, then folded; per chunk the lane tree; per-chunk partial
// written by the block's flush at the end (at most kBatch chunks per block here).
template <class T, int U>
__global__ void __launch_bounds__(kThreads, 4) reg_kernel(const T* x, const T* y, int nchunks, int rows, double* partials) {
  constexpr int V = Tr<T>::V;
  constexpr int lanes = kThreads * V;
  __shared__ double warp_part[32][8];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  int nb = 0;
  for (int c = blockIdx.x; c < nchunks; c += gridDim.x) {
    double acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = 0.0;
    const std::int64_t start = (std::int64_t)c * rows * lanes;
    for (int r0 = 0; r0 < rows; r0 += U) {
      uint4 xr[U], yr[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        xr[u] = __ldcs(reinterpret_cast<const uint4*>(x + start + (r0 + u) * lanes + tid * V));
        yr[u] = __ldcs(reinterpret_cast<const uint4*>(y + start + (r0 + u) * lanes + tid * V));
      }
#pragma unroll
      for (int u = 0; u < U; ++u) fold<T>(acc, xr[u], yr[u]);
    }
    const double wv = lane_tree<V>(acc);
    if (lane == 0) warp_part[nb][warp] = wv;
    ++nb;
  }
  __syncthreads();
  if (tid < nb) {
    const double* w = warp_part[tid];
    const double v = ((w[0] + w[1]) + (w[2] + w[3])) + ((w[4] + w[5]) + (w[6] + w[7]));
    __stcg(&partials[blockIdx.x + tid * gridDim.x], v);
  }
}

__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(unsigned long long* bar, unsigned parity) {
  unsigned ok;
  asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
               : "=r"(ok) : "r"(smem_addr(bar)), "r"(parity) : "memory");
  return ok != 0;
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, unsigned long long* bar, std::uint64_t policy) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
               ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy) : "memory");
}

// The same folds with rows through S stages of RS rows of x and y in shared
// memory. Unit u of this block = RS rows of its chunk k = u / P, part u % P.
// kMath = false: xor only (a bulk-copy read probe).
template <class T, int S, int RS, bool kMath>
__global__ void __launch_bounds__(kThreads) tma_kernel(const T* x, const T* y, int nchunks, int rows, double* partials, unsigned* sink) {
  constexpr int V = Tr<T>::V;
  constexpr int lanes = kThreads * V;
  constexpr unsigned kStageArrayBytes = RS * kThreads * 16;
  extern __shared__ __align__(128) uint4 buf[];  // [S][2][RS][kThreads]
  __shared__ unsigned long long full[S];
  __shared__ double warp_part[32][8];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int P = rows / RS;
  const int nk = blockIdx.x < nchunks ? (nchunks - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  const int units = nk * P;
  std::uint64_t policy = 0;
  auto issue = [&](int u) {
    const int s = u % S;
    const int k = u / P, part = u - k * P;
    const std::int64_t off = ((std::int64_t)(blockIdx.x + k * gridDim.x) * rows + part * RS) * lanes;
    mbar_expect(&full[s], 2 * kStageArrayBytes);
    bulk_copy(&buf[(2 * s + 0) * RS * kThreads], x + off, kStageArrayBytes, &full[s], policy);
    bulk_copy(&buf[(2 * s + 1) * RS * kThreads], y + off, kStageArrayBytes, &full[s], policy);
  };
  if (tid == 0) {
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#pragma unroll
    for (int s = 0; s < S; ++s) mbar_init(&full[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (int u = 0; u < S && u < units; ++u) issue(u);
  }
  __syncthreads();
  double acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = 0.0;
  unsigned xr = 0;
  int nb = 0;
  for (int u = 0; u < units; ++u) {
    const int s = u % S;
    const unsigned parity = (u / S) & 1;
    while (!mbar_try_wait(&full[s], parity)) {}
    const uint4* xs = &buf[(2 * s + 0) * RS * kThreads + tid];
    const uint4* ys = &buf[(2 * s + 1) * RS * kThreads + tid];
    uint4 xw[RS], yw[RS];
#pragma unroll
    for (int r = 0; r < RS; ++r) { xw[r] = xs[r * kThreads]; yw[r] = ys[r * kThreads]; }
    __syncthreads();  // every thread has read stage s: refill it
    if (tid == 0 && u + S < units) issue(u + S);
#pragma unroll
    for (int r = 0; r < RS; ++r) {
      if (kMath) fold<T>(acc, xw[r], yw[r]);
      else xr ^= xw[r].x ^ xw[r].y ^ xw[r].z ^ xw[r].w ^ yw[r].x ^ yw[r].y ^ yw[r].z ^ yw[r].w;
    }
    if (kMath && (u + 1) % P == 0) {
      const double wv = lane_tree<V>(acc);
      if (lane == 0) warp_part[nb][warp] = wv;
      ++nb;
#pragma unroll
      for (int v = 0; v < V; ++v) acc[v] = 0.0;
    }
  }
  if (!kMath) { if (xr == 0x9e3779b9u) *sink = xr; return; }
  __syncthreads();
  if (tid < nb) {
    const double* w = warp_part[tid];
    const double v = ((w[0] + w[1]) + (w[2] + w[3])) + ((w[4] + w[5]) + (w[6] + w[7]));
    __stcg(&partials[blockIdx.x + tid * gridDim.x], v);
  }
}

// CPU oracle of the chunk partials (same lane order, fp64 lane sums; plain adds
// in the trees: the experiment compares the kernels with each other).
template <class T>
static bool same_partials(const std::vector<double>& a, const std::vector<double>& b, int n) {
  for (int i = 0; i < n; ++i) if (a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i])) { printf("  mismatch at %d: %.17g vs %.17g\n", i, a[i], b[i]); return false; }
  return true;
}

int main(int argc, char** argv) {
  int dev = 0; CK(cudaSetDevice(dev));
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, dev));
  const int sms = prop.multiProcessorCount;
  printf("device %s, %d SMs, L2 %d MB\n", prop.name, sms, prop.l2CacheSize >> 20);
  const int sets = 3, reps = 101;
  cudaStream_t st; CK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  unsigned* sink; CK(cudaMalloc(&sink, 4));
  double* parts; CK(cudaMalloc(&parts, 8 * 65536));
  double* parts_ref; CK(cudaMalloc(&parts_ref, 8 * 65536));
  auto time_it = [&](auto launch) {
    std::vector<float> t;
    int rot = 0;
    for (int i = 0; i < reps + 5; ++i) {
      spin_kernel<<<1, 1, 0, st>>>(20000);
      CK(cudaEventRecord(e0, st));
      launch(rot);
      CK(cudaEventRecord(e1, st));
      CK(cudaEventSynchronize(e1));
      float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
      if (i >= 5) t.push_back(ms * 1000.f);
      rot = (rot + 1) % sets;
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  for (int lg : {25, 26, 28}) {
    for (int dt = 0; dt < 2; ++dt) {
      const std::int64_t n = 1ll << lg;
      const int es = dt == 0 ? 4 : 2;
      const int V = 16 / es, lanes = kThreads * V;
      int rows = 8;
      while (n / ((std::int64_t)rows * lanes) > 4096) rows *= 2;
      const int nchunks = (int)(n / ((std::int64_t)rows * lanes));
      std::vector<void*> xs(sets), ys(sets);
      for (int s = 0; s < sets; ++s) {
        CK(cudaMalloc(&xs[s], n * es)); CK(cudaMalloc(&ys[s], n * es));
        // random-ish data: fill with a hash via a host buffer once for set 0, copy to others
      }
      {
        std::vector<uint32_t> h(n * es / 4);
        uint32_t z = 12345u + lg * 7 + dt;
        for (auto& w : h) { z ^= z << 13; z ^= z >> 17; z ^= z << 5; w = es == 4 ? (__builtin_bit_cast(uint32_t, (float)((z & 0xffffff) / 16777216.0f * 4.0f - 2.0f))) : ((z & 0x3fff3fffu) | 0x3c003c00u) ; }
        for (int s = 0; s < sets; ++s) { CK(cudaMemcpy(xs[s], h.data(), n * es, cudaMemcpyHostToDevice));
          for (auto& w : h) { z ^= z << 13; z ^= z >> 17; z ^= z << 5; w ^= (z & 0x007f007fu); }
          CK(cudaMemcpy(ys[s], h.data(), n * es, cudaMemcpyHostToDevice)); }
      }
      const double bytes = 2.0 * n * es;
      const char* tn = dt == 0 ? "fp32" : "bf16";
      auto probe = [&](int rot) { read_probe_kernel<<<sms * 4, 256, 0, st>>>((const uint4*)xs[rot], (const uint4*)ys[rot], (std::int64_t)(n * es / 16), sink); };
      auto reg = [&](int rot) {
        if (dt == 0) reg_kernel<float, 4><<<sms * 4, 256, 0, st>>>((const float*)xs[rot], (const float*)ys[rot], nchunks, rows, parts);
        else reg_kernel<Bf16, 4><<<sms * 4, 256, 0, st>>>((const Bf16*)xs[rot], (const Bf16*)ys[rot], nchunks, rows, parts);
      };
      // reference partials from reg on set 0
      reg(0); CK(cudaStreamSynchronize(st)); CK(cudaGetLastError());
      std::vector<double> ref(nchunks);
      // partial slot of chunk c: blockIdx.x + k*grid == c, i.e. slot c
      CK(cudaMemcpy(ref.data(), parts, 8 * nchunks, cudaMemcpyDeviceToHost));
      const int reps_pass = 3;
      for (int pass = 0; pass < reps_pass; ++pass) {
        const float tp = time_it(probe);
        const float tr = time_it(reg);
        printf("2^%d %s pass %d: probe %.2f us (%.0f GB/s) | reg %.2f us = %.3f x probe\n", lg, tn, pass, tp, bytes / tp / 1e3, tr, tp / tr);
        auto run_tma = [&](auto kern, int S, int RS, const char* name, bool math) {
          const int smem = S * 2 * RS * kThreads * 16;
          CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
          int per_sm = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, kThreads, smem));
          if (per_sm == 0) { printf("  %s: does not fit\n", name); return; }
          const int grid = per_sm * sms;
          auto launch = [&](int rot) {
            void* args[] = {&xs[rot], &ys[rot], (void*)&nchunks, (void*)&rows, &parts, &sink};
            CK(cudaLaunchKernel((const void*)kern, grid, kThreads, args, smem, st));
          };
          if (math) {
            CK(cudaMemset(parts, 0xff, 8 * nchunks));
            launch(0); CK(cudaStreamSynchronize(st)); CK(cudaGetLastError());
            std::vector<double> got(nchunks);
            // slot layout differs with grid: chunk c = b + k grid sits at slot b + k grid = c. Same.
            CK(cudaMemcpy(got.data(), parts, 8 * nchunks, cudaMemcpyDeviceToHost));
            if (!same_partials<float>(ref, got, nchunks)) { printf("  %s: WRONG partials\n", name); return; }
          }
          const float t = time_it(launch);
          printf("  %-22s %d/SM smem %6d: %.2f us = %.3f x probe, %.3f x reg\n", name, per_sm, smem, t, tp / t, tr / t);
        };
        if (dt == 0) {
          run_tma(tma_kernel<float, 3, 4, false>, 3, 4, "tma-probe S3 RS4", false);
          run_tma(tma_kernel<float, 3, 4, true>, 3, 4, "tma S3 RS4", true);
          run_tma(tma_kernel<float, 6, 2, true>, 6, 2, "tma S6 RS2", true);
          run_tma(tma_kernel<float, 4, 4, true>, 4, 4, "tma S4 RS4", true);
          run_tma(tma_kernel<float, 6, 4, true>, 6, 4, "tma S6 RS4", true);
          run_tma(tma_kernel<float, 4, 2, true>, 4, 2, "tma S4 RS2", true);
        } else {
          run_tma(tma_kernel<Bf16, 3, 4, false>, 3, 4, "tma-probe S3 RS4", false);
          run_tma(tma_kernel<Bf16, 3, 4, true>, 3, 4, "tma S3 RS4", true);
          run_tma(tma_kernel<Bf16, 6, 2, true>, 6, 2, "tma S6 RS2", true);
          run_tma(tma_kernel<Bf16, 4, 4, true>, 4, 4, "tma S4 RS4", true);
          run_tma(tma_kernel<Bf16, 6, 4, true>, 6, 4, "tma S6 RS4", true);
          run_tma(tma_kernel<Bf16, 4, 2, true>, 4, 2, "tma S4 RS2", true);
        }
      }
      for (int s = 0; s < sets; ++s) { CK(cudaFree(xs[s])); CK(cudaFree(ys[s])); }
    }
  }
  return 0;
}
