// The arithmetic of docs/numerics.md, shared by the CPU and CUDA backends so
// that both evaluate literally the same expressions. Every function cites the
// section of the spec it implements. Compile with FMA contraction off
// (-ffp-contract=off, nvcc -fmad=false) and without fast-math.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define MSELOSS_HD __host__ __device__ __forceinline__
#else
#define MSELOSS_HD inline
#endif

namespace mseloss::detail {

// ---- §2 Geometry -----------------------------------------------------------
constexpr int kRowBytes = 4096;          // one row: 256 threads x 16 bytes
constexpr int kRowThreads = 256;         // lanes are owned 16 bytes per thread
constexpr std::int64_t kMaxChunks = 4096;
constexpr std::int64_t kMinRows = 8;     // a chunk is at least 8 rows: work enough to hide load latency

struct Geometry {
  std::int64_t n = 0;
  std::int64_t lanes = 0;        // W: elements per row
  std::int64_t rows = 0;         // R: rows per chunk (a power of two)
  std::int64_t chunk = 0;        // C = R * W
  std::int64_t chunks = 0;       // K = ceil(N / C)
  std::int64_t chunks_pow2 = 1;  // K2: the smallest power of two >= K (1 for K <= 1)
};

MSELOSS_HD Geometry make_geometry(std::int64_t n, int elem_size) {
  Geometry g;
  g.n = n;
  g.lanes = kRowBytes / elem_size;
  g.rows = kMinRows;
  while ((n + g.rows * g.lanes - 1) / (g.rows * g.lanes) > kMaxChunks) g.rows *= 2;
  g.chunk = g.rows * g.lanes;
  g.chunks = (n + g.chunk - 1) / g.chunk;
  while (g.chunks_pow2 < g.chunks) g.chunks_pow2 *= 2;
  return g;
}

// ---- §4 Double-double accumulator (fp64 inputs) --------------------------------
struct DD {
  double hi;
  double lo;
};

// a (+) b. A sum that is not finite is returned as (sum, 0): the error terms of
// an infinite sum are NaN and must not leak into the result.
MSELOSS_HD DD dd_add(DD a, DD b) {
  double s = a.hi + b.hi;
  if (!(s - s == 0.0)) return DD{s, 0.0};  // s is +-Inf or NaN
  double bb = s - a.hi;
  double e = (a.hi - (s - bb)) + (b.hi - bb);
  double lo = e + (a.lo + b.lo);
  double hi = s + lo;
  return DD{hi, lo - (hi - s)};
}

// The accumulator types and their (+): §3 for fp32/fp16/bf16 inputs, §4 for fp64.
MSELOSS_HD double acc_add(double a, double b) { return a + b; }
MSELOSS_HD DD acc_add(DD a, DD b) { return dd_add(a, b); }
template <class Acc>
MSELOSS_HD Acc acc_zero();
template <>
MSELOSS_HD double acc_zero<double>() { return 0.0; }
template <>
MSELOSS_HD DD acc_zero<DD>() { return DD{0.0, 0.0}; }

// §4: the dd quotient a / n, rounded to double.
MSELOSS_HD double dd_div(DD a, double n) {
  double q1 = a.hi / n;
  if (!(q1 - q1 == 0.0)) return q1;
  double p = q1 * n;
  double pe = fma(q1, n, -p);  // exact: q1 * n = p + pe
  double r = ((a.hi - p) - pe) + a.lo;
  return q1 + r / n;
}

// ---- §1 Element term -----------------------------------------------------------
// fp32, fp16, bf16 inputs: d = fl32(x - y); term = d * d exactly, in fp64.
MSELOSS_HD float diff(float x, float y) { return x - y; }
MSELOSS_HD double diff(double x, double y) { return x - y; }
MSELOSS_HD double term_of(float d) { return static_cast<double>(d) * static_cast<double>(d); }
// fp64 inputs: d = fl64(x - y); term = fl64(d * d).
MSELOSS_HD DD term_of(double d) { return DD{d * d, 0.0}; }

// acc (+) term(d). For float d the product d * d is exact in fp64, so
// fma(d, d, acc) = fl(d*d + acc) = acc + term: one DFMA on the GPU gives the
// bits of the specified multiply-then-add (the host keeps the two operations).
MSELOSS_HD double acc_add_term(double acc, float d) {
#if defined(__CUDA_ARCH__)
  const double dd = static_cast<double>(d);
  return fma(dd, dd, acc);
#else
  return acc + term_of(d);
#endif
}
MSELOSS_HD DD acc_add_term(DD acc, double d) { return dd_add(acc, term_of(d)); }

// ---- §6 Conversions and NaN ----------------------------------------------------
MSELOSS_HD std::uint32_t bits_of(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
MSELOSS_HD float float_of(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// 16-bit storage types: raw bits, so host code needs no CUDA headers.
struct Half {
  std::uint16_t bits;
};
struct BFloat16 {
  std::uint16_t bits;
};

constexpr std::uint16_t kHalfNaN = 0x7e00;
constexpr std::uint16_t kBf16NaN = 0x7fc0;
constexpr std::uint32_t kFloatNaNBits = 0x7fc00000u;
constexpr std::uint64_t kDoubleNaNBits = 0x7ff8000000000000ull;

MSELOSS_HD float half_to_float(Half h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h.bits));
#else
  std::uint32_t sign = (h.bits & 0x8000u) << 16;
  std::uint32_t exp = (h.bits >> 10) & 0x1f;
  std::uint32_t man = h.bits & 0x3ff;
  std::uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    u = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    u = sign;
  } else {  // subnormal: normalise
    int e = 113;
    while (!(man & 0x400)) {
      man <<= 1;
      --e;
    }
    u = sign | (static_cast<std::uint32_t>(e) << 23) | ((man & 0x3ff) << 13);
  }
  return float_of(u);
#endif
}

