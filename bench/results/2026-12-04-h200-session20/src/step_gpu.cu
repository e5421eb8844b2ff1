// GPU time per step of the training-step mode's kernels, dispatched (session 20 experiment).
#include <mseloss/mseloss.hpp>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#include <cstdlib>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
__global__ void fill_one(float* p) { *p = 1.0f; }
__global__ void spin(long long cycles) { long long t = clock64(); while (clock64() - t < cycles) {} }
template <class F> float per_step_us(cudaStream_t s, F&& f, int reps = 10, int runs = 31) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i) f();
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
  for (std::int64_t n : {std::int64_t(1) << 25, std::int64_t(1) << 20}) {
    float *x, *y, *out, *gi, *g1;
    CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&y, n * 4)); CK(cudaMalloc(&out, 4)); CK(cudaMalloc(&gi, n * 4)); CK(cudaMalloc(&g1, 4));
    CK(cudaMemset(x, 0, n * 4)); CK(cudaMemset(y, 0, n * 4));
    cudaStream_t s = nullptr;
    if (getenv("OWN_STREAM")) CK(cudaStreamCreate(&s));
    std::printf("stream %s\n", s ? "own" : "legacy default");
    Options o; o.stream = s;
    Options o1 = o; o1.grid_blocks = 1;
    auto X = TensorView::contiguous(x, DType::f32, {n}, Device::cuda), Y = TensorView::contiguous(y, DType::f32, {n}, Device::cuda);
    auto O = TensorView::scalar(out, DType::f32, Device::cuda), GI = TensorView::contiguous(gi, DType::f32, {n}, Device::cuda);
    auto G1 = TensorView::scalar(g1, DType::f32, Device::cuda);
    auto fb = [&] { forward_backward(X, Y, O, GI, {}, 1.0, o); };
    auto fill = [&] { fill_one<<<1, 1, 0, s>>>(g1); };
    std::printf("n=2^%d\n", n == (1 << 25) ? 25 : 20);
    std::printf("  fused pass alone                 %7.2f us\n", per_step_us(s, fb));
    std::printf("  fused + fill                     %7.2f us\n", per_step_us(s, [&] { fb(); fill(); }));
    std::printf("  fused + scale(g=1)               %7.2f us\n", per_step_us(s, [&] { fb(); scale_gradient(GI, G1, {}, o); }));
    std::printf("  fused + fill + scale(g=1)        %7.2f us\n", per_step_us(s, [&] { fb(); fill(); scale_gradient(GI, G1, {}, o); }));
    std::printf("  fused + fill + scale grid 1      %7.2f us\n", per_step_us(s, [&] { fb(); fill(); scale_gradient(GI, G1, {}, o1); }));
    std::printf("  scale(g=1) alone                 %7.2f us\n", per_step_us(s, [&] { scale_gradient(GI, G1, {}, o); }));
    std::printf("  fill alone                       %7.2f us\n", per_step_us(s, fill));
    CK(cudaDeviceSynchronize());
    cudaFree(x); cudaFree(y); cudaFree(out); cudaFree(gi); cudaFree(g1);
  }
  return 0;
}
