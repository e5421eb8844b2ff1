// mseloss: mean squared error loss, its gradient, and both in one pass, with
// results fixed by docs/numerics.md: the same bits on every backend, thread
// count, grid size and GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

struct CUstream_st;  // cudaStream_t without including the CUDA headers

namespace mseloss {

enum class DType { f32, f64, f16, bf16 };
enum class Device { cpu, cuda };
enum class Reduction { none, mean, sum };

// How the CUDA forward reduces. Only `deterministic` follows docs/numerics.md;
// the others are the seed's designs, kept as measured comparisons: they
// accumulate in fp32 and their bits may change from run to run.
enum class Algorithm {
  deterministic,      // persistent grid, fixed chunks, one launch (default)
  atomic,             // grid = ceil(N / block), one atomicAdd per block
  gridstride_atomic,  // grid = SM count, grid-strided loop, one atomicAdd per block
  gridstride_store,   // grid = SM count, partials stored, second kernel sums them
};

constexpr int kMaxRank = 8;

std::size_t dtype_size(DType t);
const char* to_string(DType t);
const char* to_string(Reduction r);
const char* to_string(Algorithm a);
const char* to_string(Device d);

// A non-owning view of a strided tensor. Strides are in elements and may be 0
// (broadcast) or negative. Inputs are never written through a view.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::f32;
  Device device = Device::cpu;
  int rank = 0;                   // 0 = a scalar
  std::int64_t shape[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};

  std::int64_t numel() const;
  bool is_contiguous() const;  // row-major, no gaps (strides of size-1 dims ignored)

  // Row-major contiguous view.
  static TensorView contiguous(const void* data, DType dtype,
                               std::initializer_list<std::int64_t> shape,
                               Device device = Device::cpu);
  static TensorView contiguous(const void* data, DType dtype, int rank,
                               const std::int64_t* shape, Device device = Device::cpu);
  static TensorView scalar(const void* data, DType dtype, Device device = Device::cpu);
};

// CPU: runs task(context, t) once for each t in [0, tasks), on any threads,
// and returns when every call has returned. Set in Options, the CPU backend
// hands its threads' work to it instead of starting std::threads: the PyTorch
// op passes torch's intra-op pool, whose idle threads otherwise spin on the
// cores the library's threads need. Results never depend on it.
using CpuRunTasks = void (*)(int tasks, void (*task)(void* context, int t), void* context);

struct Options {
  Reduction reduction = Reduction::mean;
  Algorithm algorithm = Algorithm::deterministic;  // CUDA forward only
  // CPU: the most threads to use (0 = hardware concurrency); a call uses one
  // thread per 2^19 elements, up to this many. The bits never depend on it.
  int num_threads = 0;
  CpuRunTasks cpu_run_tasks = nullptr;  // CPU: null = the library's own std::threads
  CUstream_st* stream = nullptr;        // CUDA: stream to launch on (nullptr = legacy default)
  int grid_blocks = 0;                  // CUDA: 0 = persistent grid; >0 forces a grid (tests)
  // CUDA, sm_90 and later: programmatic dependent launch. The kernel may be
  // launched while the previous kernel in the stream still runs; it waits for
  // that kernel to complete (griddepcontrol.wait) before it touches memory, so
  // stream order is kept and only the launch latency is hidden. false: a plain
  // launch (for timing without the overlap).
  bool programmatic_launch = true;
};

// Every error thrown by mseloss derives from Error. On any error nothing has
// been written to the outputs.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A bad argument; the message names the argument and the offending value.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};
// A backend that is not built or not present (CUDA without a GPU, say).
class Unavailable : public Error {
 public:
  using Error::Error;
};
// A CUDA runtime failure; the message carries the CUDA error string.
class CudaError : public Error {
 public:
  using Error::Error;
};

