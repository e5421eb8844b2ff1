// CPU backend: evaluates docs/numerics.md literally. Chunks are split over
// threads in contiguous ranges; each chunk's lanes are accumulated row by row
// (§3), folded by the lane tree, and the chunk partials by the chunk tree
// (§2). Thread count therefore changes who computes a chunk, never its value.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include "common/numerics.hpp"
#include "common/problem.hpp"
#include "cpu/convert.hpp"
#include "cpu/lanes.hpp"

namespace mseloss::detail::cpu {
namespace {

// The fp64 lane loops (cpu/lanes_dd.cpp) beside this file's float ones.
using cpu::accumulate_block;
using cpu::add_terms;
using cpu::tree_level;

template <class T>
inline bool aligned_for(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0;
}

// Calls f(k, offset) for the logical elements i0 + k, k < count, of a strided
// operand: a row-major walk with a carried multi-index (one div/mod per
// dimension per row, not per element).
template <class F>
void walk_strided(const Problem& p, const Operand& o, std::int64_t i0, std::int64_t count, F&& f) {
  std::int64_t idx[kMaxRank];
  std::int64_t off = 0, rest = i0;
  for (int d = p.rank - 1; d >= 0; --d) {
    idx[d] = rest % p.shape[d];
    rest /= p.shape[d];
    off += idx[d] * o.strides[d];
  }
  const int last = p.rank - 1;
  for (std::int64_t k = 0; k < count; ++k) {
    f(k, off);
    for (int d = last; d >= 0; --d) {
      off += o.strides[d];
      if (++idx[d] < p.shape[d]) break;
      off -= o.strides[d] * p.shape[d];
      idx[d] = 0;
    }
  }
}

// A contiguous run of 16-bit values converts through the vectorised loops of cpu/convert.hpp.
inline void load_contiguous(const Half* src, std::int64_t n, float* dst) { load_halves(src, n, dst); }
inline void load_contiguous(const BFloat16* src, std::int64_t n, float* dst) { load_bf16s(src, n, dst); }
inline void store_contiguous(const float* src, std::int64_t n, Half* dst) { store_halves(src, n, dst); }
inline void store_contiguous(const float* src, std::int64_t n, BFloat16* dst) { store_bf16s(src, n, dst); }
template <class T>
constexpr bool kSixteenBit = std::is_same<T, Half>::value || std::is_same<T, BFloat16>::value;

// Reads logical elements [i0, i0 + count) of an operand, converted to the compute type.
template <class T, class C>
void load_row(const Problem& p, const Operand& o, std::int64_t i0, std::int64_t count, C* buf) {
  const T* base = static_cast<const T*>(o.data);
  if (p.contiguous) {
    if constexpr (kSixteenBit<T> && std::is_same<C, float>::value) {
      load_contiguous(base + i0, count, buf);
    } else {
      for (std::int64_t k = 0; k < count; ++k) buf[k] = static_cast<C>(Traits<T>::load(read_elem(base + i0 + k)));
    }
    return;
  }
  walk_strided(p, o, i0, count, [&](std::int64_t k, std::int64_t off) {
    buf[k] = static_cast<C>(Traits<T>::load(read_elem(base + off)));
  });
}

// Writes logical elements [i0, i0 + count), rounded to the storage type (NaN canonical, §6).
template <class T, class C>
void store_row(const Problem& p, const Operand& o, std::int64_t i0, std::int64_t count, const C* vals) {
  T* base = static_cast<T*>(o.data);
  if (p.contiguous) {
    if constexpr (kSixteenBit<T> && std::is_same<C, float>::value) {
      store_contiguous(vals, count, base + i0);
    } else {
      for (std::int64_t k = 0; k < count; ++k) write_elem(base + i0 + k, Traits<T>::store(vals[k]));
    }
    return;
  }
  walk_strided(p, o, i0, count,
               [&](std::int64_t k, std::int64_t off) { write_elem(base + off, Traits<T>::store(vals[k])); });
}

template <class C>
void load_row_any(const Problem& p, const Operand& o, std::int64_t i0, std::int64_t n, C* buf) {
  switch (o.dtype) {
    case DType::f32: return load_row<float>(p, o, i0, n, buf);
    case DType::f64: return load_row<double>(p, o, i0, n, buf);
    case DType::f16: return load_row<Half>(p, o, i0, n, buf);
    case DType::bf16: return load_row<BFloat16>(p, o, i0, n, buf);
  }
}

double scalar_as_double(const Operand& o) {
  switch (o.dtype) {
    case DType::f32: return read_elem(static_cast<const float*>(o.data));
    case DType::f64: return read_elem(static_cast<const double*>(o.data));
    case DType::f16: return half_to_float(read_elem(static_cast<const Half*>(o.data)));
    case DType::bf16: return bf16_to_float(read_elem(static_cast<const BFloat16*>(o.data)));
  }
  return 0.0;
}

// The reduction's hot loop (§1, §3) for the float compute type. Its template
// is in cpu/lanes.hpp, with the fp64 loops (defined in lanes_dd.cpp).
MSELOSS_CPU_CLONES_WIDE void accumulate_block(double* __restrict lanes, const float* __restrict x,
                                         const float* __restrict y, std::int64_t stride, int nr, std::int64_t count) {
  accumulate_any_rows(lanes, x, y, stride, nr, count);
}

// The fp64 lanes' double-double sum is cloned (add_terms in lanes_dd.cpp):
// bound by arithmetic, it gains from wide vectors. The other elementwise loops
// are bound by memory and stay in run_chunks, as baseline SSE2: as AVX2 clones
// they were no faster, as AVX-512 ones 25-35 % slower (session 43).
inline void add_terms(double* __restrict lanes, const float* __restrict d, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) lanes[k] = acc_add_term(lanes[k], d[k]);
}

// §2: the pairwise tree over a power-of-two array, one level at a time: level
// values are compacted (b[j] = a[2j] (+) a[2j+1]) so that the loop vectorises.
// `a` is destroyed; `scratch` holds count / 2 values.
MSELOSS_CPU_CLONES void tree_level(double* __restrict b, const double* __restrict a, std::int64_t half) {
  for (std::int64_t j = 0; j < half; ++j) b[j] = a[2 * j] + a[2 * j + 1];
}
template <class Acc>
Acc pairwise(Acc* a, Acc* scratch, std::int64_t count) {
  for (std::int64_t len = count; len > 1; len /= 2) {
    tree_level(scratch, a, len / 2);
    std::swap(a, scratch);
  }
  return a[0];
}

// A chunk partial as the (hi, lo) pair of a partials buffer (§9); the fp32
// family's fp64 accumulator has lo = 0.
inline void store_pair(double a, double* pair) {
  pair[0] = a;
  pair[1] = 0.0;
}
inline void store_pair(DD a, double* pair) {
  pair[0] = a.hi;
  pair[1] = a.lo;
}
template <class Acc>
Acc load_pair(const double* pair);
template <>
inline double load_pair<double>(const double* pair) { return pair[0]; }
template <>
inline DD load_pair<DD>(const double* pair) { return DD{pair[0], pair[1]}; }

// Threads for a call: Options::num_threads (0: all cores), but each with at
// least kMinElementsPerThread elements. Starting and joining a thread costs
// 20-50 us, as much as a thread's share of 2^18-2^19 elements takes to compute
// (session 43: on 2 cores one thread is faster up to 2^19, two from 2^20). A
// caller's task runner (Options::cpu_run_tasks) may cost less per task; a
// lower bound for it measured no faster on that machine (2^15, PyTorch's grain
// size), so both use this one.
constexpr std::int64_t kMinElementsPerThread = std::int64_t{1} << 19;
int threads_for(const Problem& p) {
  const int requested = p.num_threads > 0 ? p.num_threads : default_num_threads();
  return static_cast<int>(std::clamp<std::int64_t>(p.n / kMinElementsPerThread, 1, requested));
}

// Runs f(t) for t in [0, tasks): through Options::cpu_run_tasks when the
// caller gave one, else on tasks - 1 new std::threads and this one.
template <class F>
void run_tasks(const Problem& p, int tasks, F& f) {
  if (tasks <= 1) {
    f(0);
    return;
  }
  if (p.cpu_run_tasks) {
    p.cpu_run_tasks(tasks, [](void* context, int t) { (*static_cast<F*>(context))(t); }, &f);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(tasks - 1);
  for (int t = 1; t < tasks; ++t) pool.emplace_back(f, t);
  f(0);
  for (auto& th : pool) th.join();
}

template <class T, class OutT>
class Runner {
  using C = typename Traits<T>::Compute;
  using Acc = typename Traits<T>::Acc;

 public:
  // The geometry and the gradient scale are the whole tensor's (global_n);
  // the elements walked are this call's n (a shard's, for Stage::partials).
  explicit Runner(const Problem& p) : p_(p), g_(make_geometry(p.global_n, sizeof(T))) {
    if (p.writes_grad() && p.reduces()) {
      double g = p.op == Op::backward ? scalar_as_double(p.grad_output) : p.grad_scale;
      scale_ = static_cast<C>(grad_scale64(g, p.global_n, p.mean()));
    } else if (p.op == Op::forward_backward) {
      scale_ = static_cast<C>(grad_scale64(p.grad_scale, p.global_n, false));
    }
  }

  void run() {
    const bool reduce = p_.writes_loss() && p_.reduces();
    const std::int64_t chunks = (p_.n + g_.chunk - 1) / g_.chunk;  // this call's
    std::vector<Acc> partials(reduce ? static_cast<std::size_t>(g_.chunks_pow2) : 0, acc_zero<Acc>());
    if (p_.stage != Stage::finish) {
      const int threads = static_cast<int>(std::min<std::int64_t>(threads_for(p_), std::max<std::int64_t>(chunks, 1)));
      auto range = [&](int t) {
        std::int64_t b = chunks * t / threads, e = chunks * (t + 1) / threads;
        run_chunks(b, e, reduce ? partials.data() : nullptr);
      };
      run_tasks(p_, threads, range);
    }
    if (!reduce) return;
    double* pairs = static_cast<double*>(p_.partials);
    if (p_.stage == Stage::partials) {  // §9: this shard's chunks, zeros elsewhere
      std::fill(pairs, pairs + p_.partials_numel, 0.0);
      for (std::int64_t c = 0; c < chunks; ++c) store_pair(partials[c], pairs + 2 * (p_.chunk_base + c));
      return;
    }
    if (p_.stage == Stage::finish)
      for (std::int64_t c = 0; c < g_.chunks; ++c) partials[c] = load_pair<Acc>(pairs + 2 * c);
    std::vector<Acc> scratch(partials.size() / 2 + 1);
    Acc s = pairwise(partials.data(), scratch.data(), g_.chunks_pow2);
    using OC = typename Traits<OutT>::Compute;
    write_elem(static_cast<OutT*>(p_.out.data),
               Traits<OutT>::store(static_cast<OC>(finish(s, p_.global_n, p_.mean()))));
  }

 private:
  void run_chunks(std::int64_t c_begin, std::int64_t c_end, Acc* partials) {
    const std::int64_t W = g_.lanes;
    std::vector<C> xb(W * kRowBlock), yb(W * kRowBlock), d(W), v(W), gb(W);
    std::vector<Acc> lanes(W), scratch(W / 2);
    const bool loss = p_.writes_loss();
    const bool grad = p_.writes_grad();
    // Contiguous, aligned inputs already in the compute type are read in place.
    const bool direct = p_.contiguous && std::is_same<T, C>::value && aligned_for<C>(p_.input.data) &&
                        aligned_for<C>(p_.target.data);
    for (std::int64_t c = c_begin; c < c_end; ++c) {
      if (partials) std::fill(lanes.begin(), lanes.end(), acc_zero<Acc>());
      if (partials && !grad) {  // forward mean/sum: the hot path
        reduce_chunk(c, lanes.data(), xb.data(), yb.data());
        partials[c] = pairwise(lanes.data(), scratch.data(), W);
        continue;
      }
      for (std::int64_t r = 0; r < g_.rows; ++r) {
        const std::int64_t i0 = c * g_.chunk + r * W;
        if (i0 >= p_.n) break;
        const std::int64_t cnt = std::min(W, p_.n - i0);
        const C* xs = xb.data();
        const C* ys = yb.data();
        if (direct) {
          xs = reinterpret_cast<const C*>(p_.input.data) + i0;
          ys = reinterpret_cast<const C*>(p_.target.data) + i0;
        } else {
          load_row<T>(p_, p_.input, i0, cnt, xb.data());
          load_row<T>(p_, p_.target, i0, cnt, yb.data());
        }
        for (std::int64_t k = 0; k < cnt; ++k) d[k] = diff(xs[k], ys[k]);
        if (partials) {
          add_terms(lanes.data(), d.data(), cnt);
        } else if (loss) {  // reduction none: the loss of each element
          for (std::int64_t k = 0; k < cnt; ++k) v[k] = d[k] * d[k];
          store_row<OutT>(p_, p_.out, i0, cnt, v.data());
        }
        if (grad) {
          if (p_.op == Op::backward && !p_.reduces()) {
            load_row_any(p_, p_.grad_output, i0, cnt, gb.data());
            for (std::int64_t k = 0; k < cnt; ++k) v[k] = d[k] * (C(2) * gb[k]);
          } else {
            for (std::int64_t k = 0; k < cnt; ++k) v[k] = d[k] * scale_;
          }
          store_row<T>(p_, p_.grad_input, i0, cnt, v.data());
          if (p_.grad_target.data) {
            for (std::int64_t k = 0; k < cnt; ++k) v[k] = -v[k];
            store_row<T>(p_, p_.grad_target, i0, cnt, v.data());
          }
        }
      }
      if (partials) partials[c] = pairwise(lanes.data(), scratch.data(), W);
    }
  }

  // Accumulates chunk c's rows into the lanes, kRowBlock full rows at a time,
  // then the partial last row.
  void reduce_chunk(std::int64_t c, Acc* lanes, C* xb, C* yb) {
    const std::int64_t W = g_.lanes, start = c * g_.chunk;
    const std::int64_t avail = std::min(g_.chunk, p_.n - start);
    const std::int64_t full_rows = avail / W, tail = avail % W;
    const bool direct = p_.contiguous && std::is_same<T, C>::value && aligned_for<C>(p_.input.data) &&
                        aligned_for<C>(p_.target.data);
    auto block = [&](std::int64_t i0, int nr, std::int64_t count) {
      const C* xs = xb;
      const C* ys = yb;
      if (direct) {
        xs = reinterpret_cast<const C*>(p_.input.data) + i0;
        ys = reinterpret_cast<const C*>(p_.target.data) + i0;
      } else {
        const std::int64_t len = nr == 1 ? count : nr * W;
        load_row<T>(p_, p_.input, i0, len, xb);
        load_row<T>(p_, p_.target, i0, len, yb);
      }
      accumulate_block(lanes, xs, ys, W, nr, count);
    };
    for (std::int64_t r = 0; r < full_rows; r += kRowBlock)
      block(start + r * W, static_cast<int>(std::min<std::int64_t>(kRowBlock, full_rows - r)), W);
    if (tail) block(start + full_rows * W, 1, tail);
  }

  const Problem& p_;
  Geometry g_;
  C scale_ = C(0);
};

template <class T>
void run_typed(const Problem& p) {
  if (p.writes_loss() && p.out.dtype != p.dtype) {
    if constexpr (std::is_same<T, Half>::value || std::is_same<T, BFloat16>::value) {
      Runner<T, float>(p).run();
      return;
    }
  }
  Runner<T, T>(p).run();
}

// scale_gradient (§7): grad <- round(grad * g) in the compute type; g = 1
// leaves every element as it is.
template <class T>
void scale_typed(const Problem& p) {
  using C = typename Traits<T>::Compute;
  const C g = static_cast<C>(scalar_as_double(p.grad_output));
  if (g == C(1) || p.n == 0) return;
  constexpr std::int64_t kBlock = 4096;
  const std::int64_t blocks = (p.n + kBlock - 1) / kBlock;
  const int threads = static_cast<int>(std::min<std::int64_t>(threads_for(p), blocks));
  auto range = [&](int t) {
    std::vector<C> buf(kBlock);
    for (std::int64_t b = blocks * t / threads; b < blocks * (t + 1) / threads; ++b) {
      const std::int64_t i0 = b * kBlock, cnt = std::min(kBlock, p.n - i0);
      for (const Operand* o : {&p.grad_input, &p.grad_target}) {
        if (o->data == nullptr) continue;
        load_row<T>(p, *o, i0, cnt, buf.data());
        for (std::int64_t k = 0; k < cnt; ++k) buf[k] = buf[k] * g;
        store_row<T>(p, *o, i0, cnt, buf.data());
      }
    }
  };
  run_tasks(p, threads, range);
}

template <class T>
void run_dtype(const Problem& p) {
  if (p.op == Op::scale) return scale_typed<T>(p);
  run_typed<T>(p);
}

}  // namespace

void run(const Problem& p) {
  switch (p.dtype) {
    case DType::f32: return run_dtype<float>(p);
    case DType::f64: return run_dtype<double>(p);
    case DType::f16: return run_dtype<Half>(p);
    case DType::bf16: return run_dtype<BFloat16>(p);
  }
}

}  // namespace mseloss::detail::cpu
