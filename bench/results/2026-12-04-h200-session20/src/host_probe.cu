// Host cost per call of the library's CUDA entry points and of their parts
// (session 20 experiment; not part of the build).
#include <mseloss/mseloss.hpp>
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
__global__ void empty_kernel(int) {}
template <class F> double host_us(F&& f, int reps = 2000) {
  std::vector<double> r;
  for (int k = 0; k < 15; ++k) {
    auto a = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) f();
    auto b = std::chrono::steady_clock::now();
    r.push_back(std::chrono::duration<double, std::micro>(b - a).count() / reps);
    cudaDeviceSynchronize();
  }
  std::sort(r.begin(), r.end());
  return r[r.size() / 2];
}
int main() {
  using namespace mseloss;
  const std::int64_t n = 1024;
  float *x, *y, *out, *gi, *g1;
  CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&y, n * 4)); CK(cudaMalloc(&out, 4)); CK(cudaMalloc(&gi, n * 4)); CK(cudaMalloc(&g1, 4));
  CK(cudaMemset(x, 0, n * 4)); CK(cudaMemset(y, 0, n * 4));
  const float one = 1.0f; CK(cudaMemcpy(g1, &one, 4, cudaMemcpyHostToDevice));
  cudaStream_t s; CK(cudaStreamCreate(&s));
  Options o; o.stream = s;
  auto X = TensorView::contiguous(x, DType::f32, {n}, Device::cuda), Y = TensorView::contiguous(y, DType::f32, {n}, Device::cuda);
  auto O = TensorView::scalar(out, DType::f32, Device::cuda), GI = TensorView::contiguous(gi, DType::f32, {n}, Device::cuda);
  auto G1 = TensorView::scalar(g1, DType::f32, Device::cuda);
  cudaPointerAttributes pa;
  int dev;
  unsigned long long id;
  cudaStreamCaptureStatus cs;
  std::printf("cudaGetDevice            %6.3f us\n", host_us([&] { cudaGetDevice(&dev); }));
  std::printf("cudaPointerGetAttributes %6.3f us\n", host_us([&] { cudaPointerGetAttributes(&pa, x); }));
  std::printf("cudaStreamIsCapturing    %6.3f us\n", host_us([&] { cudaStreamIsCapturing(s, &cs); }));
  std::printf("cudaStreamGetId          %6.3f us\n", host_us([&] { cudaStreamGetId(s, &id); }));
  std::printf("empty <<<1,256>>>        %6.3f us\n", host_us([&] { empty_kernel<<<1, 256, 0, s>>>(0); }));
  std::printf("empty <<<264,256>>>      %6.3f us\n", host_us([&] { empty_kernel<<<264, 256, 0, s>>>(0); }));
  std::printf("forward mean n=1024      %6.3f us\n", host_us([&] { forward(X, Y, O, o); }));
  std::printf("forward_backward n=1024  %6.3f us\n", host_us([&] { forward_backward(X, Y, O, GI, {}, 1.0, o); }));
  std::printf("scale_gradient g=1       %6.3f us\n", host_us([&] { scale_gradient(GI, G1, {}, o); }));
  std::printf("backward n=1024          %6.3f us\n", host_us([&] { backward(X, Y, G1, GI, {}, o); }));
  CK(cudaDeviceSynchronize());
  return 0;
}