// loss = reduce((input - target)^2). input and target broadcast (NumPy rules)
// to a common shape S of N elements. `out`: for none, a view of shape S in the
// input dtype (or fp32 for 16-bit inputs); for mean and sum, one element of the
// input dtype (or fp32 for 16-bit inputs). Mean of N = 0 is NaN, sum is 0.
void forward(const TensorView& input, const TensorView& target, const TensorView& out,
             const Options& options = {});

// grad_input = 2 (input - target) g / N (mean), 2 (input - target) g (sum),
// 2 (input - target)_i g_i (none), over the broadcast shape S. grad_output is
// one element for mean/sum (read on the device: no host sync) and broadcasts
// to S for none. grad_target (optional: data == nullptr) receives -grad_input.
// Gradients are in the input dtype and have shape S; reducing them over
// broadcast dimensions of the inputs is the caller's job.
void backward(const TensorView& input, const TensorView& target, const TensorView& grad_output,
              const TensorView& grad_input, const TensorView& grad_target = {},
              const Options& options = {});

// One pass: `out` as forward(), and the gradient for an upstream scalar
// `grad_scale` (g) known before the call, as backward() would give for a
// grad_output holding g. The loss has the same bits as forward().
void forward_backward(const TensorView& input, const TensorView& target, const TensorView& out,
                      const TensorView& grad_input, const TensorView& grad_target = {},
                      double grad_scale = 1.0, const Options& options = {});

// grad_input <- grad_input * g in place (and grad_target, when given), for a
// one-element g read on the device (no host sync). When g converts to exactly
// 1 nothing past g is read or written. This finishes a gradient precomputed by
// forward_backward with grad_scale = 1 once the upstream g is known (the
// PyTorch op's training-step mode): docs/numerics.md §7 gives the bits.
void scale_gradient(const TensorView& grad_input, const TensorView& grad_output,
                    const TensorView& grad_target = {}, const Options& options = {});

// ---- Sharded losses (docs/numerics.md §9) -------------------------------------
// A tensor of N elements split into shards, each a range of consecutive
// elements of its row-major order, held by other devices or processes. Each
// shard writes its chunk partials (§2) into a buffer that is zero elsewhere;
// the buffers summed elementwise (by any all-reduce: every slot is non-zero on
// one shard at most, so the sum is exact in any order) and finished give the
// loss of the whole tensor bit for bit, whatever the number of shards.
struct Shard {
  std::int64_t global_numel = 0;  // N of the whole tensor
  std::int64_t offset = 0;        // the whole tensor's index of this shard's first element
};

// Elements per chunk for a whole tensor of N elements of `dtype`. A shard must
// start at a multiple of it and end at one or at N.
std::int64_t chunk_numel(std::int64_t global_numel, DType dtype);
// fp64 values in a partials buffer: two per chunk; never more than
// kMaxPartialsNumel, which therefore fits any N.
std::int64_t partials_numel(std::int64_t global_numel, DType dtype);
constexpr std::int64_t kMaxPartialsNumel = 2 * 4096;

// This shard's partials, for options.reduction mean or sum: `partials` is a
// contiguous fp64 view of at least partials_numel() values on the input's
// device; all of it is written (zeros past the shard's chunks). With grad_input (and grad_target), the same
// pass writes the shard's gradient for the upstream `grad_scale`, scaled by
// the whole tensor's N for mean: the gradient forward_backward gives on the
// whole tensor, restricted to the shard.
void shard_partials(const TensorView& input, const TensorView& target, const Shard& shard,
                    const TensorView& partials, const TensorView& grad_input = {},
                    const TensorView& grad_target = {}, double grad_scale = 1.0,
                    const Options& options = {});

// The loss of the whole tensor (N = global_numel elements of `dtype`) from the
// summed partials of all its shards; `out` as for forward().
void finish_partials(const TensorView& partials, std::int64_t global_numel, DType dtype,
                     const TensorView& out, const Options& options = {});

// True when the library was built with CUDA and a device is visible.
bool cuda_available();

// The CPU backend's thread limit when Options::num_threads is 0.
int default_num_threads();

}  // namespace mseloss
