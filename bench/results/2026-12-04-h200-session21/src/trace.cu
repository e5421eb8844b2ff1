// Session 21 experiment: where the forward's last microseconds go (2^25).
// Per block: entry, last chunk folded, exit (globaltimer); the finisher's
// ticket known, tree loaded, loss written; the read probe's per-block entry
// and exit. Event time of each call behind a 50 us spin, as the bench does.
#include <cuda_runtime.h>
#include <mseloss/mseloss.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA %s line %d\n", cudaGetErrorString(e), __LINE__); std::exit(1); } } while (0)
extern "C" { extern unsigned long long* mseloss_exp_trace; extern int mseloss_exp_mode; unsigned mseloss_exp_peeks(); }

__device__ __forceinline__ unsigned long long gtime() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__global__ void spin(long long ns) { unsigned long long t0 = gtime(); while (gtime() - t0 < (unsigned long long)ns) {} }
__global__ void probe(const uint4* x, const uint4* y, long long n_vec, unsigned* sink, unsigned long long* tr) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (tr && threadIdx.x == 0) tr[blockIdx.x * 4] = gtime();
  constexpr int U = 4;
  unsigned acc = 0;
  const long long step = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * step < n_vec; i += U * step) {
    uint4 a[U], b[U];
#pragma unroll
    for (int u = 0; u < U; ++u) { a[u] = __ldcs(x + i + u * step); b[u] = __ldcs(y + i + u * step); }
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= a[u].x ^ a[u].y ^ a[u].z ^ a[u].w ^ b[u].x ^ b[u].y ^ b[u].z ^ b[u].w;
  }
  for (; i < n_vec; i += step) { uint4 a = __ldcs(x + i), b = __ldcs(y + i); acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w; }
  if (acc == 0x9e3779b9u) *sink = acc;
  __syncthreads();
  if (tr && threadIdx.x == 0) tr[blockIdx.x * 4 + 2] = gtime();
}
__global__ void fill(unsigned short* p, long long n, unsigned seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed * 40503u; h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    p[i] = 0x3c00 | (h & 0x3ff) ;  // fp16/bf16-ish finite values; for fp32 pairs give finite floats
  }
}
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 30;
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t s[2]; CK(cudaStreamCreate(&s[0])); CK(cudaStreamCreate(&s[1]));
  unsigned long long* tr; CK(cudaMalloc(&tr, 8 * 4 * 8192));
  unsigned* sink; CK(cudaMalloc(&sink, 4));
  float* out; CK(cudaMalloc(&out, 16));
  const long long n = 1ll << 25;
  struct Case { mseloss::DType t; int es; const char* name; };
  for (Case c : {Case{mseloss::DType::bf16, 2, "bf16"}, Case{mseloss::DType::f32, 4, "fp32"}}) {
    const size_t bytes = n * c.es;
    const int sets = std::max<int>(2, (int)((512ull << 20) / (2 * bytes)));
    std::vector<void*> xs(sets), ys(sets);
    for (int k = 0; k < sets; ++k) {
      CK(cudaMalloc(&xs[k], bytes)); CK(cudaMalloc(&ys[k], bytes));
      fill<<<1024, 256>>>((unsigned short*)xs[k], bytes / 2, 1 + 2 * k); fill<<<1024, 256>>>((unsigned short*)ys[k], bytes / 2, 2 + 2 * k);
    }
    CK(cudaDeviceSynchronize());
    int rot = 0;
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    auto call = [&](int mode, bool trace) {
      rot = (rot + 1) % sets;
      mseloss_exp_trace = trace ? tr : nullptr; mseloss_exp_mode = mode;
      mseloss::Options o; o.stream = s[mode == 1]; o.reduction = mseloss::Reduction::mean;
      mseloss::forward(mseloss::TensorView::contiguous(xs[rot], c.t, {n}, mseloss::Device::cuda),
                       mseloss::TensorView::contiguous(ys[rot], c.t, {n}, mseloss::Device::cuda),
                       mseloss::TensorView::contiguous(out, c.t == mseloss::DType::f32 ? mseloss::DType::f32 : c.t, {}, mseloss::Device::cuda), o);
    };
    auto run_probe = [&](cudaStream_t st, bool trace) {
      rot = (rot + 1) % sets;
      cudaLaunchConfig_t cfg{}; cfg.gridDim = dim3(sms * 4); cfg.blockDim = dim3(256); cfg.stream = st;
      cudaLaunchAttribute a{}; a.id = cudaLaunchAttributeProgrammaticStreamSerialization; a.val.programmaticStreamSerializationAllowed = 1;
      cfg.attrs = &a; cfg.numAttrs = 1;
      CK(cudaLaunchKernelEx(&cfg, probe, (const uint4*)xs[rot], (const uint4*)ys[rot], (long long)(bytes / 16), sink, trace ? tr : nullptr));
    };
    // kinds: 0 = mseloss mode 0, 1 = mseloss mode 1 (no ticket, no finish), 2 = probe; each with trace off (timing) and on (trace)
    std::vector<double> us[3], tus[3];
    std::vector<double> d_fold_exit[3], d_start_fold[3], d_ticket[3], d_tree[3], d_out[3], d_spread_start[3], d_spread_fold[3], d_span[3];
    const int G = 4 * sms;
    std::vector<unsigned long long> h(4 * (G + 1));
    for (int w = 0; w < 3; ++w) { call(0, false); call(1, false); run_probe(s[0], false); }
    CK(cudaDeviceSynchronize());
    mseloss_exp_peeks();
    for (int r = 0; r < reps; ++r) {
      for (int kind = 0; kind < 3; ++kind) {
        for (int trace = 0; trace < 2; ++trace) {
          cudaStream_t st = kind == 1 ? s[1] : s[0];
          if (trace) CK(cudaMemsetAsync(tr, 0, 8 * 4 * (G + 1), st));
          spin<<<1, 1, 0, st>>>(50000);
          CK(cudaEventRecord(e0, st));
          if (kind == 2) run_probe(st, trace); else call(kind, trace);
          CK(cudaEventRecord(e1, st));
          CK(cudaStreamSynchronize(st));
          float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
          (trace ? tus : us)[kind].push_back(ms * 1000.0);
          if (!trace) continue;
          CK(cudaMemcpy(h.data(), tr, 8 * 4 * (G + 1), cudaMemcpyDeviceToHost));
          unsigned long long s0 = ~0ull, s1 = 0, f0 = ~0ull, f1 = 0, x1 = 0;
          for (int b = 0; b < G; ++b) {
            s0 = std::min(s0, h[4 * b]); s1 = std::max(s1, h[4 * b]);
            if (kind != 2) { f0 = std::min(f0, h[4 * b + 1]); f1 = std::max(f1, h[4 * b + 1]); }
            x1 = std::max(x1, h[4 * b + 2]);
          }
          if (kind == 2) { f1 = 0; for (int b = 0; b < G; ++b) f1 = std::max(f1, h[4 * b + 2]); f0 = f1; }
          d_spread_start[kind].push_back((s1 - s0) / 1e3);
          d_start_fold[kind].push_back((f1 - s0) / 1e3);
          d_spread_fold[kind].push_back((f1 - f0) / 1e3);
          d_span[kind].push_back((x1 - s0) / 1e3);
          d_fold_exit[kind].push_back(((double)x1 - (double)f1) / 1e3);
          if (kind == 0) {
            d_ticket[kind].push_back(((double)h[4 * G + 0] - (double)f1) / 1e3);
            d_tree[kind].push_back(((double)h[4 * G + 1] - (double)h[4 * G + 0]) / 1e3);
            d_out[kind].push_back(((double)h[4 * G + 2] - (double)h[4 * G + 1]) / 1e3);
          }
        }
      }
    }
    const char* names[3] = {"mseloss", "no-end", "probe"};
    std::printf("%s 2^25 mean, %d reps (median; us): peek rounds max %u\n", c.name, reps, mseloss_exp_peeks());
    for (int k = 0; k < 3; ++k) {
      std::printf("  %-8s event %.3f (traced %.3f)  start spread %.3f  start->last fold %.3f  fold spread %.3f  last fold->last exit %.3f  span %.3f",
                  names[k], med(us[k]), med(tus[k]), med(d_spread_start[k]), med(d_start_fold[k]), med(d_spread_fold[k]), med(d_fold_exit[k]), med(d_span[k]));
      if (k == 0) std::printf("  | finisher: last fold->ticket known %.3f  ->tree loaded %.3f  ->out %.3f", med(d_ticket[k]), med(d_tree[k]), med(d_out[k]));
      std::printf("\n");
    }
    // raw per-rep rows for the untraced event times
    std::printf("  event us per rep (mseloss/no-end/probe):");
    for (int r = 0; r < reps; ++r) std::printf(" %.2f/%.2f/%.2f", us[0][r], us[1][r], us[2][r]);
    std::printf("\n");
    for (int k = 0; k < sets; ++k) { CK(cudaFree(xs[k])); CK(cudaFree(ys[k])); }
  }
  return 0;
}
