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

namespace mseloss::detail::cpu {
namespace {

// Element access through memcpy: views may be misaligned (a slice at an odd
// byte offset), and a misaligned T* dereference is undefined behaviour. The
// compiler turns these into plain loads and stores.
template <class T>
inline T read_elem(const T* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
inline void write_elem(T* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}
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

// The hot loop of §1, §3 and §4: one lane per k. Adds rows r = 0 .. nr-1
// (nr <= kRowBlock, `stride` elements apart) to the lanes, in row order per
// lane as §3 requires; the lane stays in registers across the rows, so the
// lanes array is read and written once per block of rows. The entry points are
// cloned (MSELOSS_CPU_CLONES, cpu/convert.hpp) so that the loop vectorises
// with AVX2 where the CPU has it; the file is compiled with -fno-trapping-math,
// without which GCC keeps dd_add's branch and the fp64 loop scalar.
constexpr int kRowBlock = 4;
template <int NR, class Acc, class C>
inline void accumulate_rows(Acc* __restrict lanes, const C* __restrict x, const C* __restrict y, std::int64_t stride,
                            std::int64_t count) {
  for (std::int64_t k = 0; k < count; ++k) {
    Acc a = lanes[k];
    for (int r = 0; r < NR; ++r) a = acc_add_term(a, diff(x[r * stride + k], y[r * stride + k]));
    lanes[k] = a;
  }
}
template <class Acc, class C>
inline void accumulate_any_rows(Acc* __restrict lanes, const C* __restrict x, const C* __restrict y,
                                std::int64_t stride, int nr, std::int64_t count) {
  switch (nr) {
    case 4: return accumulate_rows<4>(lanes, x, y, stride, count);
    case 3: return accumulate_rows<3>(lanes, x, y, stride, count);
    case 2: return accumulate_rows<2>(lanes, x, y, stride, count);
    default: return accumulate_rows<1>(lanes, x, y, stride, count);
  }
}
static_assert(kRowBlock == 4, "accumulate_any_rows handles up to 4 rows");
MSELOSS_CPU_CLONES void accumulate_block(double* __restrict lanes, const float* __restrict x,
                                         const float* __restrict y, std::int64_t stride, int nr, std::int64_t count) {
  accumulate_any_rows(lanes, x, y, stride, nr, count);
}
MSELOSS_CPU_CLONES_WIDE void accumulate_block(DD* __restrict lanes, const double* __restrict x,
                                         const double* __restrict y, std::int64_t stride, int nr, std::int64_t count) {
  accumulate_any_rows(lanes, x, y, stride, nr, count);
}

// The arithmetic of one row of an elementwise pass (§1, §7), cloned like the
// reduction's loop: d = x - y; then, for each output given, the lanes gain
// d's terms (fused mean/sum), `square` gets d * d (loss `none`), `grad` gets
// d * scale, or d * (2 g_k) where the upstream gradient `g` is per element
// (backward `none`), and `neg_grad` gets -grad. Each is its own loop over the
// row, so that every one vectorises.
template <class C, class Acc>
struct RowOutputs {
  Acc* lanes = nullptr;
  C* square = nullptr;
  C* grad = nullptr;
  C* neg_grad = nullptr;
  const C* g = nullptr;
  C scale = C(0);
};
template <class C, class Acc>
inline void row_arithmetic_any(const C* __restrict x, const C* __restrict y, std::int64_t n, C* __restrict d,
                               const RowOutputs<C, Acc>& o) {
  for (std::int64_t k = 0; k < n; ++k) d[k] = diff(x[k], y[k]);
  if (Acc* __restrict lanes = o.lanes)
    for (std::int64_t k = 0; k < n; ++k) lanes[k] = acc_add_term(lanes[k], d[k]);
  if (C* __restrict sq = o.square)
    for (std::int64_t k = 0; k < n; ++k) sq[k] = d[k] * d[k];
  if (C* __restrict grad = o.grad) {
    if (const C* __restrict g = o.g) {
      for (std::int64_t k = 0; k < n; ++k) grad[k] = d[k] * (C(2) * g[k]);
    } else {
      const C scale = o.scale;
      for (std::int64_t k = 0; k < n; ++k) grad[k] = d[k] * scale;
    }
    if (C* __restrict neg = o.neg_grad)
      for (std::int64_t k = 0; k < n; ++k) neg[k] = -grad[k];
  }
}
MSELOSS_CPU_CLONES void row_arithmetic(const float* x, const float* y, std::int64_t n, float* d,
                                       const RowOutputs<float, double>& o) {
  row_arithmetic_any(x, y, n, d, o);
}
MSELOSS_CPU_CLONES_WIDE void row_arithmetic(const double* x, const double* y, std::int64_t n, double* d,
                                       const RowOutputs<double, DD>& o) {
  row_arithmetic_any(x, y, n, d, o);
}

// §2: the pairwise tree over a power-of-two array, one level at a time: level
// values are compacted (b[j] = a[2j] (+) a[2j+1]) so that the loop vectorises.
// `a` is destroyed; `scratch` holds count / 2 values.
MSELOSS_CPU_CLONES void tree_level(double* __restrict b, const double* __restrict a, std::int64_t half) {
  for (std::int64_t j = 0; j < half; ++j) b[j] = a[2 * j] + a[2 * j + 1];
}
MSELOSS_CPU_CLONES_WIDE void tree_level(DD* __restrict b, const DD* __restrict a, std::int64_t half) {
  for (std::int64_t j = 0; j < half; ++j) b[j] = dd_add(a[2 * j], a[2 * j + 1]);
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
// (session 43: on 2 cores one thread is faster up to 2^19, two from 2^20).
constexpr std::int64_t kMinElementsPerThread = std::int64_t{1} << 19;
int threads_for(const Problem& p) {
  const int requested = p.num_threads > 0 ? p.num_threads : default_num_threads();
  return static_cast<int>(std::clamp<std::int64_t>(p.n / kMinElementsPerThread, 1, requested));
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
      std::vector<std::thread> pool;
      pool.reserve(threads);
      auto range = [&](int t) {
        std::int64_t b = chunks * t / threads, e = chunks * (t + 1) / threads;
        run_chunks(b, e, reduce ? partials.data() : nullptr);
      };
      for (int t = 1; t < threads; ++t) pool.emplace_back(range, t);
      range(0);
      for (auto& th : pool) th.join();
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
    std::vector<C> xb(W * kRowBlock), yb(W * kRowBlock), d(W), sq(W), gi(W), gt(W), gb(W);
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
        RowOutputs<C, Acc> o;
        o.lanes = partials ? lanes.data() : nullptr;
        o.square = !partials && loss ? sq.data() : nullptr;  // reduction none: the loss of each element
        if (grad) {
          o.grad = gi.data();
          o.neg_grad = p_.grad_target.data ? gt.data() : nullptr;
          if (p_.op == Op::backward && !p_.reduces()) {
            load_row_any(p_, p_.grad_output, i0, cnt, gb.data());
            o.g = gb.data();
          }
          o.scale = scale_;
        }
        row_arithmetic(xs, ys, cnt, d.data(), o);
        if (o.square) store_row<OutT>(p_, p_.out, i0, cnt, o.square);
        if (o.grad) store_row<T>(p_, p_.grad_input, i0, cnt, o.grad);
        if (o.neg_grad) store_row<T>(p_, p_.grad_target, i0, cnt, o.neg_grad);
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
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(range, t);
  range(0);
  for (auto& th : pool) th.join();
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
