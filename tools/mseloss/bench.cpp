#include "mseloss/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

namespace mseloss::bench {

const char* to_string(BenchOp op) {
  switch (op) {
    case BenchOp::forward: return "forward";
    case BenchOp::backward: return "backward";
    case BenchOp::fused: return "fused";
  }
  return "?";
}

double moved_bytes(BenchOp op, Reduction r, double tensor_bytes, bool grad_target) {
  const bool none = r == Reduction::none;
  if (op == BenchOp::forward) return (none ? 3.0 : 2.0) * tensor_bytes;
  return ((none ? 4.0 : 3.0) + (grad_target ? 1.0 : 0.0)) * tensor_bytes;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

namespace {

using Clock = std::chrono::steady_clock;

// Median wall time of fn() in microseconds, after two warm-up calls.
template <class F>
double time_us(const Config& c, F&& fn) {
  fn();
  fn();
  std::vector<double> t;
  auto start = Clock::now();
  while (static_cast<int>(t.size()) < c.min_runs ||
         std::chrono::duration<double>(Clock::now() - start).count() < c.min_seconds) {
    auto a = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
    if (t.size() > 2000) break;
  }
  return median(t);
}

// The probe and the call timed in turn, as the CUDA bench's time_paired does:
// the median of the per-pair ratios probe / call and the medians of each
// side. A shared machine's bandwidth drifts between the probe timed once per
// size and the calls; here the two sides of a pair are milliseconds apart.
template <class FC, class FF>
Paired time_paired(const Config& c, FC&& ceiling, FF&& fn) {
  ceiling();
  fn();
  std::vector<double> r, tc, tf;
  auto once = [](auto&& f) {
    const auto a = Clock::now();
    f();
    return std::chrono::duration<double, std::micro>(Clock::now() - a).count();
  };
  for (int i = 0; i < std::max(c.min_runs, 5); ++i) {
    tc.push_back(once(ceiling));
    tf.push_back(once(fn));
    r.push_back(tc.back() / tf.back());
  }
  return {median(r), median(tc), median(tf)};
}

// Splits [0, n) over threads; thread t runs fn(t, begin, end).
template <class F>
void parallel(std::int64_t n, int threads, F&& fn) {
  if (n < (std::int64_t{1} << 18)) threads = 1;  // below ~256 KB a thread start costs more than it saves
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back([&, t] { fn(t, n * t / threads, n * (t + 1) / threads); });
  fn(0, 0, n / threads);
  for (auto& th : pool) th.join();
}

volatile float g_sink;

// The read probe: every thread sums its share of both arrays with 8
// independent accumulators; nothing is written but one float.
void read_probe(const float* x, const float* y, std::int64_t n_words, int threads) {
  std::vector<float> part(threads);
  parallel(n_words, threads, [&](int t, std::int64_t b, std::int64_t e) {
    float acc[8] = {};
    std::int64_t i = b;
    for (; i + 8 <= e; i += 8)
      for (int k = 0; k < 8; ++k) acc[k] += x[i + k] + y[i + k];
    for (; i < e; ++i) acc[0] += x[i] + y[i];
    float s = 0;
    for (float a : acc) s += a;
    part[t] = s;
  });
  float s = 0;
  for (float p : part) s += p;
  g_sink = s;
}

void copy_probe(const unsigned char* src, unsigned char* dst, std::int64_t bytes, int threads) {
  parallel(bytes, threads, [&](int, std::int64_t b, std::int64_t e) { std::memcpy(dst + b, src + b, e - b); });
}

void fill_random(std::vector<unsigned char>& buf, DType t, std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (std::int64_t i = 0; i < n; ++i) {
    float v = dist(rng);
    switch (t) {
      case DType::f32: std::memcpy(&buf[i * 4], &v, 4); break;
      case DType::f64: {
        double d = v;
        std::memcpy(&buf[i * 8], &d, 8);
        break;
      }
      case DType::f16:
      case DType::bf16: {
        // Any finite 16-bit pattern will do for timing: take the top bits of v
        // for bf16, and a normal half for f16.
        std::uint32_t u;
        std::memcpy(&u, &v, 4);
        std::uint16_t h = t == DType::bf16 ? static_cast<std::uint16_t>(u >> 16)
                                           : static_cast<std::uint16_t>(0x3000 | (u & 0x83ff));
        std::memcpy(&buf[i * 2], &h, 2);
        break;
      }
    }
  }
}

}  // namespace

std::vector<Row> run(const Config& c) {
  if (c.device == Device::cuda) return run_cuda(c);
  std::vector<Row> rows;
  const int threads = c.num_threads > 0 ? c.num_threads : default_num_threads();
  std::size_t total = c.sizes.size() * c.dtypes.size() * c.ops.size() * c.reductions.size(), done = 0;
  for (std::int64_t n : c.sizes) {
    for (DType t : c.dtypes) {
      const std::size_t es = dtype_size(t);
      std::vector<unsigned char> x(n * es), y(n * es), out(n * es), g1(n * es), gout(n * es), g2(c.grad_target ? n * es : 0);
      fill_random(x, t, n, 1);
      fill_random(y, t, n, 2);
      fill_random(gout, t, n, 3);  // upstream gradient: element 0 serves as the scalar
      auto probe = [&] {
        read_probe(reinterpret_cast<const float*>(x.data()), reinterpret_cast<const float*>(y.data()),
                   static_cast<std::int64_t>(n * es / 4), threads);
      };
      const double probe_us = time_us(c, probe);
      // A copy of moved / 2 bytes, timed for each size an operation needs,
      // all before the operations (see run_cuda).
      std::vector<std::pair<double, double>> copy_times;  // (moved, us)
      auto copy_us = [&](double moved) {
        for (const auto& [m, us] : copy_times)
          if (m == moved) return us;
        const auto half = static_cast<std::int64_t>(moved / 2);
        std::vector<unsigned char> src(half, 1), dst(half);
        const double us = time_us(c, [&] { copy_probe(src.data(), dst.data(), half, threads); });
        copy_times.emplace_back(moved, us);
        return us;
      };
      for (BenchOp op : c.ops)
        for (Reduction r : c.reductions) copy_us(moved_bytes(op, r, static_cast<double>(n * es), c.grad_target));
      for (BenchOp op : c.ops) {
        for (Reduction r : c.reductions) {
          if (c.progress) std::fprintf(stderr, "\r[%zu/%zu] cpu %s %s %s N=%lld      ", ++done, total, to_string(op), mseloss::to_string(t), mseloss::to_string(r), static_cast<long long>(n));
          TensorView xv = TensorView::contiguous(x.data(), t, {n});
          TensorView yv = TensorView::contiguous(y.data(), t, {n});
          double loss_storage = 0;
          TensorView lv = r == Reduction::none ? TensorView::contiguous(out.data(), t, {n})
                                               : TensorView::scalar(&loss_storage, t);
          TensorView gv = TensorView::contiguous(g1.data(), t, {n});
          TensorView gt = c.grad_target ? TensorView::contiguous(g2.data(), t, {n}) : TensorView{};
          Options o;
          o.reduction = r;
          o.num_threads = threads;
          TensorView go = r == Reduction::none ? TensorView::contiguous(gout.data(), t, {n})
                                               : TensorView::scalar(gout.data(), t);
          Row row;
          double us = 0;
          const double bytes = moved_bytes(op, r, static_cast<double>(n * es), c.grad_target);
          switch (op) {
            case BenchOp::forward: {
              auto call = [&] { forward(xv, yv, lv, o); };
              us = time_us(c, call);
              const Paired pr = time_paired(c, probe, call);
              row.vs_probe_paired = pr.ratio;
              row.probe_paired_us = pr.ceiling_us;
              row.us_paired = pr.call_us;
              break;
            }
            case BenchOp::backward: us = time_us(c, [&] { backward(xv, yv, go, gv, gt, o); }); break;
            case BenchOp::fused: us = time_us(c, [&] { forward_backward(xv, yv, lv, gv, gt, 1.0, o); }); break;
          }
          row.op = to_string(op);
          row.grad_target = c.grad_target && op != BenchOp::forward;
          row.device = "cpu";
          row.algorithm = "deterministic";
          row.dtype = mseloss::to_string(t);
          row.reduction = mseloss::to_string(r);
          row.n = n;
          row.bytes = bytes;
          row.us = us;
          row.gbps = bytes / us / 1e3;
          row.probe_us = probe_us;
          row.copy_us = copy_us(bytes);
          row.vs_probe = probe_us / us;
          row.vs_copy = row.copy_us / us;
          rows.push_back(row);
        }
      }
    }
  }
  if (c.progress) std::fprintf(stderr, "\r%60s\r", "");
  return rows;
}

void print_table(const std::vector<Row>& rows) {
  std::printf("%-11s %-5s %-17s %-8s %-4s %11s %10s %9s %10s %8s %8s %9s %7s %8s %14s\n", "op", "dev", "algorithm", "dtype",
              "red", "N", "us", "GB/s", "probe_us", "x_probe", "x_copy", "graph_us", "x_cub", "host_us", "x_probe_paired");
  for (const Row& r : rows) {
    const std::string op = r.op + (r.grad_target ? "+gt" : "");  // +gt: grad_target written too
    std::printf("%-11s %-5s %-17s %-8s %-4s %11lld %10.2f %9.1f %10.2f %8.3f %8.3f", op.c_str(), r.device.c_str(),
                r.algorithm.c_str(), r.dtype.c_str(), r.reduction.c_str(), static_cast<long long>(r.n), r.us, r.gbps,
                r.probe_us, r.vs_probe, r.vs_copy);
    if (r.graph_us > 0) std::printf(" %9.2f", r.graph_us); else std::printf(" %9s", "-");
    if (r.cub_us > 0) std::printf(" %7.3f", r.vs_cub); else std::printf(" %7s", "-");
    if (r.host_us > 0) std::printf(" %8.2f", r.host_us); else std::printf(" %8s", "-");
    if (r.vs_probe_paired > 0) std::printf(" %14.3f\n", r.vs_probe_paired); else std::printf(" %14s\n", "-");
  }
}

void write_csv(const std::vector<Row>& rows, const std::string& path) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error(path + ": cannot create");
  f << "op,device,algorithm,dtype,reduction,n,bytes,us,gbps,probe_us,copy_us,vs_probe,vs_copy,graph_us,cub_us,vs_cub,host_us,"
       "vs_probe_paired,probe_paired_us,us_paired,grad_target\n";
  for (const Row& r : rows)
    f << r.op << ',' << r.device << ',' << r.algorithm << ',' << r.dtype << ',' << r.reduction << ',' << r.n << ','
      << r.bytes << ',' << r.us << ',' << r.gbps << ',' << r.probe_us << ',' << r.copy_us << ',' << r.vs_probe << ','
      << r.vs_copy << ',' << r.graph_us << ',' << r.cub_us << ',' << r.vs_cub << ',' << r.host_us << ','
      << r.vs_probe_paired << ',' << r.probe_paired_us << ',' << r.us_paired << ',' << (r.grad_target ? 1 : 0) << '\n';
}

void write_json(const std::vector<Row>& rows, const std::string& path) {
  nlohmann::json j = nlohmann::json::array();
  for (const Row& r : rows)
    j.push_back({{"op", r.op}, {"device", r.device}, {"algorithm", r.algorithm}, {"dtype", r.dtype},
                 {"reduction", r.reduction}, {"n", r.n}, {"bytes", r.bytes}, {"us", r.us}, {"gbps", r.gbps},
                 {"probe_us", r.probe_us}, {"copy_us", r.copy_us}, {"vs_probe", r.vs_probe}, {"vs_copy", r.vs_copy},
                 {"graph_us", r.graph_us}, {"cub_us", r.cub_us}, {"vs_cub", r.vs_cub},
                 {"host_us", r.host_us}, {"vs_probe_paired", r.vs_probe_paired},
                 {"probe_paired_us", r.probe_paired_us}, {"us_paired", r.us_paired}, {"grad_target", r.grad_target}});
  std::ofstream f(path);
  if (!f) throw std::runtime_error(path + ": cannot create");
  f << j.dump(1) << '\n';
}

#ifndef MSELOSS_WITH_CUDA
std::vector<Row> run_cuda(const Config&) {
  throw Unavailable("device cuda: this build of mseloss has no CUDA backend");
}
void* device_alloc(std::size_t) { throw Unavailable("device cuda: this build of mseloss has no CUDA backend"); }
void device_free(void*) {}
void copy_to_device(void*, const void*, std::size_t) { throw Unavailable("device cuda: no CUDA backend"); }
void copy_to_host(void*, const void*, std::size_t) { throw Unavailable("device cuda: no CUDA backend"); }
#endif

}  // namespace mseloss::bench
