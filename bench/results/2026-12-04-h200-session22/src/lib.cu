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
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <cuda_runtime.h>
#include <mseloss/mseloss.hpp>
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

template <bool kPdl>
__global__ void read_probe_kernel(const uint4* x, const uint4* y, std::int64_t n_vec, unsigned* sink) {
  if (kPdl) { asm volatile("griddepcontrol.wait;" ::: "memory"); asm volatile("griddepcontrol.launch_dependents;"); }
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
template <class T, int U, bool kPdl>
__global__ void __launch_bounds__(kThreads, 4) reg_kernel(const T* x, const T* y, int nchunks, int rows, double* partials) {
  if (kPdl) { asm volatile("griddepcontrol.wait;" ::: "memory"); asm volatile("griddepcontrol.launch_dependents;"); }
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



constexpr unsigned long long kEmpty = 0xfff8dead0000beefull;
__device__ __forceinline__ void post(double* slot, double v) {
  unsigned long long bits = __double_as_longlong(v);
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(slot), "l"(bits) : "memory");
}
__device__ __forceinline__ unsigned long long peek(const double* slot) {
  unsigned long long bits;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(bits) : "l"(slot) : "memory");
  return bits;
}
__device__ __forceinline__ int slot_of(int c, int L) { return (c & (L - 1)) * kThreads + (c >> (__ffs(L) - 1)); }


