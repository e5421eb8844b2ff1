// The shared arithmetic of src/common/numerics.hpp and the CPU backend's
// vectorised conversions against independent definitions: every half and
// bfloat16 value, every rounding tie of half, random floats, dd sums.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "common/numerics.hpp"
#include "cpu/convert.hpp"
#include "oracle.hpp"

using namespace mseloss::detail;
using mseloss::DType;

TEST(Conversions, EveryHalfConvertsExactlyAndBack) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    std::uint16_t h = static_cast<std::uint16_t>(b);
    float f = half_to_float(Half{h});
    double expect = testing_mse::value_of(&h, DType::f16);
    if (std::isnan(expect)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << b;
      EXPECT_EQ(float_to_half(f).bits, kHalfNaN);
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), expect) << "half bits 0x" << std::hex << b;
    ASSERT_EQ(float_to_half(f).bits, h) << "half bits 0x" << std::hex << b;
  }
}

TEST(Conversions, FloatToHalfAndBf16RoundToNearestEven) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<std::uint32_t> any;
  for (int i = 0; i < 2000000; ++i) {
    std::uint32_t u = any(rng);
    if (i < 100000) u = (u & 0x807fffffu) | (static_cast<std::uint32_t>(100 + (i % 60)) << 23);  // half's range
    float f;
    std::memcpy(&f, &u, 4);
    std::uint16_t want_h, want_b;
    testing_mse::round_to(static_cast<__float128>(f), DType::f16, &want_h);
    testing_mse::round_to(static_cast<__float128>(f), DType::bf16, &want_b);
    ASSERT_EQ(float_to_half(f).bits, want_h) << "float bits 0x" << std::hex << u;
    ASSERT_EQ(float_to_bf16(f).bits, want_b) << "float bits 0x" << std::hex << u;
  }
  // Ties go to even.
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048).bits, 0x3c00);
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048).bits, 0x3c02);
  EXPECT_EQ(float_to_half(65520.0f).bits, 0x7c00);
  EXPECT_EQ(float_to_half(65519.996f).bits, 0x7bff);
}

TEST(DoubleDouble, SumOfManyTermsIsNearlyExact) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  DD s{0, 0};
  __float128 exact = 0;
  for (int i = 0; i < 100000; ++i) {
    double t = std::ldexp(u(rng), static_cast<int>(rng() % 60) - 30);
    s = dd_add(s, DD{t, 0});
    exact += t;
  }
  __float128 got = static_cast<__float128>(s.hi) + s.lo;
  EXPECT_LT(static_cast<double>(fabsq(got - exact) / exact), 1e-28);
  EXPECT_EQ(s.hi, static_cast<double>(exact));  // hi is the correctly rounded sum
}

TEST(DoubleDouble, InfinityDoesNotBecomeNaN) {
  DD s = dd_add(DD{1.0, 0}, DD{INFINITY, 0});
  EXPECT_TRUE(std::isinf(s.hi));
  s = dd_add(s, DD{2.0, 0});
  EXPECT_TRUE(std::isinf(s.hi));
  EXPECT_TRUE(std::isinf(finish(s, 3, true)));
}

TEST(Geometry, ChunkSizeDependsOnNAloneAndBoundsTheChunkCount) {
  for (int es : {2, 4, 8}) {
    for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{4095}, std::int64_t{1} << 20,
                           (std::int64_t{1} << 31) + 3, std::int64_t{1} << 40}) {
      Geometry g = make_geometry(n, es);
      EXPECT_EQ(g.lanes, 4096 / es);
      EXPECT_LE(g.chunks, kMaxChunks);
      EXPECT_GE(g.chunks * g.chunk, n);
      EXPECT_TRUE((g.rows & (g.rows - 1)) == 0);
      EXPECT_GE(g.rows, kMinRows);
      EXPECT_TRUE(g.rows == kMinRows || (n + g.chunk / 2 - 1) / (g.chunk / 2) > kMaxChunks) << "R must be the smallest";
      EXPECT_GE(g.chunks_pow2, g.chunks);
      EXPECT_LT(g.chunks_pow2, 2 * std::max<std::int64_t>(g.chunks, 1));
    }
  }
  EXPECT_EQ(make_geometry(std::int64_t{1} << 25, 4).rows, 8);
  EXPECT_EQ(make_geometry(std::int64_t{1} << 20, 4).rows, 8);
  EXPECT_EQ(make_geometry(std::int64_t{1} << 26, 4).rows, 16);
  EXPECT_EQ(make_geometry(std::int64_t{1} << 28, 4).rows, 64);
}

