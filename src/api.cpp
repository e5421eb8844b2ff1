// The public entry points: every argument is checked here, before any backend
// runs, so that an error leaves the outputs untouched.
#include <algorithm>
#include <initializer_list>
#include <utility>
#include <string>
#include <thread>
#include <vector>

#include "common/numerics.hpp"
#include "common/problem.hpp"
#include "mseloss/mseloss.hpp"

namespace mseloss {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::f16: return 2;
    case DType::bf16: return 2;
  }
  return 0;
}

const char* to_string(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
  }
  return "invalid dtype";
}
const char* to_string(Reduction r) {
  switch (r) {
    case Reduction::none: return "none";
    case Reduction::mean: return "mean";
    case Reduction::sum: return "sum";
  }
  return "invalid reduction";
}
const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::deterministic: return "deterministic";
    case Algorithm::atomic: return "atomic";
    case Algorithm::gridstride_atomic: return "gridstride-atomic";
    case Algorithm::gridstride_store: return "gridstride-store";
  }
  return "invalid algorithm";
}
const char* to_string(Device d) {
  switch (d) {
    case Device::cpu: return "cpu";
    case Device::cuda: return "cuda";
  }
  return "invalid device";
}

std::int64_t TensorView::numel() const {
  // 0 if any dimension is 0; INT64_MAX if the product overflows (check_view refuses such views).
  for (int d = 0; d < rank && d < kMaxRank; ++d)
    if (shape[d] == 0) return 0;
  std::int64_t n = 1;
  for (int d = 0; d < rank && d < kMaxRank; ++d)
    if (__builtin_mul_overflow(n, shape[d], &n)) return INT64_MAX;
  return n;
}

bool TensorView::is_contiguous() const {
  std::int64_t expected = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

TensorView TensorView::contiguous(const void* data, DType dtype, int rank, const std::int64_t* shape,
                                  Device device) {
  if (rank < 0 || rank > kMaxRank)
    throw InvalidArgument("TensorView::contiguous: rank " + std::to_string(rank) + " is outside 0.." +
                          std::to_string(kMaxRank));
  TensorView v;
  v.data = const_cast<void*>(data);
  v.dtype = dtype;
  v.device = device;
  v.rank = rank;
  // Strides saturate instead of overflowing: they matter only when the view
  // has elements, and then its element count overflows too and is refused.
  std::int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    v.shape[d] = shape[d];
    v.strides[d] = stride;
    if (__builtin_mul_overflow(stride, shape[d], &stride)) stride = INT64_MAX;
  }
  return v;
}

TensorView TensorView::contiguous(const void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                                  Device device) {
  std::vector<std::int64_t> s(shape);
  return contiguous(data, dtype, static_cast<int>(s.size()), s.data(), device);
}

TensorView TensorView::scalar(const void* data, DType dtype, Device device) {
  return contiguous(data, dtype, 0, nullptr, device);
}

int default_num_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

bool cuda_available() { return detail::cuda::available(); }

