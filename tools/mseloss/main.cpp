// The `mseloss` command: the loss and gradient of .npy files, and the benchmark.
#include <CLI/CLI.hpp>
#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "mseloss/bench.hpp"
#include "mseloss/mseloss.hpp"
#include "mseloss/npy.hpp"

namespace {

using namespace mseloss;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Reduction parse_reduction(const std::string& s) {
  if (s == "mean") return Reduction::mean;
  if (s == "sum") return Reduction::sum;
  if (s == "none") return Reduction::none;
  throw UsageError("--reduction: '" + s + "' is not one of mean, sum, none");
}

Device parse_device(const std::string& s) {
  if (s == "cpu") return Device::cpu;
  if (s == "cuda") return Device::cuda;
  if (s == "auto") return cuda_available() ? Device::cuda : Device::cpu;
  throw UsageError("--device: '" + s + "' is not one of cpu, cuda, auto");
}

DType parse_dtype(const std::string& s) {
  if (s == "f32" || s == "float32" || s == "fp32") return DType::f32;
  if (s == "f64" || s == "float64" || s == "fp64") return DType::f64;
  if (s == "f16" || s == "float16" || s == "fp16") return DType::f16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  throw UsageError("--dtypes: '" + s + "' is not one of f32, f64, f16, bf16");
}

Algorithm parse_algorithm(const std::string& s) {
  if (s == "deterministic" || s == "default") return Algorithm::deterministic;
  if (s == "atomic") return Algorithm::atomic;
  if (s == "gridstride-atomic") return Algorithm::gridstride_atomic;
  if (s == "gridstride-store") return Algorithm::gridstride_store;
  throw UsageError("--algo: '" + s + "' is not one of deterministic, atomic, gridstride-atomic, gridstride-store");
}

bench::BenchOp parse_op(const std::string& s) {
  if (s == "forward") return bench::BenchOp::forward;
  if (s == "backward") return bench::BenchOp::backward;
  if (s == "fused") return bench::BenchOp::fused;
  throw UsageError("--op: '" + s + "' is not one of forward, backward, fused");
}

// "1024", "2^20", "1M": sizes for --sizes; "2^10..2^28" expands by powers of two.
std::vector<std::int64_t> parse_sizes(const std::string& list) {
  auto one = [](std::string s) -> std::int64_t {
    try {
      std::size_t caret = s.find('^');
      if (caret != std::string::npos) {
        long long b = std::stoll(s.substr(0, caret)), e = std::stoll(s.substr(caret + 1));
        if (e < 0 || e > 40) throw UsageError("--sizes: exponent in '" + s + "' is outside 0..40");
        std::int64_t v = 1;
        for (long long i = 0; i < e; ++i) v *= b;
        return v;
      }
      std::size_t used = 0;
      long long v = std::stoll(s, &used);
      if (used != s.size()) throw UsageError("--sizes: '" + s + "' is not a size");
      if (v < 0) throw UsageError("--sizes: '" + s + "' is negative");
      return v;
    } catch (const std::logic_error&) {
      throw UsageError("--sizes: '" + s + "' is not a size (use 1024 or 2^10)");
    }
  };
  std::vector<std::int64_t> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t dots = item.find("..");
    if (dots != std::string::npos) {
      std::int64_t a = one(item.substr(0, dots)), b = one(item.substr(dots + 2));
      for (std::int64_t v = a; v <= b && v > 0; v *= 2) out.push_back(v);
    } else {
      out.push_back(one(item));
    }
  }
  return out;
}

template <class T, class F>
std::vector<T> parse_list(const std::string& list, F&& parse) {
  std::vector<T> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse(item));
  return out;
}

// The loss value as a double, whatever its storage dtype.
double value_of(const void* p, DType t) {
  float f;
  std::uint32_t u;
  switch (t) {
    case DType::f32: std::memcpy(&f, p, 4); return f;
    case DType::f64: { double d; std::memcpy(&d, p, 8); return d; }
    case DType::f16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      // exact conversion through the exponent and mantissa fields
      int e = (h >> 10) & 0x1f, m = h & 0x3ff;
      double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
      return (h & 0x8000) ? -v : v;
    }
    case DType::bf16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      u = static_cast<std::uint32_t>(h) << 16;
      std::memcpy(&f, &u, 4);
      return f;
    }
  }
  return 0;
}

