// Floor of a one-block reduction of 1024 floats, graph-replayed (20 launches
// per graph, median of 50 replays): what a lean kernel costs on this GPU.
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__global__ void empty_kernel() {}

__global__ void f32_kernel(const float4* x, const float4* y, float* out, int n) {
  __shared__ float part[8];
  int t = threadIdx.x;
  float4 a = x[t], b = y[t];
  float d0 = a.x - b.x, d1 = a.y - b.y, d2 = a.z - b.z, d3 = a.w - b.w;
  float s = d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3;
  for (int o = 16; o; o >>= 1) s += __shfl_down_sync(~0u, s, o);
  if ((t & 31) == 0) part[t >> 5] = s;
  __syncthreads();
  if (t < 32) {
    s = t < 8 ? part[t] : 0.f;
    for (int o = 4; o; o >>= 1) s += __shfl_down_sync(~0u, s, o);
    if (t == 0) *out = s / static_cast<float>(n);
  }
}

__global__ void f64_kernel(const float4* x, const float4* y, float* out, long long n) {
  __shared__ double part[8];
  int t = threadIdx.x;
  float4 a = x[t], b = y[t];
  float d0 = a.x - b.x, d1 = a.y - b.y, d2 = a.z - b.z, d3 = a.w - b.w;
  double s0 = fma((double)d0, (double)d0, 0.0), s1 = fma((double)d1, (double)d1, 0.0);
  double s2 = fma((double)d2, (double)d2, 0.0), s3 = fma((double)d3, (double)d3, 0.0);
  double s = (s0 + s1) + (s2 + s3);
  for (int o = 1; o < 32; o <<= 1) s += __shfl_down_sync(~0u, s, o);
  if ((t & 31) == 0) part[t >> 5] = s;
  __syncthreads();
  if (t < 32) {
    s = t < 8 ? part[t] : 0.0;
    for (int o = 1; o < 8; o <<= 1) s += __shfl_down_sync(~0u, s, o);
    if (t == 0) *out = static_cast<float>(s / static_cast<double>(n));
  }
}

struct Big {
  const float4* x; const float4* y; float* out; long long n; long long pad[72];
};
__global__ void f64_big_kernel(const Big p) {
  __shared__ double part[8];
  int t = threadIdx.x;
  float4 a = p.x[t], b = p.y[t];
  float d0 = a.x - b.x, d1 = a.y - b.y, d2 = a.z - b.z, d3 = a.w - b.w;
  double s0 = fma((double)d0, (double)d0, 0.0), s1 = fma((double)d1, (double)d1, 0.0);
  double s2 = fma((double)d2, (double)d2, 0.0), s3 = fma((double)d3, (double)d3, 0.0);
  double s = (s0 + s1) + (s2 + s3);
  for (int o = 1; o < 32; o <<= 1) s += __shfl_down_sync(~0u, s, o);
  if ((t & 31) == 0) part[t >> 5] = s;
  __syncthreads();
  if (t < 32) {
    s = t < 8 ? part[t] : 0.0;
    for (int o = 1; o < 8; o <<= 1) s += __shfl_down_sync(~0u, s, o);
    if (t == 0) *p.out = static_cast<float>(s / static_cast<double>(p.n));
  }
}

template <class F>
double graph_us(cudaStream_t s, F&& launch) {
  const int per = 20;
  cudaGraph_t g; cudaGraphExec_t e;
  launch(s); cudaStreamSynchronize(s);
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  for (int i = 0; i < per; ++i) launch(s);
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&e, g, 0);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<double> t;
  for (int i = 0; i < 60; ++i) {
    cudaEventRecord(a, s); cudaGraphLaunch(e, s); cudaEventRecord(b, s); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b); if (i >= 10) t.push_back(ms * 1e3 / per);
  }
  std::sort(t.begin(), t.end());
  cudaGraphExecDestroy(e); cudaGraphDestroy(g);
  return t[t.size() / 2];
}

int main() {
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *x, *y, *out; CK(cudaMalloc(&x, 4096)); CK(cudaMalloc(&y, 4096)); CK(cudaMalloc(&out, 16));
  CK(cudaMemset(x, 0, 4096)); CK(cudaMemset(y, 0, 4096));
  Big big{}; big.x = (const float4*)x; big.y = (const float4*)y; big.out = out; big.n = 1024;
  for (int rep = 0; rep < 2; ++rep) {
    printf("empty       %.3f us\n", graph_us(s, [&](cudaStream_t st) { empty_kernel<<<1, 256, 0, st>>>(); }));
    printf("f32 lean    %.3f us\n", graph_us(s, [&](cudaStream_t st) { f32_kernel<<<1, 256, 0, st>>>((const float4*)x, (const float4*)y, out, 1024); }));
    printf("f64 lean    %.3f us\n", graph_us(s, [&](cudaStream_t st) { f64_kernel<<<1, 256, 0, st>>>((const float4*)x, (const float4*)y, out, 1024); }));
    printf("f64 640B    %.3f us\n", graph_us(s, [&](cudaStream_t st) { f64_big_kernel<<<1, 256, 0, st>>>(big); }));
  }
  CK(cudaGetLastError());
  CK(cudaStreamSynchronize(s));
  return 0;
}
