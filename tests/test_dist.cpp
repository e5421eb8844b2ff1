// mseloss::dist over NCCL: one rank per visible GPU (ncclCommInitAll), each
// holding a piece of one tensor cut at chunk boundaries; every rank's loss
// and gradient must be the bits of forward() / forward_backward() on the
// whole tensor on one GPU. With one GPU this is a 1-rank communicator; on a
// machine with several GPUs the same test runs 2, 4 or 8 ranks. Skips
// without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "mseloss/dist.hpp"
#include "oracle.hpp"

using namespace mseloss;
using namespace testing_mse;
using Bytes = std::vector<unsigned char>;

namespace {

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

int gpu_count() {
  int n = 0;
  return cuda_available() && cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

void* to_device(const Bytes& h, std::size_t extra = 0) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, h.size() + extra + 1), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, h.data(), h.size(), cudaMemcpyHostToDevice), cudaSuccess);
  return p;
}
Bytes to_host(const void* p, std::size_t bytes) {
  Bytes h(bytes);
  EXPECT_EQ(cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

}  // namespace

TEST(Dist, EveryRankGetsTheSingleGpuBits) {
  const int ranks = gpu_count();
  if (ranks == 0) GTEST_SKIP() << "no CUDA device visible: NCCL tests skipped";
  std::vector<int> devs(ranks);
  for (int r = 0; r < ranks; ++r) devs[r] = r;
  std::vector<ncclComm_t> comms(ranks);
  ASSERT_EQ(ncclCommInitAll(comms.data(), ranks, devs.data()), ncclSuccess);
  std::uint64_t seed = 500;
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (std::int64_t n : {std::int64_t{0}, std::int64_t{1000}, 37 * chunk_numel(1, t) + 5, std::int64_t{3000017}})
      for (Reduction r : {Reduction::mean, Reduction::sum}) {
        const std::size_t es = dtype_size(t);
        const Bytes x = random_tensor(t, n, kAllDists[seed % 7], ++seed), y = random_tensor(t, n, Dist::normal, ++seed);
        Options o;
        o.reduction = r;
        // The single-GPU reference on GPU 0.
        CUDA_OK(cudaSetDevice(0));
        void *dx = to_device(x), *dy = to_device(y), *dl = to_device(Bytes(es, 0xA5)), *dg = to_device(Bytes(n * es, 0xA5));
        const TensorView vx = TensorView::contiguous(dx, t, {n}, Device::cuda), vy = TensorView::contiguous(dy, t, {n}, Device::cuda);
        forward_backward(vx, vy, TensorView::scalar(dl, t, Device::cuda), TensorView::contiguous(dg, t, {n}, Device::cuda),
                         {}, 0.375, o);
        CUDA_OK(cudaDeviceSynchronize());
        const Bytes want_loss = to_host(dl, es), want_grad = to_host(dg, n * es);
        cudaFree(dx), cudaFree(dy), cudaFree(dl), cudaFree(dg);
        // Pieces in rank order: whole chunks, as even as they go; the last rank takes the rest.
        const std::int64_t C = chunk_numel(n, t), K = (n + C - 1) / C;
        std::vector<Bytes> losses(ranks), grads(ranks);
        std::vector<std::int64_t> begin(ranks + 1, n);
        for (int k = 0; k < ranks; ++k) begin[k] = std::min(n, K * k / ranks * C);
        std::vector<std::thread> threads;
        std::vector<std::string> errors(ranks);
        for (int k = 0; k < ranks; ++k)
          threads.emplace_back([&, k] {
            try {
              if (cudaSetDevice(k) != cudaSuccess) throw Error("cudaSetDevice");
              cudaStream_t s;
              if (cudaStreamCreate(&s) != cudaSuccess) throw Error("cudaStreamCreate");
              const std::int64_t len = begin[k + 1] - begin[k];
              const Bytes xs(x.begin() + begin[k] * es, x.begin() + begin[k + 1] * es);
              const Bytes ys(y.begin() + begin[k] * es, y.begin() + begin[k + 1] * es);
              void *px = to_device(xs), *py = to_device(ys), *pl = to_device(Bytes(es, 0xA5)),
                   *pg = to_device(Bytes(len * es, 0xA5));
              Options ok = o;
              ok.stream = s;
              const Shard shard = dist::shard_of(comms[k], len, s);
              if (shard.global_numel != n || shard.offset != begin[k]) throw Error("shard_of: wrong shard");
              dist::forward_backward(comms[k], TensorView::contiguous(px, t, {len}, Device::cuda),
                                     TensorView::contiguous(py, t, {len}, Device::cuda), shard,
                                     TensorView::scalar(pl, t, Device::cuda),
                                     TensorView::contiguous(pg, t, {len}, Device::cuda), {}, 0.375, ok);
              if (cudaStreamSynchronize(s) != cudaSuccess) throw Error("cudaStreamSynchronize");
              losses[k] = to_host(pl, es);
              grads[k] = to_host(pg, len * es);
              // forward() alone gives the same loss.
              dist::forward(comms[k], TensorView::contiguous(px, t, {len}, Device::cuda),
                            TensorView::contiguous(py, t, {len}, Device::cuda), shard,
                            TensorView::scalar(pl, t, Device::cuda), ok);
              if (cudaStreamSynchronize(s) != cudaSuccess || to_host(pl, es) != losses[k])
                throw Error("dist::forward differs from dist::forward_backward");
              cudaFree(px), cudaFree(py), cudaFree(pl), cudaFree(pg);
              cudaStreamDestroy(s);
            } catch (const std::exception& e) {
              errors[k] = e.what();
            }
          });
        for (auto& th : threads) th.join();
        const std::string ctx = std::string(to_string(t)) + " N=" + std::to_string(n) + " " + to_string(r) +
                                " ranks=" + std::to_string(ranks);
        Bytes grad;
        for (int k = 0; k < ranks; ++k) {
          ASSERT_EQ(errors[k], "") << ctx << " rank " << k;
          EXPECT_EQ(losses[k], want_loss) << ctx << ": rank " << k << "'s loss";
          grad.insert(grad.end(), grads[k].begin(), grads[k].end());
        }
        EXPECT_EQ(grad, want_grad) << ctx << ": the ranks' gradients";
      }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
}