// ---- The CPU backend's vectorised conversions (src/cpu/convert.hpp) -----------
// Each is checked against the __float128 oracle, through buffers that start at
// an odd byte offset and lengths that leave a scalar tail, with a guard after
// the end. The portable loops get the same checks: on a CPU with F16C the
// vectorised path runs in the backend and the portable one only here.
namespace {

constexpr std::uint16_t kGuard = 0x5a5a;

// Every half value, the midpoint of each pair of neighbouring finite halves
// (exact in float: the ties of §6's round-to-nearest-even, subnormal ones and the
// overflow tie 65520 included), a float ulp either side of it, and random floats,
// half of them in the half range.
std::vector<float> floats_to_round() {
  std::vector<float> v;
  auto push_bits = [&](std::uint32_t u) { v.push_back(float_of(u)); };
  for (std::uint16_t b = 0; b < 0x7c00; ++b) {
    for (bool negative : {false, true}) {
      const float sign = negative ? -1.f : 1.f;
      const float lo = static_cast<float>(testing_mse::value_of(&b, DType::f16)) * sign;
      const std::uint16_t next_bits = static_cast<std::uint16_t>(b + 1);
      const double next = next_bits == 0x7c00 ? 65536.0 : testing_mse::value_of(&next_bits, DType::f16);
      const float mid = static_cast<float>((std::fabs(lo) + next) / 2) * sign;
      push_bits(bits_of(lo));
      push_bits(bits_of(mid));
      push_bits(bits_of(mid) - 1);
      push_bits(bits_of(mid) + 1);
    }
  }
  for (std::uint32_t special : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x00000001u})
    push_bits(special);
  std::mt19937 rng(20261208);
  std::uniform_int_distribution<std::uint32_t> any;
  for (int i = 0; i < 1000000; ++i) {
    std::uint32_t u = any(rng);
    if (i % 2) u = (u & 0x807fffffu) | (static_cast<std::uint32_t>(100 + (i % 45)) << 23);
    push_bits(u);
  }
  v.push_back(1.5f);  // an odd count: the vector loops leave a tail
  return v;
}

template <class Out, class Fn>
std::vector<std::uint16_t> store_misaligned(const std::vector<float>& in, Fn store) {
  std::vector<unsigned char> buf(2 * in.size() + 3, 0);
  Out* out = reinterpret_cast<Out*>(buf.data() + 1);
  std::uint16_t guard = kGuard;
  std::memcpy(buf.data() + 1 + 2 * in.size(), &guard, 2);
  store(in.data(), static_cast<std::int64_t>(in.size()), out);
  std::memcpy(&guard, buf.data() + 1 + 2 * in.size(), 2);
  EXPECT_EQ(guard, kGuard) << "a store wrote past the end";
  std::vector<std::uint16_t> bits(in.size());
  std::memcpy(bits.data(), buf.data() + 1, 2 * in.size());
  return bits;
}

template <class In, class Fn>
std::vector<float> load_misaligned(const std::vector<std::uint16_t>& in, Fn load) {
  std::vector<unsigned char> buf(2 * in.size() + 1);
  std::memcpy(buf.data() + 1, in.data(), 2 * in.size());
  std::vector<float> out(in.size() + 1, 12345.f);
  load(reinterpret_cast<const In*>(buf.data() + 1), static_cast<std::int64_t>(in.size()), out.data());
  EXPECT_EQ(out.back(), 12345.f) << "a load wrote past the end";
  out.pop_back();
  return out;
}

void expect_loads_exact(const std::vector<float>& got, DType t, const char* which) {
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const std::uint16_t b = static_cast<std::uint16_t>(i);
    const double want = testing_mse::value_of(&b, t);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got[b])) << which << ": bits 0x" << std::hex << b;
    } else {
      ASSERT_EQ(bits_of(got[b]), bits_of(static_cast<float>(want))) << which << ": bits 0x" << std::hex << b;
    }
  }
}

void expect_stores_rounded(const std::vector<float>& in, const std::vector<std::uint16_t>& got, DType t,
                           const char* which) {
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::uint16_t want;
    testing_mse::round_to(static_cast<__float128>(in[i]), t, &want);
    ASSERT_EQ(got[i], want) << which << ": float bits 0x" << std::hex << bits_of(in[i]);
  }
}

std::vector<std::uint16_t> every_16_bit_pattern() {
  std::vector<std::uint16_t> v(65536 + 5);  // 5 more: a tail after the vector loop
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint16_t>(i);
  return v;
}

}  // namespace

TEST(VectorisedConversions, EveryHalfAndBf16LoadsExactly) {
  std::printf("half conversions on this CPU: %s\n", cpu::half_conversion_path());
  const auto all = every_16_bit_pattern();
  expect_loads_exact(load_misaligned<Half>(all, cpu::load_halves), DType::f16, "load_halves");
  expect_loads_exact(load_misaligned<Half>(all, cpu::load_halves_portable), DType::f16, "load_halves_portable");
  expect_loads_exact(load_misaligned<BFloat16>(all, cpu::load_bf16s), DType::bf16, "load_bf16s");
}

TEST(VectorisedConversions, StoresRoundToNearestEvenWithTheCanonicalNaN) {
  std::printf("half conversions on this CPU: %s\n", cpu::half_conversion_path());
  const auto in = floats_to_round();
  expect_stores_rounded(in, store_misaligned<Half>(in, cpu::store_halves), DType::f16, "store_halves");
  expect_stores_rounded(in, store_misaligned<Half>(in, cpu::store_halves_portable), DType::f16,
                        "store_halves_portable");
  expect_stores_rounded(in, store_misaligned<BFloat16>(in, cpu::store_bf16s), DType::bf16, "store_bf16s");
}