// The library's posted_tree (src/cuda/cuda_backend.cu), for mode 8.
template <int L>
__device__ __forceinline__ double lib_posted_tree(double* slots, std::int64_t K, int t) {
  const std::int64_t first = static_cast<std::int64_t>(t) * L;
  unsigned long long bits[L];
#pragma unroll
  for (int k = 0; k < L; ++k) bits[k] = first + k < K ? peek(&slots[k * kThreads + t]) : 0ull;
  for (;;) {
    bool any = false;
#pragma unroll
    for (int k = 0; k < L; ++k) any |= bits[k] == kEmpty;
    if (!any) break;
#pragma unroll
    for (int k = 0; k < L; ++k)
      if (bits[k] == kEmpty) bits[k] = peek(&slots[k * kThreads + t]);
  }
  double a[L];
#pragma unroll
  for (int k = 0; k < L; ++k) {
    a[k] = __longlong_as_double(bits[k]);
    if (first + k < K) __stcg(reinterpret_cast<unsigned long long*>(&slots[k * kThreads + t]), kEmpty);
  }
#pragma unroll
  for (int s = 1; s < L; s *= 2)
#pragma unroll
    for (int k = 0; k + s < L; k += 2 * s) a[k] = a[k] + a[k + s];
  return a[0];
}
// reg's loop with a finish. MODE 0: HEAD's (ticket after the last rows, last ticket
// finishes). 1: the ticket alone (the last block writes 0: its round trip's cost).
// 2: a fixed finisher, the block with chunk K-1, polling after its flush.
// 3: as 2, its slot loads issued before its last lane tree.
template <class T, int U, int MODE, int L>
__device__ __forceinline__ void fin_body(const T* x, const T* y, int nchunks, int rows, double* slots, unsigned* ticket, double* out, double inv_n, int fin_block, unsigned long long* stamps);
// MODE 4: MODE 0 with the library's stream-order entry (griddepcontrol.wait, launch_dependents).
template <class T, int U, int MODE, int L>
__global__ void __launch_bounds__(kThreads, 4) fin_kernel(const T* x, const T* y, int nchunks, int rows, double* slots, unsigned* ticket, double* out, double inv_n, int fin_block, unsigned long long* stamps) {
  if (MODE == 4) { asm volatile("griddepcontrol.wait;" ::: "memory"); asm volatile("griddepcontrol.launch_dependents;"); }
  fin_body<T, U, MODE == 4 ? 0 : MODE, L>(x, y, nchunks, rows, slots, ticket, out, inv_n, fin_block, stamps);
}
// MODE 0 with its arguments in one 640-byte struct, as the library passes KernelParams.
struct BigParams { const void* x; const void* y; int nchunks; int rows; double* slots; unsigned* ticket; double* out; double inv_n; int fin_block; unsigned long long* stamps; char pad[560]; };
template <class T, int L>
__global__ void __launch_bounds__(kThreads, 4) fin_big(const BigParams p) {
  fin_body<T, 4, 0, L>(static_cast<const T*>(p.x), static_cast<const T*>(p.y), p.nchunks, p.rows, p.slots, p.ticket, p.out, p.inv_n, p.fin_block, p.stamps);
}
template <class T, int U, int MODE, int L>
__device__ __forceinline__ void fin_body(const T* x, const T* y, int nchunks, int rows, double* slots, unsigned* ticket, double* out, double inv_n, int fin_block, unsigned long long* stamps) {
  constexpr int V = Tr<T>::V;
  constexpr int lanes = kThreads * V;
  __shared__ double warp_part[32][8];
  __shared__ int is_last;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int G = gridDim.x;
  const int finisher = fin_block >= 0 ? fin_block : (nchunks - 1) % G;
  if (tid == 0) is_last = (MODE == 2 || MODE == 3) && blockIdx.x == finisher;
  int nb = 0;
  unsigned long long bits[L];
  for (int c = blockIdx.x; c < nchunks; c += G) {
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
    const bool last_chunk = c + G >= nchunks;
    unsigned tk = 0;
    if ((MODE <= 1 || MODE == 6 || MODE == 8) && last_chunk && tid == 0) tk = atomicAdd(ticket, 1u);
    if (MODE == 3 && last_chunk && blockIdx.x == finisher) {
#pragma unroll
      for (int k = 0; k < L; ++k) bits[k] = peek(&slots[k * kThreads + tid]);
    }
    const double wv = lane_tree<V>(acc);
    if (lane == 0) warp_part[nb][warp] = wv;
    if ((MODE <= 1 || MODE == 6 || MODE == 8) && last_chunk && tid == 0) is_last = tk == G - 1;
    ++nb;
  }
  __syncthreads();
  if (tid < nb) {
    const double* w = warp_part[tid];
    const double v = ((w[0] + w[1]) + (w[2] + w[3])) + ((w[4] + w[5]) + (w[6] + w[7]));
    post(&slots[slot_of(blockIdx.x + tid * G, L)], v);
  }
  __syncthreads();
  if (stamps && tid == 0) { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); stamps[blockIdx.x] = t; }
  if (!is_last) return;
  if (MODE == 1) { if (tid == 0) { *out = 0.0; *ticket = 0; } return; }
  double v;
  if (MODE == 8) {
    const int K = nchunks; int K2 = 1; while (K2 < K) K2 <<= 1;
    switch (K2 > kThreads ? K2 / kThreads : 1) {
      case 16: v = lib_posted_tree<16>(slots, K, tid); break;
      case 8: v = lib_posted_tree<8>(slots, K, tid); break;
      case 4: v = lib_posted_tree<4>(slots, K, tid); break;
      case 2: v = lib_posted_tree<2>(slots, K, tid); break;
      default: v = lib_posted_tree<1>(slots, K, tid); break;
    }
  } else {
  if (MODE != 3) {
#pragma unroll
    for (int k = 0; k < L; ++k) bits[k] = peek(&slots[k * kThreads + tid]);
  }
  for (;;) {
    bool any = false;
#pragma unroll
    for (int k = 0; k < L; ++k) any |= bits[k] == kEmpty;
    if (!any) break;
#pragma unroll
    for (int k = 0; k < L; ++k) if (bits[k] == kEmpty) bits[k] = peek(&slots[k * kThreads + tid]);
  }
  double a[L];
#pragma unroll
  for (int k = 0; k < L; ++k) { a[k] = __longlong_as_double(bits[k]); __stcg(reinterpret_cast<unsigned long long*>(&slots[k * kThreads + tid]), kEmpty); }
#pragma unroll
  for (int s = 1; s < L; s *= 2)
#pragma unroll
    for (int k = 0; k + s < L; k += 2 * s) a[k] = a[k] + a[k + s];
  v = a[0];
  }
