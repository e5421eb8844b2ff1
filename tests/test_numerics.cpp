// The shared arithmetic of src/common/numerics.hpp against independent
// definitions: every half and bfloat16 value, random floats, dd sums.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "common/numerics.hpp"
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
