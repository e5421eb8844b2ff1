// CUDA plumbing shared by the backend's translation units: error checks, the
// launch parameter block, and the per-(device, stream) workspace.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "common/numerics.hpp"
#include "common/problem.hpp"

namespace mseloss::detail::cuda {

#define MSELOSS_CUDA_CHECK(expr)                                                                       \
  do {                                                                                                 \
    cudaError_t err_ = (expr);                                                                         \
    if (err_ != cudaSuccess)                                                                           \
      throw ::mseloss::CudaError(std::string(#expr) + ": " + cudaGetErrorName(err_) + ": " +          \
                                 cudaGetErrorString(err_));                                            \
  } while (0)

constexpr int kThreads = kRowThreads;  // 256: one row is 256 threads x 16 bytes (§2)
constexpr int kWarps = kThreads / 32;
constexpr int kBatch = 32;             // chunk partials a block keeps in shared memory before flushing
// From 2 to kMaxSlicedChunks chunks of fp32 or 16-bit inputs: several
// blocks per chunk (mse_sliced_chunks_kernel, launch_reduce).
constexpr int kMaxSlicedChunks = 16;
// fp64 inputs, up to this many chunks: one block per chunk, the blocks one
// cluster, no ticket (mse_few_chunks_kernel). With 9 to 16 chunks the
// single-wave kernel was faster (H200, graph-replayed at 16 fp32 chunks,
// before the sliced kernel: forward 3.41 -> 2.97 us, fused 3.73 -> 3.31).
constexpr int kMaxClusterChunks = 8;

// The bits of an empty slot of Workspace::posted: all ones, a NaN. Partials
// come from fp32 or 16-bit inputs, so a NaN partial is the canonical NaN or
// carries an input's payload, whose low 29 bits are zero; post_partial still
// stores a partial with these bits as another NaN, so that a posted slot can
// never read as empty.
constexpr unsigned long long kEmptySlot = ~0ull;

// Scratch memory of one (device, stream): the chunk partials, the ticket
// counter that picks the block which finishes the reduction, and the counter
// that deals chunks to the fused pass's blocks. The finishing block resets
// both, so they are zero between launches. The elementwise kernel's tile
// dealer is reset by the thread whose request was its launch's last.
//
// `posted` holds the chunk partials of the launches whose finishing block
// collects them as they land (fp32 and 16-bit inputs): a slot is kEmptySlot
// until its partial is posted, and the finishing block empties every slot it
// has read, so all are empty between launches (see mse_reduce_kernel).
struct Workspace {
  DD partials[kMaxChunks];  // fp64 inputs; the comparison algorithms
  double posted[kMaxChunks];
  unsigned int ticket;
  unsigned int next_chunk;
  unsigned int next_tile;  // the elementwise kernel's tile dealer (mse_elementwise_kernel)
  float atomic_sum;  // the comparison algorithms' fp32 accumulator
};

// The workspace for the current device and `stream`, created (and zeroed in
// stream order) on first use, also inside a graph capture. Thread-safe.
Workspace* workspace_for(cudaStream_t stream);
int sm_count();

// Strided description of one operand for the kernels (element strides over
// the coalesced logical shape).
struct Strides {
  std::int64_t s[kMaxRank];
};

struct KernelParams {
  const void* x;
  const void* y;
  void* out;          // loss: one element, or elementwise for none
  void* grad_input;   // nullptr when not written
  void* grad_target;  // nullptr when not written
  const void* grad_output;  // backward: scalar (mean/sum) or elementwise (none)
  DType grad_output_dtype;
  std::int64_t n;         // elements this call walks (a shard's for Stage::partials)
  std::int64_t global_n;  // the whole tensor's N: geometry, mean, gradient scale
  Geometry geo;           // of global_n
  std::int64_t local_chunks;  // chunks this call walks
  std::int64_t chunk_base;    // the whole tensor's index of chunk 0 of this call
  Stage stage;
  DD* partials;               // chunk partials: the workspace's, or the caller's (§9)
  int rank;
  bool vec;     // contiguous and every elementwise pointer 16-byte aligned
  bool deal_chunks;  // the fused reduction takes chunks from the workspace's counter
  int x_shift;  // shifted kernels: bytes x and y lie past a 16-byte boundary
  int y_shift;
  int g_shift;  // ... and grad_output (elementwise backward)
  bool mean;
  double host_scale64;  // forward_backward: grad_scale64(g, N, mean), computed on the host
  unsigned zero;        // always 0, a value the compiler cannot know (issue_loads_first)
  std::int64_t shape[kMaxRank];
  Strides xs, ys, outs, gis, gts, gos;
  Workspace* ws;
};

// Programmatic dependent launch (Options::programmatic_launch; sm_90 and
// later). Every kernel of the library calls this before its first access to
// global memory. It waits until the previous kernel in the stream has
// completed and its writes are visible (a no-op for a plain launch), so
// stream order holds; then it lets the next kernel launch, so that kernel's
// blocks can be placed while this one runs. A trigger counts once every block
// has given it, so the next kernel's blocks never take the place of one of
// this kernel's (the finishing block may wait for all the others).
__device__ __forceinline__ void enter_stream_order() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Element offset of logical index i, row-major over shape.
__device__ __forceinline__ std::int64_t offset_of(const KernelParams& p, const Strides& st, std::int64_t i) {
  std::int64_t off = 0;
#pragma unroll 1
  for (int d = p.rank - 1; d >= 0; --d) {
    std::int64_t q = i / p.shape[d];
    off += (i - q * p.shape[d]) * st.s[d];
    i = q;
  }
  return off;
}

void launch_comparison(const Problem& p, KernelParams& kp, cudaStream_t stream);

}  // namespace mseloss::detail::cuda