#pragma unroll
  for (int off = 1; off < 32; off *= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  if (lane == 0) warp_part[0][warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < 8 ? warp_part[0][lane] : 0.0;
#pragma unroll
    for (int off = 1; off < 8; off *= 2) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) { if (MODE == 6) { const double nn = (double)nchunks * rows * lanes; *reinterpret_cast<float*>(out) = (float)(v / nn); } else *out = v * inv_n; if (MODE == 0 || MODE == 6 || MODE == 8) *ticket = 0;
      if (stamps) { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); stamps[G] = t; } }
  }
}

static double host_loss(const std::vector<double>& parts, int K, double inv_n) {
  int K2 = 1; while (K2 < K) K2 *= 2;
  std::vector<double> a(K2, 0.0);
  for (int i = 0; i < K; ++i) a[i] = parts[i];
  for (int s = 1; s < K2; s *= 2) for (int k = 0; k + s < K2; k += 2 * s) a[k] = a[k] + a[k + s];
  return a[0] * inv_n;
}
template <class K, class... A>
static void launch(K kern, int grid, bool pdl, cudaStream_t st, A... a) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid); cfg.blockDim = dim3(kThreads); cfg.stream = st;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr; cfg.numAttrs = pdl ? 1 : 0;
  CK(cudaLaunchKernelEx(&cfg, kern, a...));
}

