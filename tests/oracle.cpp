#include "oracle.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

namespace testing_mse {

const char* to_string(Dist d) {
  switch (d) {
    case Dist::normal: return "normal";
    case Dist::uniform: return "uniform";
    case Dist::wide_range: return "wide_range";
    case Dist::near_overflow: return "near_overflow";
    case Dist::specials: return "specials";
    case Dist::all_equal: return "all_equal";
    case Dist::tiny: return "tiny";
  }
  return "?";
}

namespace {

std::size_t size_of(DType t) { return t == DType::f64 ? 8 : t == DType::f32 ? 4 : 2; }

double half_bits_to_double(std::uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
double bf16_bits_to_double(std::uint16_t h) {
  std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Nearest-even rounding of a finite __float128 to a binary format with
// `mant` explicit mantissa bits, exponent bias `bias` and max exponent field
// `emax_field` (all ones = Inf/NaN). Returns the magnitude bits.
std::uint64_t round_magnitude(__float128 a, int mant, int bias, int emax_field) {
  if (a == 0) return 0;
  int e;
  frexpq(a, &e);  // a = f * 2^e, f in [0.5, 1)
  int exp_field = e - 1 + bias;
  int shift;  // the unit of the last place is 2^(e - 1 - mant) for normals
  if (exp_field <= 0) {
    exp_field = 0;
    shift = 1 - bias - mant;
  } else {
    shift = e - 1 - mant;
  }
  __float128 scaled = ldexpq(a, -shift);  // integer part = significand in ulps
  __float128 fl = floorq(scaled);
  __float128 rem = scaled - fl;
  std::uint64_t q = static_cast<std::uint64_t>(fl);
  const __float128 half = 0.5;
  if (rem > half || (rem == half && (q & 1))) ++q;
  // q is the significand in units of 2^shift, with the implicit bit for normals.
  std::uint64_t bits;
  if (exp_field == 0) {
    bits = q;  // subnormal; q == 2^mant promotes to the smallest normal naturally
  } else {
    if (q == (std::uint64_t{1} << (mant + 1))) {  // rounded up to the next binade
      q >>= 1;
      ++exp_field;
    }
    bits = (static_cast<std::uint64_t>(exp_field) << mant) | (q & ((std::uint64_t{1} << mant) - 1));
  }
  if (exp_field >= emax_field) bits = static_cast<std::uint64_t>(emax_field) << mant;  // Inf
  return bits;
}

}  // namespace

double value_of(const void* p, DType t) {
  switch (t) {
    case DType::f32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::f64: { double d; std::memcpy(&d, p, 8); return d; }
    case DType::f16: { std::uint16_t h; std::memcpy(&h, p, 2); return half_bits_to_double(h); }
    case DType::bf16: { std::uint16_t h; std::memcpy(&h, p, 2); return bf16_bits_to_double(h); }
  }
  return 0;
}

double value_at(const std::vector<unsigned char>& buf, DType t, std::int64_t i) {
  return value_of(buf.data() + i * size_of(t), t);
}

void round_to(__float128 v, DType t, void* p) {
  const bool neg = signbitq(v);
  const __float128 a = fabsq(v);
  const bool nan = isnanq(v), inf = isinfq(v);
  switch (t) {
    case DType::f32: {
      std::uint32_t u = nan ? 0x7fc00000u : inf ? 0x7f800000u : static_cast<std::uint32_t>(round_magnitude(a, 23, 127, 255));
      if (neg && !nan) u |= 0x80000000u;
      std::memcpy(p, &u, 4);
      break;
    }
    case DType::f64: {
      std::uint64_t u = nan ? 0x7ff8000000000000ull : inf ? 0x7ff0000000000000ull : round_magnitude(a, 52, 1023, 2047);
      if (neg && !nan) u |= 0x8000000000000000ull;
      std::memcpy(p, &u, 8);
      break;
    }
    case DType::f16:
    case DType::bf16: {
      const bool h = t == DType::f16;
      std::uint16_t u = nan ? (h ? 0x7e00 : 0x7fc0)
                            : inf ? (h ? 0x7c00 : 0x7f80)
                                  : static_cast<std::uint16_t>(h ? round_magnitude(a, 10, 15, 31) : round_magnitude(a, 7, 127, 255));
      if (neg && !nan) u |= 0x8000;
      std::memcpy(p, &u, 2);
      break;
    }
  }
}

void store_exact(void* p, DType t, double v) { round_to(static_cast<__float128>(v), t, p); }

std::int64_t ulp_distance(const void* a, const void* b, DType t) {
  double va = value_of(a, t), vb = value_of(b, t);
  if (std::isnan(va) || std::isnan(vb)) return (std::isnan(va) && std::isnan(vb)) ? 0 : INT64_MAX / 2;
  auto ordinal = [&](const void* p) -> std::int64_t {
    std::int64_t mag, sign;
    if (t == DType::f64) {
      std::uint64_t u; std::memcpy(&u, p, 8);
      mag = static_cast<std::int64_t>(u & 0x7fffffffffffffffull); sign = u >> 63;
    } else if (t == DType::f32) {
      std::uint32_t u; std::memcpy(&u, p, 4);
      mag = u & 0x7fffffffu; sign = u >> 31;
    } else {
      std::uint16_t u; std::memcpy(&u, p, 2);
      mag = u & 0x7fff; sign = u >> 15;
    }
    return sign ? -mag : mag;
  };
  std::int64_t d = ordinal(a) - ordinal(b);
  return d < 0 ? -d : d;
}

std::string bits_string(const void* p, DType t) {
  char buf[64];
  if (t == DType::f64) { std::uint64_t u; std::memcpy(&u, p, 8); std::snprintf(buf, sizeof buf, "0x%016llx (%.17g)", (unsigned long long)u, value_of(p, t)); }
  else if (t == DType::f32) { std::uint32_t u; std::memcpy(&u, p, 4); std::snprintf(buf, sizeof buf, "0x%08x (%.9g)", u, value_of(p, t)); }
  else { std::uint16_t u; std::memcpy(&u, p, 2); std::snprintf(buf, sizeof buf, "0x%04x (%.6g)", u, value_of(p, t)); }
  return buf;
}

std::vector<unsigned char> random_tensor(DType t, std::int64_t n, Dist dist, std::uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(dist) * 1315423911ull + 7);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  std::uniform_int_distribution<int> coin(0, 99);
  const double max = t == DType::f16 ? 65504.0 : t == DType::bf16 ? 3.3895313892515355e38 : t == DType::f32 ? 3.4028234663852886e38 : 1.7976931348623157e308;
  const int wide_exp = t == DType::f16 ? 14 : t == DType::f64 ? 500 : 100;
  const double constant = normal(rng);
  std::vector<unsigned char> out(n * size_of(t));
  for (std::int64_t i = 0; i < n; ++i) {
    double v = 0;
    switch (dist) {
      case Dist::normal: v = normal(rng); break;
      case Dist::uniform: v = uni(rng) * 8; break;
      case Dist::wide_range: v = std::ldexp(uni(rng), std::uniform_int_distribution<int>(-wide_exp, wide_exp)(rng)); break;
      case Dist::near_overflow: v = max * (0.25 + 0.75 * std::abs(uni(rng))) * (coin(rng) < 50 ? -1 : 1); break;
      case Dist::specials: {
        int c = coin(rng);
        v = c == 0 ? NAN : c == 1 ? INFINITY : c == 2 ? -INFINITY : c < 6 ? 0.0 : normal(rng);
        break;
      }
      case Dist::all_equal: v = constant; break;
      case Dist::tiny: v = std::ldexp(uni(rng), t == DType::f16 ? -20 : t == DType::f64 ? -1000 : -130); break;
    }
    round_to(static_cast<__float128>(v), t, out.data() + i * size_of(t));
  }
  return out;
}

__float128 term128(double x, double y, DType t) {
  if (t == DType::f64) {
    double d = x - y;
    double term = d * d;
    return term;
  }
  float d = static_cast<float>(x) - static_cast<float>(y);  // x, y are exact floats
  __float128 dq = d;
  return dq * dq;
}

__float128 oracle_loss(const std::vector<unsigned char>& x, const std::vector<unsigned char>& y, DType t,
                       std::int64_t n, Reduction r) {
  __float128 s = 0;
  for (std::int64_t i = 0; i < n; ++i) s += term128(value_at(x, t, i), value_at(y, t, i), t);
  if (r == Reduction::mean) return n == 0 ? static_cast<__float128>(NAN) : s / n;
  return s;
}

// ---- literal evaluation of the specification ------------------------------------
namespace {

struct DD { double hi, lo; };

DD dd_plus(DD a, DD b) {  // §4, as written there
  double s = a.hi + b.hi;
  if (std::isinf(s) || std::isnan(s)) return {s, 0.0};
  double bb = s - a.hi;
  double e = (a.hi - (s - bb)) + (b.hi - bb);
  double lo = e + (a.lo + b.lo);
  double hi = s + lo;
  return {hi, lo - (hi - s)};
}

template <class A, class Add>
A tree(const std::vector<A>& v, std::size_t lo, std::size_t len, Add add) {
  if (len == 1) return v[lo];
  return add(tree(v, lo, len / 2, add), tree(v, lo + len / 2, len / 2, add));
}

}  // namespace

std::vector<unsigned char> spec_reference(const std::vector<unsigned char>& x, const std::vector<unsigned char>& y,
                                          DType t, std::int64_t n, Reduction r, DType out_dtype) {
  const std::int64_t W = 4096 / static_cast<std::int64_t>(size_of(t));
  std::int64_t R = 8;
  while ((n + R * W - 1) / (R * W) > 4096) R *= 2;
  const std::int64_t C = R * W, K = (n + C - 1) / C;
  std::int64_t K2 = 1;
  while (K2 < K) K2 *= 2;
  std::vector<unsigned char> out(size_of(out_dtype));
  const bool dd = t == DType::f64;
  std::vector<DD> partial(K2, DD{0.0, 0.0});
  for (std::int64_t c = 0; c < K; ++c) {
    std::vector<DD> lane(W, DD{0.0, 0.0});
    for (std::int64_t k = 0; k < W; ++k)
      for (std::int64_t row = 0; row < R; ++row) {
        std::int64_t i = c * C + row * W + k;
        if (i >= n) continue;
        double term = static_cast<double>(term128(value_at(x, t, i), value_at(y, t, i), t));
        lane[k] = dd ? dd_plus(lane[k], DD{term, 0.0}) : DD{lane[k].hi + term, 0.0};
      }
    partial[c] = dd ? tree(lane, 0, W, dd_plus) : tree(lane, 0, W, [](DD a, DD b) { return DD{a.hi + b.hi, 0.0}; });
  }
  DD s = dd ? tree(partial, 0, K2, dd_plus) : tree(partial, 0, K2, [](DD a, DD b) { return DD{a.hi + b.hi, 0.0}; });
  // §5 finishing.
  if (dd) {
    double v;
    if (r == Reduction::sum) v = s.hi;
    else if (n == 0) v = NAN;
    else if (std::isinf(s.hi / n) || std::isnan(s.hi / n)) v = s.hi / n;
    else {
      double q1 = s.hi / n, p = q1 * n, pe = std::fma(q1, static_cast<double>(n), -p);
      v = q1 + (((s.hi - p) - pe) + s.lo) / n;
    }
    round_to(static_cast<__float128>(v), DType::f64, out.data());
    return out;
  }
  double v = r == Reduction::sum ? s.hi : n == 0 ? NAN : s.hi / static_cast<double>(n);
  float f = static_cast<float>(v);
  round_to(static_cast<__float128>(f), out_dtype, out.data());
  return out;
}

}  // namespace testing_mse
