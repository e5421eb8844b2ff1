// One validated call, as the backends see it: every operand is described over
// the common broadcast shape (strides in elements, 0 for broadcast dims), with
// dimensions coalesced where all operands allow it.
#pragma once

#include <cstdint>

#include "mseloss/mseloss.hpp"

namespace mseloss::detail {

enum class Op { forward, backward, forward_backward, scale };  // scale: scale_gradient()

// What a mean/sum call evaluates (docs/numerics.md §9). whole: the loss of the
// N elements. partials: the chunk partials of one shard of a larger tensor,
// into a buffer of fp64 pairs (and the shard's gradient for forward_backward).
// finish: the loss from a buffer of summed partials; no element is read.
enum class Stage { whole, partials, finish };

struct Operand {
  void* data = nullptr;
  DType dtype = DType::f32;
  std::int64_t strides[kMaxRank] = {};  // over Problem::shape
};

struct Problem {
  Op op = Op::forward;
  Reduction reduction = Reduction::mean;
  DType dtype = DType::f32;  // input and target dtype
  Device device = Device::cpu;
  int rank = 0;              // after coalescing; 0 or 1 when everything is contiguous
  std::int64_t shape[kMaxRank] = {};
  std::int64_t n = 0;
  bool contiguous = false;   // every operand that is read or written elementwise is contiguous

  Operand input, target;
  Operand out;          // forward, forward_backward: the loss (scalar, or shape for none)
  Operand grad_output;  // backward: scalar (mean/sum) or broadcast over shape (none)
  Operand grad_input;   // backward, forward_backward
  Operand grad_target;  // optional: data == nullptr when not asked for
  double grad_scale = 1.0;  // forward_backward: the upstream g

  Stage stage = Stage::whole;
  std::int64_t global_n = 0;    // N of the whole tensor: the geometry (§2), mean and the gradient scale use it
  std::int64_t chunk_base = 0;  // Stage::partials: the whole tensor's chunk index of this shard's chunk 0
  void* partials = nullptr;     // Stage::partials, finish: fp64 pairs (hi, lo), one per chunk
  std::int64_t partials_numel = 0;  // Stage::partials: fp64 values the buffer holds (all are written)

  int num_threads = 0;
  CpuRunTasks cpu_run_tasks = nullptr;
  CUstream_st* stream = nullptr;
  int grid_blocks = 0;
  bool programmatic_launch = true;
  Algorithm algorithm = Algorithm::deterministic;

  bool reduces() const { return reduction != Reduction::none; }
  bool mean() const { return reduction == Reduction::mean; }
  bool writes_loss() const { return op == Op::forward || op == Op::forward_backward; }
  bool writes_grad() const { return op != Op::forward; }
};

namespace cpu {
void run(const Problem& p);
}

namespace cuda {
void run(const Problem& p);
bool available();
}  // namespace cuda

}  // namespace mseloss::detail
