// mseloss::dist: shard partials, one ncclAllReduce of them, finish (§9).
#include "mseloss/dist.hpp"

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace mseloss::dist {
namespace {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}
void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Error(std::string(what) + ": " + ncclGetErrorString(r));
}

// The partials buffer of one (device, stream), large enough for any N
// (kMaxPartialsNumel), allocated on first use and kept until the process
// ends. Calls on one stream are ordered, so they share it.
double* partials_for(CUstream_st* stream) {
  static std::mutex m;
  static std::map<std::pair<int, CUstream_st*>, double*> cache;
  int dev;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
  std::lock_guard<std::mutex> lock(m);
  double*& buf = cache[{dev, stream}];
  if (buf == nullptr) check_cuda(cudaMalloc(&buf, kMaxPartialsNumel * sizeof(double)), "cudaMalloc (partials)");
  return buf;
}

void run(ncclComm_t comm, const TensorView& input, const TensorView& target, const Shard& shard,
         const TensorView& out, const TensorView* grad_input, const TensorView& grad_target, double grad_scale,
         const Options& options) {
  if (comm == nullptr) throw InvalidArgument("comm: null NCCL communicator");
  if (input.device != Device::cuda) throw InvalidArgument("input: mseloss::dist needs CUDA views (one rank per GPU)");
  const std::int64_t P = partials_numel(shard.global_numel, input.dtype);
  TensorView pv = TensorView::contiguous(partials_for(options.stream), DType::f64, {P}, Device::cuda);
  if (grad_input)
    shard_partials(input, target, shard, pv, *grad_input, grad_target, grad_scale, options);
  else
    shard_partials(input, target, shard, pv, {}, {}, 1.0, options);
  // Each slot is non-zero on one rank at most: the sum is exact, in any order.
  check_nccl(ncclAllReduce(pv.data, pv.data, static_cast<std::size_t>(P), ncclFloat64, ncclSum, comm,
                           reinterpret_cast<cudaStream_t>(options.stream)),
             "ncclAllReduce (partials)");
  finish_partials(pv, shard.global_numel, input.dtype, out, options);
}

}  // namespace

Shard shard_of(ncclComm_t comm, std::int64_t local_numel, CUstream_st* stream) {
  if (comm == nullptr) throw InvalidArgument("comm: null NCCL communicator");
  if (local_numel < 0) throw InvalidArgument("local_numel: " + std::to_string(local_numel) + " is negative");
  int ranks = 0, rank = 0;
  check_nccl(ncclCommCount(comm, &ranks), "ncclCommCount");
  check_nccl(ncclCommUserRank(comm, &rank), "ncclCommUserRank");
  auto s = reinterpret_cast<cudaStream_t>(stream);
  std::int64_t* dev = nullptr;
  check_cuda(cudaMalloc(&dev, sizeof(std::int64_t) * (ranks + 1)), "cudaMalloc (shard sizes)");
  std::vector<std::int64_t> sizes(ranks);
  cudaError_t e = cudaMemcpyAsync(dev + ranks, &local_numel, sizeof(local_numel), cudaMemcpyHostToDevice, s);
  ncclResult_t r = e == cudaSuccess ? ncclAllGather(dev + ranks, dev, 1, ncclInt64, comm, s) : ncclSuccess;
  if (e == cudaSuccess && r == ncclSuccess)
    e = cudaMemcpyAsync(sizes.data(), dev, sizeof(std::int64_t) * ranks, cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess && r == ncclSuccess) e = cudaStreamSynchronize(s);
  cudaFree(dev);
  check_cuda(e, "shard_of");
  check_nccl(r, "ncclAllGather (shard sizes)");
  Shard shard;
  for (int k = 0; k < ranks; ++k) {
    if (k == rank) shard.offset = shard.global_numel;
    shard.global_numel += sizes[k];
  }
  return shard;
}

void forward(ncclComm_t comm, const TensorView& input, const TensorView& target, const Shard& shard,
             const TensorView& out, const Options& options) {
  run(comm, input, target, shard, out, nullptr, {}, 1.0, options);
}

void forward_backward(ncclComm_t comm, const TensorView& input, const TensorView& target, const Shard& shard,
                      const TensorView& out, const TensorView& grad_input, const TensorView& grad_target,
                      double grad_scale, const Options& options) {
  if (grad_input.data == nullptr && grad_input.numel() > 0) throw InvalidArgument("grad_input: data is null");
  run(comm, input, target, shard, out, &grad_input, grad_target, grad_scale, options);
}

}  // namespace mseloss::dist