namespace {

using detail::Op;
using detail::Operand;
using detail::Problem;

// std::to_string, not an ostream: the library is also linked into the PyTorch
// extension, where ostream number formatting crashed on one image (see
// python/csrc/torch_ops.cpp).
std::string shape_str(int rank, const std::int64_t* shape) {
  std::string s = "[";
  for (int d = 0; d < rank; ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}
std::string shape_str(const TensorView& v) { return shape_str(v.rank, v.shape); }

[[noreturn]] void fail(const std::string& msg) { throw InvalidArgument(msg); }

bool valid_dtype(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16; }
bool is_16bit(DType t) { return t == DType::f16 || t == DType::bf16; }

std::int64_t checked_numel(const TensorView& v, const char* name) {
  std::int64_t n = 1;
  for (int d = 0; d < v.rank; ++d) {
    if (v.shape[d] < 0)
      fail(std::string(name) + ": dimension " + std::to_string(d) + " has negative size " +
           std::to_string(v.shape[d]));
    if (v.shape[d] != 0 && n > INT64_MAX / v.shape[d])
      fail(std::string(name) + ": shape " + shape_str(v) + " has more than 2^63 elements");
    n *= v.shape[d];
  }
  return n;
}

// Checks what every view must satisfy; returns its element count.
std::int64_t check_view(const TensorView& v, const char* name) {
  if (v.rank < 0 || v.rank > kMaxRank)
    fail(std::string(name) + ": rank " + std::to_string(v.rank) + " is outside 0.." + std::to_string(kMaxRank));
  if (!valid_dtype(v.dtype))
    fail(std::string(name) + ": dtype code " + std::to_string(static_cast<int>(v.dtype)) + " is not a dtype");
  if (v.device != Device::cpu && v.device != Device::cuda)
    fail(std::string(name) + ": device code " + std::to_string(static_cast<int>(v.device)) + " is not a device");
  std::int64_t n = checked_numel(v, name);
  if (n > 0 && v.data == nullptr)
    fail(std::string(name) + ": data is null but the view has " + std::to_string(n) + " elements");
  // Strides so large that an offset overflows 64 bits are refused.
  if (n > 0) {
    const std::int64_t limit = INT64_MAX / 16;
    std::int64_t span = 0;
    for (int d = 0; d < v.rank; ++d) {
      std::int64_t s = v.strides[d] < 0 ? -v.strides[d] : v.strides[d];
      if (v.strides[d] == INT64_MIN || (v.shape[d] > 1 && s > limit / (v.shape[d] - 1)))
        fail(std::string(name) + ": stride " + std::to_string(v.strides[d]) + " of dimension " + std::to_string(d) +
             " overflows a 64-bit offset");
      span += s * (v.shape[d] - 1);
      if (span > limit) fail(std::string(name) + ": strides span more than 2^59 elements");
    }
  }
  return n;
}

// Byte range [lo, hi) a view touches.
struct Span {
  std::intptr_t lo = 0, hi = 0;
};
Span span_of(const void* data, DType dtype, int rank, const std::int64_t* shape, const std::int64_t* strides) {
  // An empty view touches nothing. Its strides are not checked (check_view),
  // so the extents are summed only once no dimension is empty: summing the
  // dimensions before a later 0 could overflow.
  for (int d = 0; d < rank; ++d)
    if (shape[d] == 0) return {};
  std::int64_t lo = 0, hi = 0;
  for (int d = 0; d < rank; ++d) {
    std::int64_t ext = strides[d] * (shape[d] - 1);
    (ext < 0 ? lo : hi) += ext;
  }
  auto es = static_cast<std::int64_t>(dtype_size(dtype));
  auto base = reinterpret_cast<std::intptr_t>(data);
  return {static_cast<std::intptr_t>(base + lo * es), static_cast<std::intptr_t>(base + (hi + 1) * es)};
}
Span span_of(const TensorView& v) { return span_of(v.data, v.dtype, v.rank, v.shape, v.strides); }
bool overlaps(Span a, Span b) { return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi; }

// An output may not alias itself: a zero stride on a dimension of size > 1
// would write two elements to one place. (Exotic self-overlapping strides
// beyond that are the caller's responsibility, as in PyTorch.)
void check_writable(const TensorView& v, const char* name) {
  for (int d = 0; d < v.rank; ++d)
    if (v.shape[d] > 1 && v.strides[d] == 0)
      fail(std::string(name) + ": dimension " + std::to_string(d) +
           " has stride 0, so several elements would be written to one place");
}

void check_no_overlap(const TensorView& out, const char* out_name, const TensorView& other, const char* other_name) {
  if (out.data == nullptr || other.data == nullptr || out.device != other.device) return;
  if (overlaps(span_of(out), span_of(other)))
    fail(std::string(out_name) + " overlaps " + other_name + " in memory; outputs must not alias inputs or each other");
}

// NumPy broadcasting of two shapes; false if they do not broadcast.
bool broadcast_shapes(const TensorView& a, const TensorView& b, int& rank, std::int64_t* shape) {
  rank = std::max(a.rank, b.rank);
  for (int d = 0; d < rank; ++d) {
    int da = a.rank - rank + d, db = b.rank - rank + d;
    std::int64_t sa = da >= 0 ? a.shape[da] : 1, sb = db >= 0 ? b.shape[db] : 1;
    if (sa != sb && sa != 1 && sb != 1) return false;
    shape[d] = sa == 1 ? sb : sa;
  }
  return true;
}

// The view's strides over the broadcast shape (0 for broadcast dims).
Operand broadcast_operand(const TensorView& v, int rank, const std::int64_t* shape) {
  Operand o;
  o.data = v.data;
  o.dtype = v.dtype;
  for (int d = 0; d < rank; ++d) {
    int dv = v.rank - rank + d;
    o.strides[d] = (dv >= 0 && v.shape[dv] == shape[d] && shape[d] != 1) ? v.strides[dv] : 0;
  }
  return o;
}

// True when v broadcasts to `shape` (NumPy rules, v's dims are all 1 or equal).
bool broadcasts_to(const TensorView& v, int rank, const std::int64_t* shape) {
  if (v.rank > rank) return false;
  for (int d = 0; d < v.rank; ++d) {
    std::int64_t want = shape[rank - v.rank + d];
    if (v.shape[d] != want && v.shape[d] != 1) return false;
  }
  return true;
}

bool same_shape(const TensorView& v, int rank, const std::int64_t* shape) {
  if (v.rank != rank) return false;
  for (int d = 0; d < rank; ++d)
    if (v.shape[d] != shape[d]) return false;
  return true;
}

void check_device(const TensorView& v, const char* name, Device device) {
  if (v.device != device)
    fail(std::string(name) + " is on " + to_string(v.device) + " but input is on " + to_string(device));
}

void check_options(const Options& o) {
  if (o.reduction != Reduction::none && o.reduction != Reduction::mean && o.reduction != Reduction::sum)
    fail("options.reduction: code " + std::to_string(static_cast<int>(o.reduction)) + " is not a reduction");
  if (o.num_threads < 0) fail("options.num_threads: " + std::to_string(o.num_threads) + " is negative");
  if (o.grid_blocks < 0) fail("options.grid_blocks: " + std::to_string(o.grid_blocks) + " is negative");
  if (o.algorithm != Algorithm::deterministic && o.algorithm != Algorithm::atomic &&
      o.algorithm != Algorithm::gridstride_atomic && o.algorithm != Algorithm::gridstride_store)
    fail("options.algorithm: code " + std::to_string(static_cast<int>(o.algorithm)) + " is not an algorithm");
}

// Merges dimensions that every elementwise operand walks contiguously, and
// drops size-1 dimensions, so most strided cases become rank 1 or 2.
void coalesce(Problem& p, std::vector<Operand*> ops) {
  if (p.n == 0) {  // nothing is read or written: one empty dimension (and no products of huge sizes)
    p.rank = 1;
    std::fill(p.shape, p.shape + kMaxRank, 0);
    for (Operand* o : ops) std::fill(o->strides, o->strides + kMaxRank, 0);
    p.contiguous = true;
    return;
  }
  int r = 0;
  std::int64_t shape[kMaxRank];
  std::vector<std::vector<std::int64_t>> strides(ops.size(), std::vector<std::int64_t>(kMaxRank));
  for (int d = 0; d < p.rank; ++d) {
    if (p.shape[d] == 1) continue;
    bool merge = r > 0;
    for (std::size_t k = 0; merge && k < ops.size(); ++k)
      merge = strides[k][r - 1] == ops[k]->strides[d] * p.shape[d];
    if (merge) {
      shape[r - 1] *= p.shape[d];
      for (std::size_t k = 0; k < ops.size(); ++k) strides[k][r - 1] = ops[k]->strides[d];
    } else {
      shape[r] = p.shape[d];
      for (std::size_t k = 0; k < ops.size(); ++k) strides[k][r] = ops[k]->strides[d];
      ++r;
    }
  }
  p.rank = r;
  for (int d = 0; d < kMaxRank; ++d) p.shape[d] = d < r ? shape[d] : 0;
  for (std::size_t k = 0; k < ops.size(); ++k)
    for (int d = 0; d < kMaxRank; ++d) ops[k]->strides[d] = d < r ? strides[k][d] : 0;
  p.contiguous = true;
  if (p.n > 0 && r > 0)
    for (Operand* o : ops) p.contiguous = p.contiguous && r == 1 && o->strides[0] == 1;
}

void check_loss_dtype(const TensorView& v, const char* name, DType in) {
  if (v.dtype != in && !(is_16bit(in) && v.dtype == DType::f32))
    fail(std::string(name) + ": dtype " + to_string(v.dtype) + " is neither the input dtype " + to_string(in) +
         (is_16bit(in) ? " nor float32" : ""));
}

// Everything the three entry points share: input, target, options.
Problem make_problem(Op op, const TensorView& input, const TensorView& target, const Options& options) {
  check_options(options);
  check_view(input, "input");
  check_view(target, "target");
  if (input.dtype != target.dtype)
    fail(std::string("target: dtype ") + to_string(target.dtype) + " differs from input dtype " +
         to_string(input.dtype));
  check_device(target, "target", input.device);
  Problem p;
  p.op = op;
  p.reduction = options.reduction;
  p.dtype = input.dtype;
  p.device = input.device;
  if (!broadcast_shapes(input, target, p.rank, p.shape))
    fail("target: shape " + shape_str(target) + " does not broadcast with input shape " + shape_str(input));
  p.n = 1;
  for (int d = 0; d < p.rank; ++d) {
    if (p.shape[d] != 0 && p.n > INT64_MAX / p.shape[d]) fail("input: broadcast shape has more than 2^63 elements");
    p.n *= p.shape[d];
  }
  p.global_n = p.n;
  p.input = broadcast_operand(input, p.rank, p.shape);
  p.target = broadcast_operand(target, p.rank, p.shape);
  p.num_threads = options.num_threads;
  p.cpu_run_tasks = options.cpu_run_tasks;
  p.stream = options.stream;
  p.programmatic_launch = options.programmatic_launch;
  p.grid_blocks = options.grid_blocks;
  p.algorithm = options.algorithm;
  if (p.algorithm != Algorithm::deterministic) {
    if (p.device != Device::cuda)
      fail(std::string("options.algorithm: ") + to_string(p.algorithm) + " is a CUDA comparison algorithm; the " +
           to_string(p.device) + " backend has only deterministic");
    if (op != Op::forward)
      fail(std::string("options.algorithm: ") + to_string(p.algorithm) + " exists for forward only");
  }
  return p;
}

void check_grad_view(const TensorView& g, const char* name, const Problem& p, const TensorView& input,
                     const TensorView& target) {
  check_view(g, name);
  check_device(g, name, p.device);
  if (g.dtype != p.dtype)
    fail(std::string(name) + ": dtype " + to_string(g.dtype) + " differs from input dtype " + to_string(p.dtype));
  if (!same_shape(g, p.rank, p.shape))
    fail(std::string(name) + ": shape " + shape_str(g) + " is not the broadcast shape " + shape_str(p.rank, p.shape));
  check_writable(g, name);
  check_no_overlap(g, name, input, "input");
  check_no_overlap(g, name, target, "target");
}

// grad_input and, when given, grad_target of a call that writes gradients:
// checked against the inputs, each other and `others` (views they must not
// overlap), then added to the problem and to its elementwise operands.
void attach_gradients(Problem& p, std::vector<Operand*>& ew, const TensorView& input, const TensorView& target,
                      const TensorView& grad_input, const TensorView& grad_target,
                      std::initializer_list<std::pair<const TensorView*, const char*>> others) {
  check_grad_view(grad_input, "grad_input", p, input, target);
  for (const auto& o : others) check_no_overlap(grad_input, "grad_input", *o.first, o.second);
  p.grad_input = broadcast_operand(grad_input, p.rank, p.shape);
  ew.push_back(&p.grad_input);
  if (grad_target.data == nullptr) return;
  check_grad_view(grad_target, "grad_target", p, input, target);
  for (const auto& o : others) check_no_overlap(grad_target, "grad_target", *o.first, o.second);
  check_no_overlap(grad_target, "grad_target", grad_input, "grad_input");
  p.grad_target = broadcast_operand(grad_target, p.rank, p.shape);
  ew.push_back(&p.grad_target);
}

void check_loss_out(Problem& p, const TensorView& out, const TensorView& input, const TensorView& target) {
  check_view(out, "out");
  check_device(out, "out", p.device);
  check_loss_dtype(out, "out", p.dtype);
  if (p.reduces()) {
    if (out.numel() != 1)
      fail("out: shape " + shape_str(out) + " has " + std::to_string(out.numel()) + " elements; reduction " +
           to_string(p.reduction) + " writes one");
  } else {
    if (!same_shape(out, p.rank, p.shape))
      fail("out: shape " + shape_str(out) + " is not the broadcast shape " + shape_str(p.rank, p.shape) +
           " that reduction none writes");
    check_writable(out, "out");
  }
  check_no_overlap(out, "out", input, "input");
  check_no_overlap(out, "out", target, "target");
  p.out.data = out.data;
  p.out.dtype = out.dtype;
  if (!p.reduces()) p.out = broadcast_operand(out, p.rank, p.shape);
}

void run(Problem& p, std::vector<Operand*> elementwise) {
  coalesce(p, std::move(elementwise));
  if (p.device == Device::cuda) {
    if (!detail::cuda::available())
      throw Unavailable("device cuda: this build of mseloss has no CUDA backend, or no CUDA device is visible");
    detail::cuda::run(p);
  } else {
    detail::cpu::run(p);
  }
}

}  // namespace

void forward(const TensorView& input, const TensorView& target, const TensorView& out, const Options& options) {
  Problem p = make_problem(Op::forward, input, target, options);
  check_loss_out(p, out, input, target);
  std::vector<Operand*> ew = {&p.input, &p.target};
  if (!p.reduces()) ew.push_back(&p.out);
  run(p, ew);
}

void backward(const TensorView& input, const TensorView& target, const TensorView& grad_output,
              const TensorView& grad_input, const TensorView& grad_target, const Options& options) {
  Problem p = make_problem(Op::backward, input, target, options);
  check_view(grad_output, "grad_output");
  check_device(grad_output, "grad_output", p.device);
  check_loss_dtype(grad_output, "grad_output", p.dtype);
  if (p.reduces()) {
    if (grad_output.numel() != 1)
      fail("grad_output: shape " + shape_str(grad_output) + " has " + std::to_string(grad_output.numel()) +
           " elements; reduction " + to_string(p.reduction) + " needs one");
    p.grad_output.data = grad_output.data;
    p.grad_output.dtype = grad_output.dtype;
  } else {
    if (!broadcasts_to(grad_output, p.rank, p.shape))
      fail("grad_output: shape " + shape_str(grad_output) + " does not broadcast to the loss shape " +
           shape_str(p.rank, p.shape));
    p.grad_output = broadcast_operand(grad_output, p.rank, p.shape);
  }
  std::vector<Operand*> ew = {&p.input, &p.target};
  attach_gradients(p, ew, input, target, grad_input, grad_target, {{&grad_output, "grad_output"}});
  if (!p.reduces()) ew.push_back(&p.grad_output);
  run(p, ew);
}

void forward_backward(const TensorView& input, const TensorView& target, const TensorView& out,
                      const TensorView& grad_input, const TensorView& grad_target, double grad_scale,
                      const Options& options) {
  Problem p = make_problem(Op::forward_backward, input, target, options);
  check_loss_out(p, out, input, target);
  p.grad_scale = grad_scale;
  std::vector<Operand*> ew = {&p.input, &p.target};
  attach_gradients(p, ew, input, target, grad_input, grad_target, {{&out, "out"}});
  if (!p.reduces()) ew.push_back(&p.out);
  run(p, ew);
}

void scale_gradient(const TensorView& grad_input, const TensorView& grad_output, const TensorView& grad_target,
                    const Options& options) {
  check_options(options);
  check_view(grad_input, "grad_input");
  check_writable(grad_input, "grad_input");
  Problem p;
  p.op = Op::scale;
  p.reduction = Reduction::sum;  // g is one element
  p.dtype = grad_input.dtype;
  p.device = grad_input.device;
  p.rank = grad_input.rank;
  std::copy(grad_input.shape, grad_input.shape + kMaxRank, p.shape);
  p.n = checked_numel(grad_input, "grad_input");
  check_view(grad_output, "grad_output");
  check_device(grad_output, "grad_output", p.device);
  check_loss_dtype(grad_output, "grad_output", p.dtype);
  if (grad_output.numel() != 1)
    fail("grad_output: shape " + shape_str(grad_output) + " has " + std::to_string(grad_output.numel()) +
         " elements; scale_gradient needs one");
  check_no_overlap(grad_input, "grad_input", grad_output, "grad_output");
  p.grad_output.data = grad_output.data;
  p.grad_output.dtype = grad_output.dtype;
  p.grad_input = broadcast_operand(grad_input, p.rank, p.shape);
  p.input = p.grad_input;  // read and written in place
  p.num_threads = options.num_threads;
  p.cpu_run_tasks = options.cpu_run_tasks;
  p.stream = options.stream;
  p.programmatic_launch = options.programmatic_launch;
  p.grid_blocks = options.grid_blocks;
  std::vector<Operand*> ew = {&p.input, &p.grad_input};
  if (grad_target.data != nullptr) {
    check_view(grad_target, "grad_target");
    check_device(grad_target, "grad_target", p.device);
    if (grad_target.dtype != p.dtype)
      fail(std::string("grad_target: dtype ") + to_string(grad_target.dtype) + " differs from grad_input dtype " +
           to_string(p.dtype));
    if (!same_shape(grad_target, p.rank, p.shape))
      fail("grad_target: shape " + shape_str(grad_target) + " is not the grad_input shape " + shape_str(grad_input));
    check_writable(grad_target, "grad_target");
    check_no_overlap(grad_target, "grad_target", grad_input, "grad_input");
    check_no_overlap(grad_target, "grad_target", grad_output, "grad_output");
    p.grad_target = broadcast_operand(grad_target, p.rank, p.shape);
    ew.push_back(&p.grad_target);
  }
  run(p, ew);
}

static_assert(kMaxPartialsNumel == 2 * detail::kMaxChunks, "a partials buffer of kMaxPartialsNumel fits any N");

std::int64_t chunk_numel(std::int64_t global_numel, DType dtype) {
  if (!valid_dtype(dtype)) fail("dtype: code " + std::to_string(static_cast<int>(dtype)) + " is not a dtype");
  if (global_numel < 0) fail("global_numel: " + std::to_string(global_numel) + " is negative");
  return detail::make_geometry(global_numel, static_cast<int>(dtype_size(dtype))).chunk;
}

std::int64_t partials_numel(std::int64_t global_numel, DType dtype) {
  chunk_numel(global_numel, dtype);  // checks the arguments
  return 2 * detail::make_geometry(global_numel, static_cast<int>(dtype_size(dtype))).chunks;
}

namespace {

// A partials buffer: contiguous fp64 on `device`, at least 2 K values.
void check_partials(const TensorView& v, Device device, std::int64_t global_numel, DType dtype) {
  check_view(v, "partials");
  check_device(v, "partials", device);
  if (v.dtype != DType::f64) fail(std::string("partials: dtype ") + to_string(v.dtype) + " is not float64");
  if (!v.is_contiguous()) fail("partials: the view is not contiguous");
  const std::int64_t need = partials_numel(global_numel, dtype);
  if (v.numel() < need)
    fail("partials: " + std::to_string(v.numel()) + " values, but " + std::to_string(global_numel) +
         " elements of " + to_string(dtype) + " have " + std::to_string(need / 2) + " chunks, 2 values each");
}

void check_reduces(const Options& options) {
  if (options.reduction == Reduction::none)
    fail("options.reduction: none has no partials; call forward() on each shard");
  if (options.algorithm != Algorithm::deterministic)
    fail(std::string("options.algorithm: ") + to_string(options.algorithm) + " has no partials; only deterministic");
}

}  // namespace

void shard_partials(const TensorView& input, const TensorView& target, const Shard& shard,
                    const TensorView& partials, const TensorView& grad_input, const TensorView& grad_target,
                    double grad_scale, const Options& options) {
  check_reduces(options);
  const bool grad = grad_input.data != nullptr || grad_target.data != nullptr;
  Problem p = make_problem(grad ? Op::forward_backward : Op::forward, input, target, options);
  if (shard.global_numel < 0 || shard.offset < 0)
    fail("shard: global_numel " + std::to_string(shard.global_numel) + " and offset " +
         std::to_string(shard.offset) + " must not be negative");
  if (p.n > shard.global_numel - shard.offset)
    fail("shard: offset " + std::to_string(shard.offset) + " plus the shard's " + std::to_string(p.n) +
         " elements exceeds global_numel " + std::to_string(shard.global_numel));
  const std::int64_t C = chunk_numel(shard.global_numel, p.dtype), end = shard.offset + p.n;
  // An empty shard writes zeros only: any offset up to N will do.
  if (p.n > 0 && shard.offset % C != 0)
    fail("shard.offset: " + std::to_string(shard.offset) + " is not a multiple of the chunk size " +
         std::to_string(C) + " of " + std::to_string(shard.global_numel) + " " + to_string(p.dtype) +
         " elements (docs/numerics.md §9)");
  if (p.n > 0 && end != shard.global_numel && end % C != 0)
    fail("shard: it ends at element " + std::to_string(end) + ", neither at global_numel " +
         std::to_string(shard.global_numel) + " nor at a multiple of the chunk size " + std::to_string(C));
  check_partials(partials, p.device, shard.global_numel, p.dtype);
  check_writable(partials, "partials");
  check_no_overlap(partials, "partials", input, "input");
  check_no_overlap(partials, "partials", target, "target");
  std::vector<Operand*> ew = {&p.input, &p.target};
  if (grad) {
    if (grad_input.data == nullptr) fail("grad_input: null, but grad_target is given");
    attach_gradients(p, ew, input, target, grad_input, grad_target, {{&partials, "partials"}});
    p.grad_scale = grad_scale;
  }
  p.stage = detail::Stage::partials;
  p.global_n = shard.global_numel;
  p.chunk_base = shard.offset / C;
  p.partials = partials.data;
  p.partials_numel = partials.numel();
  run(p, ew);
}

void finish_partials(const TensorView& partials, std::int64_t global_numel, DType dtype, const TensorView& out,
                     const Options& options) {
  check_options(options);
  check_reduces(options);
  chunk_numel(global_numel, dtype);
  check_partials(partials, partials.device, global_numel, dtype);
  Problem p;
  p.op = Op::forward;
  p.stage = detail::Stage::finish;
  p.reduction = options.reduction;
  p.dtype = dtype;
  p.device = partials.device;
  p.global_n = global_numel;
  p.partials = partials.data;
  p.num_threads = options.num_threads;
  p.cpu_run_tasks = options.cpu_run_tasks;
  p.stream = options.stream;
  p.programmatic_launch = options.programmatic_launch;
  check_view(out, "out");
  check_device(out, "out", p.device);
  check_loss_dtype(out, "out", p.dtype);
  if (out.numel() != 1)
    fail("out: shape " + shape_str(out) + " has " + std::to_string(out.numel()) + " elements; reduction " +
         to_string(p.reduction) + " writes one");
  check_no_overlap(out, "out", partials, "partials");
  p.out.data = out.data;
  p.out.dtype = out.dtype;
  run(p, {});
}

}  // namespace mseloss
