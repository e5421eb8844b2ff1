// Session 21: does a kernel's parameter size cost launch time? Empty-ish kernels (PDL entry as the
// library's, one store per block) with 16 to 4096 bytes of parameters, 528 x 256 and 1 x 256
// threads; event time behind a 50 us spin (median of 41) and graph replay (20 launches per graph).
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
__device__ __forceinline__ unsigned long long gtime() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__global__ void spin(long long ns) { unsigned long long t0 = gtime(); while (gtime() - t0 < (unsigned long long)ns) {} }
template <int B> struct P { unsigned* out; char pad[B - 8]; };
template <int B> __global__ void k(const P<B> p) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (threadIdx.x == 0) p.out[blockIdx.x] = p.pad[blockIdx.x % (B - 8)];
}
template <int B> int measure(int grid, unsigned* out, cudaStream_t s) {
  P<B> p{}; p.out = out;
  cudaLaunchConfig_t cfg{}; cfg.gridDim = dim3(grid); cfg.blockDim = dim3(256); cfg.stream = s;
  cudaLaunchAttribute a{}; a.id = cudaLaunchAttributeProgrammaticStreamSerialization; a.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &a; cfg.numAttrs = 1;
  auto launch = [&] { return cudaLaunchKernelEx(&cfg, k<B>, p); };
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (int i = 0; i < 5; ++i) CK(launch());
  std::vector<float> ev;
  for (int r = 0; r < 41; ++r) {
    spin<<<1, 1, 0, s>>>(50000);
    CK(cudaEventRecord(e0, s)); CK(launch()); CK(cudaEventRecord(e1, s)); CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ev.push_back(ms * 1e3f);
  }
  std::sort(ev.begin(), ev.end());
  cudaGraph_t g; cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 20; ++i) CK(launch());
  CK(cudaStreamEndCapture(s, &g)); CK(cudaGraphInstantiate(&ge, g, 0));
  for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(ge, s));
  std::vector<float> gr;
  for (int r = 0; r < 21; ++r) {
    CK(cudaEventRecord(e0, s)); CK(cudaGraphLaunch(ge, s)); CK(cudaEventRecord(e1, s)); CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); gr.push_back(ms * 1e3f / 20);
  }
  std::sort(gr.begin(), gr.end());
  std::printf("params %5d B  grid %4d  event %.3f us (p20 %.3f p80 %.3f)  graph-replayed %.3f us\n", B, grid, ev[20], ev[8], ev[32], gr[10]);
  return 0;
}
int main() {
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned* out; CK(cudaMalloc(&out, 4 * 4096));
  cudaStream_t s; CK(cudaStreamCreate(&s));
  for (int rep = 0; rep < 2; ++rep)
    for (int grid : {4 * sms, 1}) {
      if (measure<16>(grid, out, s) || measure<128>(grid, out, s) || measure<256>(grid, out, s) || measure<640>(grid, out, s) ||
          measure<1024>(grid, out, s) || measure<4096>(grid, out, s)) return 1;
    }
  return 0;
}
