// Session 38: a driver for compute-sanitizer's racecheck of the lean 16-bit
// fused pass (mse_fused_stream_kernel, which takes every 16-bit fused mean/sum
// above the reduce kernel's grid since 7b6aa3a). The bench, used as the driver
// in session 37, makes hundreds of calls per point (warm-up, timing, host time)
// and did not finish under racecheck in 80 s; this makes one call per case.
//
// Cases: bf16 and fp16, mean and sum, K chunks (argv[1], default 661: more
// than 5 per SM on 132 SMs; the last chunk cut short), on the default grid and
// on a forced 7-block grid (about 95 chunks per block, so every block reuses
// its shared memory across chunks and batches). Each call's loss and gradient
// are compared bit for bit with the CPU backend's on the same random data, and
// the outputs are poisoned before each call.
// Build: nvcc -std=c++17 -O2 -arch=sm_90 -Iinclude race_driver.cpp libmseloss.a -o race_driver
#include <mseloss/mseloss.hpp>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CUDA_OK(call)                                                                      \
  do {                                                                                     \
    const cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                        \
    }                                                                                      \
  } while (0)

namespace {

using mseloss::Device;
using mseloss::DType;
using mseloss::Reduction;
using mseloss::TensorView;

// Finite 16-bit values of random sign, exponent and mantissa (no Inf or NaN).
std::vector<std::uint16_t> random_bits(DType t, std::int64_t n, std::uint64_t seed) {
  std::vector<std::uint16_t> v(static_cast<std::size_t>(n));
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& e : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const unsigned sign = static_cast<unsigned>(s >> 63) << 15;
    if (t == DType::bf16) {
      const unsigned exp = 112 + static_cast<unsigned>((s >> 32) % 24);  // 2^-15 .. 2^8
      e = static_cast<std::uint16_t>(sign | (exp << 7) | (s & 0x7F));
    } else {
      const unsigned exp = 5 + static_cast<unsigned>((s >> 32) % 20);  // 2^-10 .. 2^9
      e = static_cast<std::uint16_t>(sign | (exp << 10) | (s & 0x3FF));
    }
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t chunks = argc > 1 ? std::atoll(argv[1]) : 661;
  const std::int64_t chunk = 8 * 4096 / 2;  // 16-bit: 8 rows of 2048 lanes while K <= 4096 (docs/numerics.md §2)
  const std::int64_t n = (chunks - 1) * chunk + 4099;
  int failures = 0, cases = 0;
  std::uint64_t seed = 38;
  for (DType t : {DType::bf16, DType::f16}) {
    const auto x = random_bits(t, n, ++seed), y = random_bits(t, n, ++seed);
    const std::size_t bytes = static_cast<std::size_t>(n) * 2;
    void *dx, *dy, *dloss, *dgrad;
    CUDA_OK(cudaMalloc(&dx, bytes));
    CUDA_OK(cudaMalloc(&dy, bytes));
    CUDA_OK(cudaMalloc(&dloss, 4));
    CUDA_OK(cudaMalloc(&dgrad, bytes));
    CUDA_OK(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice));
    for (Reduction r : {Reduction::mean, Reduction::sum}) {
      float cpu_loss = -1;
      std::vector<std::uint16_t> cpu_grad(static_cast<std::size_t>(n), 0xA5A5);
      mseloss::Options o;
      o.reduction = r;
      mseloss::forward_backward(TensorView::contiguous(x.data(), t, {n}), TensorView::contiguous(y.data(), t, {n}),
                                TensorView::scalar(&cpu_loss, DType::f32), TensorView::contiguous(cpu_grad.data(), t, {n}),
                                {}, 1.0, o);
      for (int grid : {0, 7}) {
        o.grid_blocks = grid;
        CUDA_OK(cudaMemset(dloss, 0xFF, 4));
        CUDA_OK(cudaMemset(dgrad, 0xFF, bytes));
        mseloss::forward_backward(TensorView::contiguous(dx, t, {n}, Device::cuda),
                                  TensorView::contiguous(dy, t, {n}, Device::cuda),
                                  TensorView::scalar(dloss, DType::f32, Device::cuda),
                                  TensorView::contiguous(dgrad, t, {n}, Device::cuda), {}, 1.0, o);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaDeviceSynchronize());
        float gpu_loss;
        std::vector<std::uint16_t> gpu_grad(static_cast<std::size_t>(n));
        CUDA_OK(cudaMemcpy(&gpu_loss, dloss, 4, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(gpu_grad.data(), dgrad, bytes, cudaMemcpyDeviceToHost));
        const bool same = std::memcmp(&gpu_loss, &cpu_loss, 4) == 0 &&
                          std::memcmp(gpu_grad.data(), cpu_grad.data(), bytes) == 0;
        ++cases;
        failures += !same;
        std::printf("%s %s chunks=%lld n=%lld grid=%s loss=%a cpu=%a %s\n", mseloss::to_string(t),
                    mseloss::to_string(r), static_cast<long long>(chunks), static_cast<long long>(n),
                    grid ? "7" : "default", gpu_loss, cpu_loss, same ? "same bits" : "DIFFERENT");
      }
    }
    CUDA_OK(cudaFree(dx));
    CUDA_OK(cudaFree(dy));
    CUDA_OK(cudaFree(dloss));
    CUDA_OK(cudaFree(dgrad));
  }
  std::printf("%d of %d cases gave the CPU backend's bits\n", cases - failures, cases);
  return failures ? 1 : 0;
}
