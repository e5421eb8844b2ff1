// mseloss over NCCL: the loss of a tensor sharded across GPUs (one rank per
// GPU), bit for bit the loss forward() gives on the whole tensor, whatever
// the number of ranks (docs/numerics.md §9). Built when NCCL is found; link
// mseloss::nccl.
#pragma once

#include <nccl.h>

#include "mseloss/mseloss.hpp"

namespace mseloss::dist {

// The shard of this rank when the ranks hold consecutive pieces of the whole
// tensor in rank order: all-gathers the ranks' element counts over `comm`
// and waits for them (one host synchronisation; call it once for shapes that
// do not change). The pieces must then split at chunk boundaries
// (chunk_numel()), or forward() refuses them.
Shard shard_of(ncclComm_t comm, std::int64_t local_numel, CUstream_st* stream);

// Every rank passes its shard of input and target (CUDA views on this rank's
// GPU) and receives the whole tensor's loss in `out`: each rank reduces its
// chunks, the ranks sum their partial buffers with one ncclAllReduce
// (2 x 8 bytes per chunk, at most 64 KiB), and each rank finishes them.
// Options: mean or sum, and the stream (NCCL runs on it too).
void forward(ncclComm_t comm, const TensorView& input, const TensorView& target, const Shard& shard,
             const TensorView& out, const Options& options = {});

// forward(), and in the same pass the shard's gradient of grad_scale * loss,
// with the whole tensor's N for mean.
void forward_backward(ncclComm_t comm, const TensorView& input, const TensorView& target, const Shard& shard,
                      const TensorView& out, const TensorView& grad_input, const TensorView& grad_target = {},
                      double grad_scale = 1.0, const Options& options = {});

}  // namespace mseloss::dist