// Round to nearest even; NaN becomes the canonical NaN.
MSELOSS_HD Half float_to_half(float f) {
#if defined(__CUDA_ARCH__)
  if (f != f) return Half{kHalfNaN};
  return Half{__half_as_ushort(__float2half_rn(f))};
#else
  std::uint32_t u = bits_of(f);
  std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return Half{kHalfNaN};
  if (a >= 0x477ff000u) return Half{static_cast<std::uint16_t>(sign | 0x7c00u)};  // rounds to Inf
  if (a >= 0x38800000u) {  // normal half
    std::uint32_t r = a - 0x38000000u;  // rebias exponent (127 - 15) << 23
    r = r + 0xfffu + ((r >> 13) & 1u);
    return Half{static_cast<std::uint16_t>(sign | (r >> 13))};
  }
  if (a < 0x33000000u) return Half{sign};  // below half of the smallest subnormal
  // subnormal half: value = man * 2^-24
  std::uint32_t exp = a >> 23;
  std::uint32_t man = (a & 0x7fffffu) | 0x800000u;
  // a = man * 2^(exp - 150), which is man * 2^(exp - 126) units of 2^-24
  int shift = 126 - static_cast<int>(exp);  // 14 .. 24
  std::uint32_t q = man >> shift;
  std::uint32_t rem = man & ((1u << shift) - 1u);
  std::uint32_t half_ulp = 1u << (shift - 1);
  if (rem > half_ulp || (rem == half_ulp && (q & 1u))) ++q;
  return Half{static_cast<std::uint16_t>(sign | q)};
#endif
}

MSELOSS_HD float bf16_to_float(BFloat16 b) { return float_of(static_cast<std::uint32_t>(b.bits) << 16); }

MSELOSS_HD BFloat16 float_to_bf16(float f) {
#if defined(__CUDA_ARCH__)
  if (f != f) return BFloat16{kBf16NaN};
  return BFloat16{__bfloat16_as_ushort(__float2bfloat16_rn(f))};
#else
  std::uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return BFloat16{kBf16NaN};
  u = u + 0x7fffu + ((u >> 16) & 1u);
  return BFloat16{static_cast<std::uint16_t>(u >> 16)};
#endif
}

MSELOSS_HD float canonical(float f) { return f != f ? float_of(kFloatNaNBits) : f; }
MSELOSS_HD double canonical(double d) {
  if (d == d) return d;
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(kDoubleNaNBits));
#else
  double r;
  std::uint64_t u = kDoubleNaNBits;
  std::memcpy(&r, &u, 8);
  return r;
#endif
}

// Storage type <-> compute type. The compute type is float for fp32/fp16/bf16
// and double for fp64 (§1).
template <class T>
struct Traits;
template <>
struct Traits<float> {
  using Compute = float;
  using Acc = double;
  MSELOSS_HD static float load(float v) { return v; }
  MSELOSS_HD static float store(float v) { return canonical(v); }
};
template <>
struct Traits<double> {
  using Compute = double;
  using Acc = DD;
  MSELOSS_HD static double load(double v) { return v; }
  MSELOSS_HD static double store(double v) { return canonical(v); }
};
template <>
struct Traits<Half> {
  using Compute = float;
  using Acc = double;
  MSELOSS_HD static float load(Half v) { return half_to_float(v); }
  MSELOSS_HD static Half store(float v) { return float_to_half(v); }
};
template <>
struct Traits<BFloat16> {
  using Compute = float;
  using Acc = double;
  MSELOSS_HD static float load(BFloat16 v) { return bf16_to_float(v); }
  MSELOSS_HD static BFloat16 store(float v) { return float_to_bf16(v); }
};

// ---- §5 Finishing the reduction -------------------------------------------------
// S is the root of the chunk tree; the result is returned in the compute type
// of the output dtype (float for 16-bit and fp32 outputs, double for fp64).
MSELOSS_HD float finish(double s, std::int64_t n, bool mean) {
  if (mean) {
    if (n == 0) return float_of(kFloatNaNBits);
    s = s / static_cast<double>(n);
  }
  return canonical(static_cast<float>(s));
}
MSELOSS_HD double finish(DD s, std::int64_t n, bool mean) {
  if (!mean) return canonical(s.hi);
  if (n == 0) return canonical(NAN);
  return canonical(dd_div(s, static_cast<double>(n)));
}

// ---- §7 Gradient scale ----------------------------------------------------------
// mean: g_scale = 2 g / N, sum: 2 g, computed in fp64 and rounded once to the
// compute type. none: scale_i = fl(2 g_i) in the compute type.
MSELOSS_HD double grad_scale64(double g, std::int64_t n, bool mean) {
  double two_g = 2.0 * g;
  return mean ? two_g / static_cast<double>(n) : two_g;
}

}  // namespace mseloss::detail
