// Does the fused pass's time depend on where x, y and the gradient lie? (session 20 experiment)
#include <mseloss/mseloss.hpp>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
__global__ void spin(long long cycles) { long long t = clock64(); while (clock64() - t < cycles) {} }
template <class F> float per_call_us(cudaStream_t s, F&& f, int reps = 10, int runs = 21) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> r;
  for (int k = 0; k < runs; ++k) {
    spin<<<1, 1, 0, s>>>(100000);
    cudaEventRecord(a, s);
    for (int i = 0; i < reps; ++i) f();
    cudaEventRecord(b, s); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b); r.push_back(ms * 1e3f / reps);
  }
  std::sort(r.begin(), r.end());
  return r[r.size() / 2];
}
int main() {
  using namespace mseloss;
  const std::int64_t n = std::int64_t(1) << 25, bytes = n * 4;
  char* base;
  const std::int64_t MB = 1 << 20;
  CK(cudaMalloc(&base, 3 * bytes + 64 * MB));
  CK(cudaMemset(base, 0, 3 * bytes + 64 * MB));
  float* out; CK(cudaMalloc(&out, 4));
  cudaStream_t s; CK(cudaStreamCreate(&s));
  Options o; o.stream = s;
  const std::int64_t offs[] = {0, 512, 4096, 65536, MB, 2 * MB, 3 * MB, 7 * MB, 16 * MB, 31 * MB};
  std::printf("# x at base (%p); y = x + 128 MiB + dy; grad = y + 128 MiB + dg; fused pass fp32 2^25 (us), forward (us)\n", (void*)base);
  for (std::int64_t dy : {std::int64_t(0), 2 * MB, 7 * MB})
    for (std::int64_t dg : offs) {
      float* x = reinterpret_cast<float*>(base);
      float* y = reinterpret_cast<float*>(base + bytes + dy);
      float* g = reinterpret_cast<float*>(base + 2 * bytes + dy + dg);
      auto X = TensorView::contiguous(x, DType::f32, {n}, Device::cuda), Y = TensorView::contiguous(y, DType::f32, {n}, Device::cuda);
      auto O = TensorView::scalar(out, DType::f32, Device::cuda), G = TensorView::contiguous(g, DType::f32, {n}, Device::cuda);
      const float fb = per_call_us(s, [&] { forward_backward(X, Y, O, G, {}, 1.0, o); });
      const float fw = per_call_us(s, [&] { forward(X, Y, O, o); });
      std::printf("dy %8lld KiB  dg %8lld KiB  fused %7.2f  forward %7.2f\n", (long long)dy / 1024, (long long)dg / 1024, fb, fw);
    }
  CK(cudaDeviceSynchronize());
  return 0;
}