int main(int argc, char** argv) {
  const bool profile = argc > 1;
  const unsigned long long spin_ns = getenv("SPIN_NS") ? atoll(getenv("SPIN_NS")) : 20000;
  const bool quick = getenv("QUICK") != nullptr;
  printf("lead spin %llu ns\n", spin_ns);
  CK(cudaSetDevice(0));
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  printf("device %s, %d SMs\n", prop.name, sms);
  const int sets = 3, reps = 101;
  cudaStream_t st; CK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  unsigned* sink; CK(cudaMalloc(&sink, 4));
  double* parts; CK(cudaMalloc(&parts, 8 * 65536));
  float* out; CK(cudaMalloc(&out, 16));
  auto time_it = [&](auto launch_one) {
    std::vector<float> t;
    int rot = 0;
    for (int i = 0; i < reps + 5; ++i) {
      spin_kernel<<<1, 1, 0, st>>>(spin_ns);
      CK(cudaEventRecord(e0, st));
      launch_one(rot);
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
  for (int lg : {25, 26}) {
    if (profile && lg != 25) break;
    for (int dt = 0; dt < 2; ++dt) {
      const std::int64_t n = 1ll << lg;
      const int es = dt == 0 ? 4 : 2;
      const int V = 16 / es, lanes = kThreads * V;
      int rows = 8;
      while (n / ((std::int64_t)rows * lanes) > 4096) rows *= 2;
      const int nchunks = (int)(n / ((std::int64_t)rows * lanes));
      std::vector<void*> xs(sets), ys(sets);
      for (int s = 0; s < sets; ++s) { CK(cudaMalloc(&xs[s], n * es)); CK(cudaMalloc(&ys[s], n * es)); }
      {
        std::vector<uint32_t> h(n * es / 4);
        uint32_t z = 12345u + lg * 7 + dt;
        for (auto& w : h) { z ^= z << 13; z ^= z >> 17; z ^= z << 5; w = es == 4 ? (__builtin_bit_cast(uint32_t, (float)((z & 0xffffff) / 16777216.0f * 4.0f - 2.0f))) : ((z & 0x3fff3fffu) | 0x3c003c00u) ; }
        for (int s = 0; s < sets; ++s) { CK(cudaMemcpy(xs[s], h.data(), n * es, cudaMemcpyHostToDevice));
          for (auto& w : h) { z ^= z << 13; z ^= z >> 17; z ^= z << 5; w ^= (z & 0x007f007fu); }
          CK(cudaMemcpy(ys[s], h.data(), n * es, cudaMemcpyHostToDevice)); }
      }
      const char* tn = dt == 0 ? "fp32" : "bf16";
      const mseloss::DType mt = dt == 0 ? mseloss::DType::f32 : mseloss::DType::bf16;
      auto probe = [&](bool pdl) { return [&, pdl](int rot) {
        if (pdl) launch(read_probe_kernel<true>, sms * 4, true, st, (const uint4*)xs[rot], (const uint4*)ys[rot], (std::int64_t)(n * es / 16), sink);
        else launch(read_probe_kernel<false>, sms * 4, false, st, (const uint4*)xs[rot], (const uint4*)ys[rot], (std::int64_t)(n * es / 16), sink); }; };
      auto reg = [&](bool pdl) { return [&, pdl](int rot) {
        if (dt == 0) { if (pdl) launch(reg_kernel<float, 4, true>, sms * 4, true, st, (const float*)xs[rot], (const float*)ys[rot], nchunks, rows, parts);
                       else launch(reg_kernel<float, 4, false>, sms * 4, false, st, (const float*)xs[rot], (const float*)ys[rot], nchunks, rows, parts); }
        else { if (pdl) launch(reg_kernel<Bf16, 4, true>, sms * 4, true, st, (const Bf16*)xs[rot], (const Bf16*)ys[rot], nchunks, rows, parts);
               else launch(reg_kernel<Bf16, 4, false>, sms * 4, false, st, (const Bf16*)xs[rot], (const Bf16*)ys[rot], nchunks, rows, parts); } }; };
      auto lib = [&](bool pdl) { return [&, pdl](int rot) {
        mseloss::Options o; o.reduction = mseloss::Reduction::mean; o.stream = st; o.programmatic_launch = pdl;
        auto xv = mseloss::TensorView::contiguous(xs[rot], mt, {n}, mseloss::Device::cuda);
        auto yv = mseloss::TensorView::contiguous(ys[rot], mt, {n}, mseloss::Device::cuda);
        auto ov = mseloss::TensorView::scalar(out, mseloss::DType::f32, mseloss::Device::cuda);
        mseloss::forward(xv, yv, ov, o); }; };
      unsigned* ticket; CK(cudaMalloc(&ticket, 4)); CK(cudaMemset(ticket, 0, 4));
      double* slots; CK(cudaMalloc(&slots, 8 * 4096));
      // mode 7: the library's workspace layout, one allocation: 64 KiB (partials), the 4096 slots, the ticket
      char* wsbuf; CK(cudaMalloc(&wsbuf, 65536 + 32768 + 16)); CK(cudaMemset(wsbuf, 0, 65536 + 32768 + 16));
      double* slots7 = reinterpret_cast<double*>(wsbuf + 65536);
      unsigned* ticket7 = reinterpret_cast<unsigned*>(wsbuf + 65536 + 32768);
      { std::vector<unsigned long long> e(4096, kEmpty); CK(cudaMemcpy(slots7, e.data(), 8 * 4096, cudaMemcpyHostToDevice)); }
      { std::vector<unsigned long long> e(4096, kEmpty); CK(cudaMemcpy(slots, e.data(), 8 * 4096, cudaMemcpyHostToDevice)); }
      double* dout; CK(cudaMalloc(&dout, 8));
      const double inv_n = 1.0 / (double)n;
      const int L = nchunks / kThreads;  // 4096 -> 16, 2048 -> 8 (2^25, 2^26 here)
      using FT = void(*)(const void*, const void*, int, int, double*, unsigned*, double*, double, int, unsigned long long*);
      int fin_block = -1;
      unsigned long long* stamps_arg = nullptr;
      auto fin = [&](int mode) { return [&, mode](int rot) {
        double* sl = mode == 7 ? slots7 : slots;
        unsigned* tk = mode == 7 ? ticket7 : ticket;
        auto go = [&](auto kern) { launch(kern, sms * 4, false, st, (const void*)xs[rot], (const void*)ys[rot], nchunks, rows, sl, tk, dout, inv_n, fin_block, stamps_arg); };
        if (mode == 7) {
          if (dt == 0) { if (L == 16) go((FT)fin_kernel<float, 4, 0, 16>); else go((FT)fin_kernel<float, 4, 0, 8>); }
          else { if (L == 16) go((FT)fin_kernel<Bf16, 4, 0, 16>); else go((FT)fin_kernel<Bf16, 4, 0, 8>); }
          return;
        }
#define FIN_CASES(TT) \
        if (L == 16) { if (mode == 0) go((FT)fin_kernel<TT, 4, 0, 16>); \
          else if (mode == 1) go((FT)fin_kernel<TT, 4, 1, 16>); \
          else if (mode == 2) go((FT)fin_kernel<TT, 4, 2, 16>); \
          else go((FT)fin_kernel<TT, 4, 3, 16>); } \
        else { if (mode == 0) go((FT)fin_kernel<TT, 4, 0, 8>); \
          else if (mode == 1) go((FT)fin_kernel<TT, 4, 1, 8>); \
          else if (mode == 2) go((FT)fin_kernel<TT, 4, 2, 8>); \
          else go((FT)fin_kernel<TT, 4, 3, 8>); }
        if (mode == 4) {
          if (dt == 0) { if (L == 16) go((FT)fin_kernel<float, 4, 4, 16>); else go((FT)fin_kernel<float, 4, 4, 8>); }
          else { if (L == 16) go((FT)fin_kernel<Bf16, 4, 4, 16>); else go((FT)fin_kernel<Bf16, 4, 4, 8>); }
          return;
        }
        if (mode == 8) {
          if (dt == 0) { if (L == 16) go((FT)fin_kernel<float, 4, 8, 16>); else go((FT)fin_kernel<float, 4, 8, 8>); }
          else { if (L == 16) go((FT)fin_kernel<Bf16, 4, 8, 16>); else go((FT)fin_kernel<Bf16, 4, 8, 8>); }
          return;
        }
        if (mode == 6) {
          if (dt == 0) { if (L == 16) go((FT)fin_kernel<float, 4, 6, 16>); else go((FT)fin_kernel<float, 4, 6, 8>); }
          else { if (L == 16) go((FT)fin_kernel<Bf16, 4, 6, 16>); else go((FT)fin_kernel<Bf16, 4, 6, 8>); }
          return;
        }
        if (mode == 5) {
          BigParams bp{}; bp.x = xs[rot]; bp.y = ys[rot]; bp.nchunks = nchunks; bp.rows = rows; bp.slots = slots; bp.ticket = ticket; bp.out = dout; bp.inv_n = inv_n; bp.fin_block = -1; bp.stamps = nullptr;
          if (dt == 0) { if (L == 16) launch(fin_big<float, 16>, sms * 4, false, st, bp); else launch(fin_big<float, 8>, sms * 4, false, st, bp); }
          else { if (L == 16) launch(fin_big<Bf16, 16>, sms * 4, false, st, bp); else launch(fin_big<Bf16, 8>, sms * 4, false, st, bp); }
          return;
        }
        if (dt == 0) { FIN_CASES(float) } else { FIN_CASES(Bf16) }
      }; };
      if (profile) {  // one of each under ncu: reg, HEAD-like, the library (plain launch)
        for (int i = 0; i < 5; ++i) { reg(false)(i % sets); fin(0)(i % sets); lib(false)(i % sets); }
        CK(cudaStreamSynchronize(st));
        for (int s = 0; s < sets; ++s) { CK(cudaFree(xs[s])); CK(cudaFree(ys[s])); }
        continue;
      }
      // correctness: every finishing mode against the host tree of reg's partials
      for (int rot = 0; rot < sets; ++rot) {
        launch(reg_kernel<float, 4, false>, 1, false, st, (const float*)nullptr, (const float*)nullptr, 0, 0, parts);  // no-op warm
        if (dt == 0) launch(reg_kernel<float, 4, false>, sms * 4, false, st, (const float*)xs[rot], (const float*)ys[rot], nchunks, rows, parts);
        else launch(reg_kernel<Bf16, 4, false>, sms * 4, false, st, (const Bf16*)xs[rot], (const Bf16*)ys[rot], nchunks, rows, parts);
        CK(cudaStreamSynchronize(st));
        std::vector<double> ph(nchunks); CK(cudaMemcpy(ph.data(), parts, 8 * nchunks, cudaMemcpyDeviceToHost));
        const double want = host_loss(ph, nchunks, inv_n);
        for (int mode : {0, 2, 3, 4, 5, 6, 7, 8}) {
          for (int rep = 0; rep < 3; ++rep) {
            CK(cudaMemset(dout, 0xff, 8));
            fin(mode)(rot); CK(cudaStreamSynchronize(st)); CK(cudaGetLastError());
            double got; CK(cudaMemcpy(&got, dout, 8, cudaMemcpyDeviceToHost));
            if (mode == 6) {  // fl32(s / n), in the first 4 bytes
              float gf; std::memcpy(&gf, &got, 4);
              const float wf = (float)(host_loss(ph, nchunks, 1.0) / (double)n);
              if (gf != wf) { printf("MODE 6 set %d: WRONG %.9g want %.9g\n", rot, gf, wf); return 1; }
              continue;
            }
            if (got != want) { printf("MODE %d set %d: WRONG %.17g want %.17g\n", mode, rot, got, want); return 1; }
          }
        }
        {  // the library's loss against the same host tree: fl32(s / n)
          CK(cudaMemset(out, 0xff, 16));
          lib(false)(rot); CK(cudaStreamSynchronize(st));
          float lf; CK(cudaMemcpy(&lf, out, 4, cudaMemcpyDeviceToHost));
          const float wf = (float)(host_loss(ph, nchunks, 1.0) / (double)n);
          if (lf != wf) { printf("LIBRARY set %d: WRONG %.9g want %.9g\n", rot, lf, wf); return 1; }
          printf("2^%d %s set %d: the library gives the host tree's fl32(s / n) %.9g\n", lg, dt == 0 ? "fp32" : "bf16", rot, lf);
        }
        printf("2^%d %s set %d: modes 0, 2, 3, 4, 5, 6, 7, 8 give the host tree's loss %.17g\n", lg, dt == 0 ? "fp32" : "bf16", rot, want);
      }
      if (!quick) {
        const int G = sms * 4;
        unsigned long long* stamps; CK(cudaMalloc(&stamps, 8 * (G + 1)));
        std::vector<unsigned long long> hs(G + 1);
        const int owner = (nchunks - 1) % G;
        for (int mode : {0, 2}) {
          std::vector<int> last_ids; std::vector<double> owner_lag, fin_after_last;
          for (int rep = 0; rep < 21; ++rep) {
            stamps_arg = stamps; fin_block = -1;
            spin_kernel<<<1, 1, 0, st>>>(20000);
            fin(mode)(rep % sets); CK(cudaStreamSynchronize(st));
            stamps_arg = nullptr;
            CK(cudaMemcpy(hs.data(), stamps, 8 * (G + 1), cudaMemcpyDeviceToHost));
            int last = 0; unsigned long long t0 = ~0ull;
            for (int b = 0; b < G; ++b) { if (hs[b] > hs[last]) last = b; t0 = std::min(t0, hs[b]); }
            last_ids.push_back(last);
            owner_lag.push_back((double)(hs[last] - hs[owner]) / 1e3);
            fin_after_last.push_back(((double)hs[G] - (double)hs[last]) / 1e3);
          }
          printf("2^%d %s trace mode %d (owner of chunk K-1 = block %d, %d chunks; blocks with most chunks: 0..%d):\n  last block to flush:", lg, dt == 0 ? "fp32" : "bf16", mode, owner, (nchunks - 1) / G + 1, (nchunks - 1) % G);
          for (int v : last_ids) printf(" %d", v);
          printf("\n  owner's flush before the last flush (us):");
          for (double v : owner_lag) printf(" %.2f", v);
          printf("\n  loss written after the last flush (us):");
          for (double v : fin_after_last) printf(" %.2f", v);
          printf("\n");
        }
        CK(cudaFree(stamps));
        // a sweep of fixed finishers
        printf("2^%d %s fixed finisher sweep (us, median):", lg, dt == 0 ? "fp32" : "bf16");
        for (int fb : {owner, owner - 1, owner - 132, 0, 1, 131, 132, 263, 264, 395, 396, (owner + 1) % G, G - 1}) {
          if (fb < 0) continue;
          fin_block = fb;
          const float t = time_it(fin(2));
          printf(" [%d] %.2f", fb, t);
        }
        fin_block = -1;
        printf("\n");
      }
      {  // nodes of one captured library call; graph-replayed time per call (10 calls a graph) of the library and of fin(0)
        auto graph_of = [&](auto call, int calls) {
          cudaGraph_t g; cudaGraphExec_t ge;
          CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
          for (int i = 0; i < calls; ++i) call(i % sets);
          CK(cudaStreamEndCapture(st, &g));
          size_t nodes = 0; CK(cudaGraphGetNodes(g, nullptr, &nodes));
          CK(cudaGraphInstantiate(&ge, g, 0));
          return std::make_pair(ge, nodes);
        };
        auto replay_us = [&](cudaGraphExec_t ge, int calls) {
          for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(ge, st));
          std::vector<float> t;
          for (int i = 0; i < 21; ++i) {
            spin_kernel<<<1, 1, 0, st>>>(spin_ns);
            CK(cudaEventRecord(e0, st)); CK(cudaGraphLaunch(ge, st)); CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); t.push_back(ms * 1000.f / calls);
          }
          std::sort(t.begin(), t.end()); return t[t.size() / 2];
        };
        auto [g1, n1] = graph_of(lib(false), 1);
        printf("2^%d %s: one library call captures %zu graph node(s)\n", lg, tn, n1);
        auto [gl, nl] = graph_of(lib(false), 10);
        auto [gf, nf] = graph_of(fin(0), 10);
        auto [gr, nr] = graph_of(reg(false), 10);
        auto [gp, np] = graph_of(probe(false), 10);
        for (int rep = 0; rep < 2; ++rep)
          printf("2^%d %s graph-replayed us per call: probe %.2f reg %.2f HEAD-like %.2f library %.2f\n", lg, tn, replay_us(gp, 10), replay_us(gr, 10), replay_us(gf, 10), replay_us(gl, 10));
      }
      for (int pass = 0; pass < 3; ++pass) {
        const float pp = time_it(probe(false)), pq = time_it(probe(true));
        const float rp = time_it(reg(false)), rq = time_it(reg(true));
        const float lp = time_it(lib(false)), lq = time_it(lib(true));
        {
          double* pbuf; CK(cudaMalloc(&pbuf, 8 * mseloss::kMaxPartialsNumel));
          const std::int64_t pn = mseloss::partials_numel(n, mt);
          auto shard = [&](int rot) {
            mseloss::Options o; o.reduction = mseloss::Reduction::mean; o.stream = st; o.programmatic_launch = false;
            auto xv = mseloss::TensorView::contiguous(xs[rot], mt, {n}, mseloss::Device::cuda);
            auto yv = mseloss::TensorView::contiguous(ys[rot], mt, {n}, mseloss::Device::cuda);
            auto pv = mseloss::TensorView::contiguous(pbuf, mseloss::DType::f64, {pn}, mseloss::Device::cuda);
            mseloss::Shard sh; sh.global_numel = n; sh.offset = 0;
            mseloss::shard_partials(xv, yv, sh, pv, {}, {}, 1.0, o); };
          auto mset = [&](int) { CK(cudaMemsetAsync(pbuf, 0, sizeof(double) * pn, st)); };
          const float ts = time_it(shard), tm = time_it(mset), tr2 = time_it(reg(false)), tl2 = time_it(lib(false));
          printf("2^%d %s pass %d  library loop only (shard_partials: memset + loop) %.2f, the memset alone %.2f, difference %.2f | reg %.2f | library forward %.2f\n", lg, tn, pass, ts, tm, ts - tm, tr2, tl2);
          CK(cudaFree(pbuf));
        }
        const float f4 = time_it(fin(4)), f5 = time_it(fin(5)), f0b = time_it(fin(0));
        const float f6 = time_it(fin(6)), f7 = time_it(fin(7)), f8 = time_it(fin(8));
        printf("2^%d %s pass %d  HEAD-like finish: plain %.2f, with griddepcontrol %.2f, 640-byte params %.2f, loss as fl32(s / n) %.2f, workspace layout %.2f, library's finisher tree %.2f\n", lg, tn, pass, f0b, f4, f5, f6, f7, f8);
        const float f0 = time_it(fin(0)), f2 = time_it(fin(2)), f3 = time_it(fin(3)), f1 = time_it(fin(1));
        { std::vector<unsigned long long> e(4096, kEmpty); CK(cudaMemcpy(slots, e.data(), 8 * 4096, cudaMemcpyHostToDevice)); }  // mode 1 leaves its partials posted
        printf("2^%d %s pass %d  fin (x probe, +us over reg): head %.2f (%.3f, %+.2f) ticket-only %.2f (%.3f, %+.2f) fixed %.2f (%.3f, %+.2f) fixed-early %.2f (%.3f, %+.2f)\n",
               lg, tn, pass, f0, pp / f0, f0 - rp, f1, pp / f1, f1 - rp, f2, pp / f2, f2 - rp, f3, pp / f3, f3 - rp);
        {
          CK(cudaStreamSynchronize(st));
          auto h0 = std::chrono::steady_clock::now();
          for (int i = 0; i < 50; ++i) { spin_kernel<<<1, 1, 0, st>>>(200000); lib(false)(i % sets); }
          auto h1 = std::chrono::steady_clock::now();
          for (int i = 0; i < 50; ++i) { spin_kernel<<<1, 1, 0, st>>>(200000); fin(0)(i % sets); }
          auto h2 = std::chrono::steady_clock::now();
          CK(cudaStreamSynchronize(st));
          printf("  host us per (spin + call) enqueue: lib %.2f, fin %.2f\n", std::chrono::duration<double, std::micro>(h1 - h0).count() / 50, std::chrono::duration<double, std::micro>(h2 - h1).count() / 50);
        }
        printf("2^%d %s pass %d  plain: probe %.2f reg %.2f (%.3f) lib %.2f (%.3f)  | pdl: probe %.2f reg %.2f (%.3f) lib %.2f (%.3f)\n",
               lg, tn, pass, pp, rp, pp / rp, lp, pp / lp, pq, rq, pq / rq, lq, pq / lq);
      }
      for (int s = 0; s < sets; ++s) { CK(cudaFree(xs[s])); CK(cudaFree(ys[s])); }
    }
  }
  return 0;
}