// A host or device buffer holding `bytes`.
struct Buffer {
  Device device;
  void* ptr = nullptr;
  std::vector<unsigned char> host;
  Buffer(Device d, std::size_t bytes) : device(d) {
    if (d == Device::cuda) ptr = bench::device_alloc(bytes ? bytes : 1);
    else { host.resize(bytes ? bytes : 1); ptr = host.data(); }
  }
  Buffer(Device d, const std::vector<unsigned char>& src) : Buffer(d, src.size()) {
    if (d == Device::cuda) bench::copy_to_device(ptr, src.data(), src.size());
    else std::memcpy(ptr, src.data(), src.size());
  }
  std::vector<unsigned char> read(std::size_t bytes) const {
    std::vector<unsigned char> out(bytes);
    if (device == Device::cuda) bench::copy_to_host(out.data(), ptr, bytes);
    else std::memcpy(out.data(), ptr, bytes);
    return out;
  }
  ~Buffer() { if (device == Device::cuda) bench::device_free(ptr); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

TensorView on_device(const npy::Array& a, const Buffer& b) {
  TensorView v = a.view();
  v.data = b.ptr;
  v.device = b.device;
  return v;
}

struct LossArgs {
  std::string input, target, reduction = "mean", device = "auto", out, grad, grad_output;
  bool json = false, bf16 = false;
  int threads = 0;
};

int run_loss(const LossArgs& a) {
  const Reduction red = parse_reduction(a.reduction);
  const Device dev = parse_device(a.device);
  if (red == Reduction::none && a.out.empty())
    throw UsageError("--out: reduction none gives one loss per element; name a .npy file to write them to");
  npy::Array x = npy::read(a.input, a.bf16);
  npy::Array y = npy::read(a.target, a.bf16);
  std::optional<npy::Array> g_arr;
  std::optional<double> g_value;
  if (!a.grad_output.empty()) {
    char* end = nullptr;
    double v = std::strtod(a.grad_output.c_str(), &end);
    if (end && *end == '\0' && end != a.grad_output.c_str()) g_value = v;
    else g_arr = npy::read(a.grad_output, a.bf16);
    if (a.grad.empty()) throw UsageError("--grad-output: given without --grad, so no gradient would be written");
  }
  if (g_arr && g_arr->dtype != x.dtype)
    throw UsageError("--grad-output: dtype " + std::string(to_string(g_arr->dtype)) + " differs from the input dtype " +
                     to_string(x.dtype));

  Buffer xb(dev, x.data), yb(dev, y.data);
  TensorView xv = on_device(x, xb), yv = on_device(y, yb);
  // The broadcast shape, for the outputs of none and the gradient.
  std::vector<std::int64_t> shape(std::max(x.shape.size(), y.shape.size()));
  for (std::size_t d = 0; d < shape.size(); ++d) {
    std::size_t dx = d + x.shape.size() - shape.size(), dy = d + y.shape.size() - shape.size();
    std::int64_t sx = d + x.shape.size() >= shape.size() ? x.shape[dx] : 1;
    std::int64_t sy = d + y.shape.size() >= shape.size() ? y.shape[dy] : 1;
    shape[d] = sx == 1 ? sy : sx;
    if (sx != sy && sx != 1 && sy != 1) {
      std::ostringstream m;
      m << "--target: shape (";
      for (auto s : y.shape) m << s << ",";
      m << ") does not broadcast with --input shape (";
      for (auto s : x.shape) m << s << ",";
      m << ")";
      throw UsageError(m.str());
    }
  }
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  const std::size_t es = dtype_size(x.dtype);
  const std::vector<std::int64_t> loss_shape = red == Reduction::none ? shape : std::vector<std::int64_t>{};
  const std::int64_t loss_n = red == Reduction::none ? n : 1;
  Buffer loss(dev, loss_n * es), grad(dev, a.grad.empty() ? 0 : n * es);
  TensorView lv = TensorView::contiguous(loss.ptr, x.dtype, static_cast<int>(loss_shape.size()), loss_shape.data(), dev);
  TensorView gv = TensorView::contiguous(grad.ptr, x.dtype, static_cast<int>(shape.size()), shape.data(), dev);
  Options o;
  o.reduction = red;
  o.num_threads = a.threads;
  if (a.grad.empty()) {
    forward(xv, yv, lv, o);
  } else if (g_arr) {
    Buffer gb(dev, g_arr->data);
    forward(xv, yv, lv, o);
    backward(xv, yv, on_device(*g_arr, gb), gv, {}, o);
  } else {
    forward_backward(xv, yv, lv, gv, {}, g_value.value_or(1.0), o);
  }
  std::vector<unsigned char> lh = loss.read(loss_n * es);
  std::vector<unsigned char> gh = a.grad.empty() ? std::vector<unsigned char>() : grad.read(n * es);
  // Both results exist before any file is written; each write is atomic.
  if (!a.out.empty()) npy::write(a.out, x.dtype, loss_shape, lh.data());
  if (!a.grad.empty()) npy::write(a.grad, x.dtype, shape, gh.data());

  if (red != Reduction::none) {
    double v = value_of(lh.data(), x.dtype);
    const int digits = x.dtype == DType::f64 ? 17 : 9;
    if (a.json) {
      char hex[64];
      std::snprintf(hex, sizeof hex, "%a", v);
      nlohmann::json j = {{"loss", std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(std::to_string(v))},
                          {"loss_hex", hex},
                          {"dtype", to_string(x.dtype)},
                          {"reduction", to_string(red)},
                          {"n", n},
                          {"device", to_string(dev)}};
      if (!a.out.empty()) j["out"] = a.out;
      if (!a.grad.empty()) j["grad"] = a.grad;
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("%.*g\n", digits, v);
    }
  } else if (a.json) {
    nlohmann::json j = {{"reduction", "none"}, {"n", n}, {"dtype", to_string(x.dtype)}, {"device", to_string(dev)}, {"out", a.out}};
    if (!a.grad.empty()) j["grad"] = a.grad;
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mseloss: mean squared error loss and its gradient, bit-reproducible on CPU and CUDA"};
  app.require_subcommand(1);

  LossArgs la;
  CLI::App* loss = app.add_subcommand("loss", "loss (and gradient) of two .npy arrays");
  loss->add_option("--input", la.input, "input .npy")->required();
  loss->add_option("--target", la.target, "target .npy")->required();
  loss->add_option("--reduction", la.reduction, "mean, sum or none")->capture_default_str();
  loss->add_option("--device", la.device, "cpu, cuda or auto")->capture_default_str();
  loss->add_option("--out", la.out, "write the loss to this .npy");
  loss->add_option("--grad", la.grad, "write the gradient w.r.t. input to this .npy");
  loss->add_option("--grad-output", la.grad_output, "upstream gradient: a number (default 1) or a .npy");
  loss->add_option("--threads", la.threads, "CPU threads (0 = all cores)");
  loss->add_flag("--json", la.json, "print a JSON line with the loss and its hex-float form");
  loss->add_flag("--bf16", la.bf16, "read '<u2' arrays as bfloat16 bits");

  std::string b_device = "auto", b_sizes = "2^10..2^24", b_dtypes = "f32", b_reds = "mean", b_algos = "deterministic",
              b_ops = "forward", b_csv, b_json;
  int b_threads = 0, b_runs = 20;
  CLI::App* bench = app.add_subcommand("bench", "time the library against ceilings measured in the same run");
  bench->add_option("--device", b_device, "cpu, cuda or auto")->capture_default_str();
  bench->add_option("--sizes", b_sizes, "sizes: 1024,2^20 or a range 2^10..2^28")->capture_default_str();
  bench->add_option("--dtypes", b_dtypes, "f32,f64,f16,bf16")->capture_default_str();
  bench->add_option("--reductions", b_reds, "mean,sum,none")->capture_default_str();
  bench->add_option("--algo", b_algos, "deterministic,atomic,gridstride-atomic,gridstride-store")->capture_default_str();
  bench->add_option("--op", b_ops, "forward,backward,fused")->capture_default_str();
  bench->add_option("--threads", b_threads, "CPU threads (0 = all cores)");
  int b_grid = 0;
  bench->add_option("--grid", b_grid, "CUDA: force this many blocks (tuning experiments)");
  int b_misalign = 0;
  bench->add_option("--misalign", b_misalign, "CUDA: offset input and target by this many elements from 16-byte alignment")
      ->check(CLI::Range(0, 15));
  bool b_plain_launch = false, b_grad_target = false;
  bench->add_flag("--plain-launch", b_plain_launch,
                  "CUDA: launch the library's kernels and the read probe without programmatic dependent launch");
  bench->add_flag("--grad-target", b_grad_target, "backward and fused also write grad_target (a target that requires grad)");
  bench->add_option("--runs", b_runs, "timed runs per point (median reported)")->capture_default_str();
  bench->add_option("--csv", b_csv, "also write the table as CSV");
  bench->add_option("--json", b_json, "also write the table as JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*loss) return run_loss(la);
    bench::Config c;
    c.device = parse_device(b_device);
    c.sizes = parse_sizes(b_sizes);
    c.dtypes = parse_list<DType>(b_dtypes, parse_dtype);
    c.reductions = parse_list<Reduction>(b_reds, parse_reduction);
    c.algorithms = parse_list<Algorithm>(b_algos, parse_algorithm);
    c.ops = parse_list<bench::BenchOp>(b_ops, parse_op);
    c.num_threads = b_threads;
    c.grid_blocks = b_grid;
    c.misalign = b_misalign;
    c.programmatic_launch = !b_plain_launch;
    c.grad_target = b_grad_target;
    c.min_runs = b_runs;
    c.progress = isatty(2);  // a progress line only on a terminal
    std::printf("# mseloss bench: device %s, %d CPU threads\n", to_string(c.device),
                b_threads > 0 ? b_threads : default_num_threads());
    if (b_grid > 0) std::printf("# grid forced to %d blocks\n", b_grid);
    if (b_misalign > 0) std::printf("# input and target misaligned by %d elements\n", b_misalign);
    if (b_plain_launch) std::printf("# plain launches (no programmatic dependent launch)\n");
    auto rows = bench::run(c);
    bench::print_table(rows);
    if (!b_csv.empty()) bench::write_csv(rows, b_csv);
    if (!b_json.empty()) bench::write_json(rows, b_json);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mseloss: error: %s\n", e.what());
    return 1;
  }
}
