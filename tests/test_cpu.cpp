// The CPU backend against the literal spec reference (identical bits), the
// 113-bit oracle (accuracy contract), and itself under every layout and
// thread count (identical bits).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "oracle.hpp"

using namespace mseloss;
using namespace testing_mse;

namespace {

constexpr DType kDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
std::size_t es(DType t) { return dtype_size(t); }

const std::vector<std::int64_t>& sizes() {
  static const std::vector<std::int64_t> s = {0, 1, 2, 3, 7, 31, 97, 255, 256, 257, 1023, 1024, 1025, 2047, 2048, 2049,
                                              4093, 65535, 65536, 65537, 131071, 1000003};
  return s;
}

std::vector<unsigned char> poisoned(std::size_t bytes) { return std::vector<unsigned char>(bytes, 0xA5); }

std::vector<unsigned char> loss_cpu(const std::vector<unsigned char>& x, const std::vector<unsigned char>& y, DType t,
                                    std::int64_t n, Reduction r, DType out_t, int threads = 0) {
  auto out = poisoned(r == Reduction::none ? n * es(out_t) : es(out_t));
  Options o;
  o.reduction = r;
  o.num_threads = threads;
  TensorView lv = r == Reduction::none ? TensorView::contiguous(out.data(), out_t, {n}) : TensorView::scalar(out.data(), out_t);
  forward(TensorView::contiguous(x.data(), t, {n}), TensorView::contiguous(y.data(), t, {n}), lv, o);
  return out;
}

// The fused pass over poisoned outputs: {loss, grad_input, grad_target}.
std::vector<std::vector<unsigned char>> fused_cpu(const std::vector<unsigned char>& x,
                                                  const std::vector<unsigned char>& y, DType t, std::int64_t n,
                                                  const Options& o) {
  const bool none = o.reduction == Reduction::none;
  std::vector<std::vector<unsigned char>> out = {poisoned(none ? n * es(t) : es(t)), poisoned(n * es(t)),
                                                 poisoned(n * es(t))};
  TensorView lv = none ? TensorView::contiguous(out[0].data(), t, {n}) : TensorView::scalar(out[0].data(), t);
  forward_backward(TensorView::contiguous(x.data(), t, {n}), TensorView::contiguous(y.data(), t, {n}), lv,
                   TensorView::contiguous(out[1].data(), t, {n}), TensorView::contiguous(out[2].data(), t, {n}), 0.5,
                   o);
  return out;
}

std::string where(DType t, std::int64_t n, Reduction r, Dist d, std::uint64_t seed) {
  return std::string(to_string(t)) + " N=" + std::to_string(n) + " " + to_string(r) + " " + to_string(d) +
         " seed=" + std::to_string(seed);
}

}  // namespace

// Bit-for-bit: the backend evaluates exactly the order docs/numerics.md gives.
TEST(CpuSpec, MatchesTheLiteralSpecReference) {
  std::uint64_t seed = 100;
  for (DType t : kDTypes)
    for (std::int64_t n : sizes())
      for (Dist d : {Dist::normal, Dist::wide_range, Dist::specials, Dist::near_overflow}) {
        ++seed;
        auto x = random_tensor(t, n, d, seed), y = random_tensor(t, n, Dist::normal, seed + 1);
        for (Reduction r : {Reduction::mean, Reduction::sum}) {
          auto got = loss_cpu(x, y, t, n, r, t);
          auto want = spec_reference(x, y, t, n, r, t);
          ASSERT_EQ(got, want) << where(t, n, r, d, seed) << ": got " << bits_string(got.data(), t) << " want "
                               << bits_string(want.data(), t);
        }
      }
}

// A size with more chunks than a power of two (the chunk tree padded) and R = 8.
TEST(CpuSpec, MatchesTheReferenceWithSeveralRowsPerChunk) {
  for (DType t : {DType::f32, DType::bf16, DType::f64}) {
    std::int64_t n = 4096 * (4096 / static_cast<std::int64_t>(es(t))) * 3 + 12345;  // K = 1537, R = 8
    auto x = random_tensor(t, n, Dist::normal, 5), y = random_tensor(t, n, Dist::uniform, 6);
    auto got = loss_cpu(x, y, t, n, Reduction::sum, t);
    auto want = spec_reference(x, y, t, n, Reduction::sum, t);
    ASSERT_EQ(got, want) << to_string(t) << ": got " << bits_string(got.data(), t) << " want " << bits_string(want.data(), t);
  }
}

// §8: within 1 ulp of the exact value, and correctly rounded in >= 99 % of cases.
TEST(CpuAccuracy, WithinOneUlpAndNearlyAlwaysCorrectlyRounded) {
  std::mt19937_64 rng(2026);
  for (DType t : kDTypes)
    for (Reduction r : {Reduction::mean, Reduction::sum}) {
      int cases = 0, correct = 0;
      for (int k = 0; k < 300; ++k) {
        std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 20000);
        Dist d = k % 3 == 0 ? Dist::wide_range : k % 3 == 1 ? Dist::normal : Dist::uniform;
        auto x = random_tensor(t, n, d, rng()), y = random_tensor(t, n, Dist::normal, rng());
        auto got = loss_cpu(x, y, t, n, r, t);
        std::vector<unsigned char> want(es(t));
        round_to(oracle_loss(x, y, t, n, r), t, want.data());
        std::int64_t u = ulp_distance(got.data(), want.data(), t);
        ASSERT_LE(u, 1) << where(t, n, r, d, k) << ": got " << bits_string(got.data(), t) << " exact rounds to "
                        << bits_string(want.data(), t);
        ++cases;
        correct += u == 0;
      }
      EXPECT_GE(correct, cases * 99 / 100) << to_string(t) << " " << to_string(r) << ": " << correct << "/" << cases;
    }
}

TEST(CpuAccuracy, LargeNAgainstTheOracle) {
  const std::int64_t n = std::int64_t{1} << 26;
  for (DType t : {DType::f32, DType::bf16}) {
    auto x = random_tensor(t, n, Dist::normal, 11), y = random_tensor(t, n, Dist::uniform, 12);
    for (Reduction r : {Reduction::mean, Reduction::sum}) {
      auto got = loss_cpu(x, y, t, n, r, DType::f32);
      std::vector<unsigned char> want(4);
      round_to(oracle_loss(x, y, t, n, r), DType::f32, want.data());
      EXPECT_LE(ulp_distance(got.data(), want.data(), DType::f32), 1)
          << to_string(t) << " " << to_string(r) << ": got " << bits_string(got.data(), DType::f32) << " want "
          << bits_string(want.data(), DType::f32);
    }
  }
}

// The forward loss and the fused pass's loss and gradients. N is large enough
// that every thread count asked for runs (a thread takes at least 2^19
// elements) and splits the chunks unevenly.
TEST(CpuInvariance, ThreadCountNeverChangesTheBits) {
  for (DType t : kDTypes) {
    const std::int64_t n = 7 * (std::int64_t{1} << 19) + 17;
    // wide_range makes the order matter; with normal data every chunk moves the loss.
    auto x = random_tensor(t, n, Dist::normal, 21), y = random_tensor(t, n, Dist::normal, 22);
    auto xw = random_tensor(t, n, Dist::wide_range, 23);
    for (const auto* in : {&xw, &x}) {
      auto one = loss_cpu(*in, y, t, n, Reduction::mean, t, 1);
      for (int threads : {2, 3, 7})
        EXPECT_EQ(loss_cpu(*in, y, t, n, Reduction::mean, t, threads), one) << to_string(t) << " threads=" << threads;
    }
    for (Reduction r : {Reduction::mean, Reduction::none}) {
      auto fused = [&](int threads) {
        Options o;
        o.reduction = r;
        o.num_threads = threads;
        return fused_cpu(x, y, t, n, o);
      };
      const auto fused_one = fused(1);
      for (int threads : {2, 3, 7})
        EXPECT_TRUE(fused(threads) == fused_one) << "fused " << to_string(t) << " " << to_string(r) << " threads=" << threads;
    }
  }
}

// Strided and broadcast views give the bits of their contiguous copies.
TEST(CpuInvariance, StridedAndBroadcastViewsMatchContiguousCopies) {
  for (DType t : kDTypes) {
    const std::int64_t rows = 301, cols = 517, n = rows * cols;
    // A transposed view: storage is cols x rows, logical rows x cols.
    auto storage = random_tensor(t, n, Dist::normal, 31);
    auto y = random_tensor(t, n, Dist::normal, 32);
    std::vector<unsigned char> x_copy(n * es(t));
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j)
        std::memcpy(&x_copy[(i * cols + j) * es(t)], &storage[(j * rows + i) * es(t)], es(t));
    TensorView xt = TensorView::contiguous(storage.data(), t, {rows, cols});
    xt.strides[0] = 1;
    xt.strides[1] = rows;
    // A row vector broadcast over rows, and its materialised copy.
    auto row = random_tensor(t, cols, Dist::uniform, 33);
    std::vector<unsigned char> row_copy(n * es(t));
    for (std::int64_t i = 0; i < rows; ++i) std::memcpy(&row_copy[i * cols * es(t)], row.data(), cols * es(t));
    // A reversed view (negative stride).
    std::vector<unsigned char> y_rev(n * es(t));
    for (std::int64_t i = 0; i < n; ++i) std::memcpy(&y_rev[i * es(t)], &y[(n - 1 - i) * es(t)], es(t));
    TensorView yr = TensorView::contiguous(y_rev.data() + (n - 1) * es(t), t, {rows, cols});
    yr.strides[0] = -cols;
    yr.strides[1] = -1;

    for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
      Options o;
      o.reduction = r;
      const std::size_t ob = r == Reduction::none ? n * es(t) : es(t);
      auto view_of = [&](std::vector<unsigned char>& b) {
        return r == Reduction::none ? TensorView::contiguous(b.data(), t, {rows, cols}) : TensorView::scalar(b.data(), t);
      };
      auto a = poisoned(ob), b = poisoned(ob), c = poisoned(ob), d = poisoned(ob), e = poisoned(ob);
      forward(xt, TensorView::contiguous(y.data(), t, {rows, cols}), view_of(a), o);
      forward(TensorView::contiguous(x_copy.data(), t, {rows, cols}), TensorView::contiguous(y.data(), t, {rows, cols}), view_of(b), o);
      EXPECT_EQ(a, b) << "transposed input, " << to_string(t) << " " << to_string(r);
      forward(TensorView::contiguous(x_copy.data(), t, {rows, cols}), TensorView::contiguous(row.data(), t, {cols}), view_of(c), o);
      forward(TensorView::contiguous(x_copy.data(), t, {rows, cols}), TensorView::contiguous(row_copy.data(), t, {rows, cols}), view_of(d), o);
      EXPECT_EQ(c, d) << "broadcast target, " << to_string(t) << " " << to_string(r);
      forward(TensorView::contiguous(x_copy.data(), t, {rows, cols}), yr, view_of(e), o);
      EXPECT_EQ(e, b) << "reversed target, " << to_string(t) << " " << to_string(r);
      // A strided output for none.
      if (r == Reduction::none) {
        auto wide = poisoned(2 * n * es(t));
        TensorView ov = TensorView::contiguous(wide.data(), t, {rows, cols});
        ov.strides[0] = 2 * cols;
        forward(TensorView::contiguous(x_copy.data(), t, {rows, cols}), TensorView::contiguous(y.data(), t, {rows, cols}), ov, o);
        for (std::int64_t i = 0; i < rows; ++i)
          ASSERT_EQ(0, std::memcmp(&wide[i * 2 * cols * es(t)], &b[i * cols * es(t)], cols * es(t))) << "row " << i;
      }
    }
  }
}

TEST(CpuReductionNone, EachElementIsTheRoundedSquare) {
  for (DType t : kDTypes)
    for (Dist d : kAllDists) {
      const std::int64_t n = 5003;
      auto x = random_tensor(t, n, d, 41), y = random_tensor(t, n, Dist::normal, 42);
      auto got = loss_cpu(x, y, t, n, Reduction::none, t);
      for (std::int64_t i = 0; i < n; ++i) {
        // Spec §6: 16-bit results are fl32(d*d) rounded again; fp32/fp64 round once.
        __float128 sq = term128(value_at(x, t, i), value_at(y, t, i), t);
        std::vector<unsigned char> want(es(t));
        if (t == DType::f16 || t == DType::bf16) {
          float f;
          round_to(sq, DType::f32, &f);
          round_to(static_cast<__float128>(f), t, want.data());
        } else {
          round_to(sq, t, want.data());
        }
        ASSERT_EQ(0, std::memcmp(&got[i * es(t)], want.data(), es(t)))
            << where(t, n, Reduction::none, d, 41) << " i=" << i << ": got " << bits_string(&got[i * es(t)], t)
            << " want " << bits_string(want.data(), t);
      }
    }
}

TEST(CpuEdgeCases, EmptyInputs) {
  for (DType t : kDTypes) {
    auto out = poisoned(8);
    forward(TensorView::contiguous(nullptr, t, {0}), TensorView::contiguous(nullptr, t, {0}), TensorView::scalar(out.data(), t),
            Options{Reduction::mean});
    EXPECT_TRUE(std::isnan(value_of(out.data(), t))) << to_string(t);
    forward(TensorView::contiguous(nullptr, t, {0}), TensorView::contiguous(nullptr, t, {0}), TensorView::scalar(out.data(), t),
            Options{Reduction::sum});
    EXPECT_EQ(value_of(out.data(), t), 0.0) << to_string(t);
    EXPECT_FALSE(std::signbit(value_of(out.data(), t)));
    forward(TensorView::contiguous(nullptr, t, {0, 3}), TensorView::contiguous(nullptr, t, {0, 3}),
            TensorView::contiguous(nullptr, t, {0, 3}), Options{Reduction::none});
  }
}

TEST(CpuEdgeCases, NaNAndInfinityPropagate) {
  for (DType t : kDTypes) {
    std::vector<double> xs = {1, 2, 3}, ys = {0, 0, 0};
    auto make = [&](std::vector<double> v) {
      std::vector<unsigned char> b(v.size() * es(t));
      for (std::size_t i = 0; i < v.size(); ++i) store_exact(&b[i * es(t)], t, v[i]);
      return b;
    };
    auto x = make({1, INFINITY, 3}), y = make({0, 0, 0});
    EXPECT_TRUE(std::isinf(value_of(loss_cpu(x, y, t, 3, Reduction::mean, t).data(), t)));
    auto xn = make({1, NAN, 3});
    auto nan_out = loss_cpu(xn, y, t, 3, Reduction::sum, t);
    EXPECT_TRUE(std::isnan(value_of(nan_out.data(), t)));
    auto xi = make({INFINITY, 0, 0}), yi = make({INFINITY, 0, 0});  // inf - inf
    EXPECT_TRUE(std::isnan(value_of(loss_cpu(xi, yi, t, 3, Reduction::mean, t).data(), t)));
  }
}

TEST(CpuEdgeCases, SixteenBitLossInFloat32IsTheUnroundedValue) {
  for (DType t : {DType::f16, DType::bf16}) {
    const std::int64_t n = 77777;
    auto x = random_tensor(t, n, Dist::normal, 51), y = random_tensor(t, n, Dist::normal, 52);
    auto got = loss_cpu(x, y, t, n, Reduction::mean, DType::f32);
    std::vector<unsigned char> want(4);
    round_to(oracle_loss(x, y, t, n, Reduction::mean), DType::f32, want.data());
    EXPECT_LE(ulp_distance(got.data(), want.data(), DType::f32), 1);
    // and the 16-bit loss is that float rounded again
    auto h = loss_cpu(x, y, t, n, Reduction::mean, t);
    std::vector<unsigned char> h_want(2);
    float f;
    std::memcpy(&f, got.data(), 4);
    round_to(static_cast<__float128>(f), t, h_want.data());
    EXPECT_EQ(h, h_want);
  }
}

// ---- gradients ----------------------------------------------------------------------

namespace {

// §7, from the spec text: scale = fl_c(2 g / N) (mean) or fl_c(2 g) (sum), in fp64 then rounded.
std::vector<unsigned char> expected_grad(const std::vector<unsigned char>& x, const std::vector<unsigned char>& y, DType t,
                                         std::int64_t n, Reduction r, double g) {
  std::vector<unsigned char> out(n * es(t));
  double s64 = r == Reduction::mean ? (2.0 * g) / static_cast<double>(n) : 2.0 * g;
  for (std::int64_t i = 0; i < n; ++i) {
    double xv = value_at(x, t, i), yv = value_at(y, t, i);
    if (t == DType::f64) {
      double v = (xv - yv) * s64;
      round_to(static_cast<__float128>(v), t, &out[i * es(t)]);
    } else {
      float d = static_cast<float>(xv) - static_cast<float>(yv);
      float v = d * static_cast<float>(s64);
      round_to(static_cast<__float128>(v), t, &out[i * es(t)]);
    }
  }
  return out;
}

}  // namespace

TEST(CpuGradient, BackwardAndFusedMatchTheSpecifiedFormula) {
  for (DType t : kDTypes)
    for (Reduction r : {Reduction::mean, Reduction::sum})
      for (std::int64_t n : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{300007}}) {
        auto x = random_tensor(t, n, Dist::normal, 61), y = random_tensor(t, n, Dist::uniform, 62);
        const double g = 0.75;
        std::vector<unsigned char> gbuf(es(t));
        store_exact(gbuf.data(), t, g);
        auto gi = poisoned(n * es(t)), gt = poisoned(n * es(t));
        Options o;
        o.reduction = r;
        backward(TensorView::contiguous(x.data(), t, {n}), TensorView::contiguous(y.data(), t, {n}),
                 TensorView::scalar(gbuf.data(), t), TensorView::contiguous(gi.data(), t, {n}),
                 TensorView::contiguous(gt.data(), t, {n}), o);
        auto want = expected_grad(x, y, t, n, r, g);
        ASSERT_EQ(gi, want) << to_string(t) << " " << to_string(r) << " N=" << n;
        for (std::int64_t i = 0; i < n; ++i)
          ASSERT_EQ(value_of(&gt[i * es(t)], t), -value_of(&gi[i * es(t)], t)) << "grad_target i=" << i;

        auto fi = poisoned(n * es(t));
        auto loss = poisoned(es(t));
        forward_backward(TensorView::contiguous(x.data(), t, {n}), TensorView::contiguous(y.data(), t, {n}),
                         TensorView::scalar(loss.data(), t), TensorView::contiguous(fi.data(), t, {n}), {}, g, o);
        EXPECT_EQ(fi, want) << "fused grad " << to_string(t) << " " << to_string(r);
        EXPECT_EQ(loss, loss_cpu(x, y, t, n, r, t)) << "fused loss must equal forward";
      }
}

TEST(CpuGradient, NoneUsesEachUpstreamValueAndBroadcasts) {
  for (DType t : kDTypes) {
    const std::int64_t rows = 37, cols = 129, n = rows * cols;
    auto x = random_tensor(t, n, Dist::normal, 71), y = random_tensor(t, n, Dist::normal, 72);
    auto gcol = random_tensor(t, rows, Dist::uniform, 73);  // shape [rows, 1], broadcast over cols
    auto gi = poisoned(n * es(t));
    Options o;
    o.reduction = Reduction::none;
    backward(TensorView::contiguous(x.data(), t, {rows, cols}), TensorView::contiguous(y.data(), t, {rows, cols}),
             TensorView::contiguous(gcol.data(), t, {rows, 1}), TensorView::contiguous(gi.data(), t, {rows, cols}), {}, o);
    for (std::int64_t i = 0; i < n; ++i) {
      double xv = value_at(x, t, i), yv = value_at(y, t, i), g = value_at(gcol, t, i / cols);
      std::vector<unsigned char> want(es(t));
      if (t == DType::f64) round_to(static_cast<__float128>((xv - yv) * (2.0 * g)), t, want.data());
      else {
        float d = static_cast<float>(xv) - static_cast<float>(yv);
        round_to(static_cast<__float128>(d * (2.0f * static_cast<float>(g))), t, want.data());
      }
      ASSERT_EQ(0, std::memcmp(&gi[i * es(t)], want.data(), es(t))) << to_string(t) << " i=" << i;
    }
  }
}

// PyTorch rounds 2/N to the input dtype first: for fp16 at N = 2^26 that is 0
// and every gradient vanishes. The spec rounds once, so gradients stay right.
TEST(CpuGradient, HalfGradientsStayRightAtLargeN) {
  const std::int64_t n = std::int64_t{1} << 26;
  const DType t = DType::f16;
  auto x = random_tensor(t, n, Dist::near_overflow, 81);  // |x - y| large enough for a normal gradient
  auto y = random_tensor(t, n, Dist::normal, 82);
  std::vector<unsigned char> one(2);
  store_exact(one.data(), t, 1.0);
  auto gi = poisoned(n * 2);
  backward(TensorView::contiguous(x.data(), t, {n}), TensorView::contiguous(y.data(), t, {n}),
           TensorView::scalar(one.data(), t), TensorView::contiguous(gi.data(), t, {n}), {}, Options{Reduction::mean});
  std::uint16_t half_scale;
  round_to(static_cast<__float128>(2.0 / n), t, &half_scale);
  EXPECT_EQ(value_of(&half_scale, t), 0.0) << "PyTorch's scale 2/N in half is zero here";
  std::int64_t nonzero = 0;
  for (std::int64_t i = 0; i < n; i += 997) {
    double exact = 2.0 * (value_at(x, t, i) - value_at(y, t, i)) / static_cast<double>(n);
    std::uint16_t want;
    round_to(static_cast<__float128>(exact), t, &want);
    ASSERT_LE(ulp_distance(&gi[i * 2], &want, t), 1) << "i=" << i;
    nonzero += value_of(&gi[i * 2], t) != 0.0;
  }
  EXPECT_GT(nonzero, n / 997 / 2);
}

TEST(CpuGradient, StridedGradientOutputsMatchContiguous) {
  for (DType t : kDTypes) {
    const std::int64_t rows = 50, cols = 61, n = rows * cols;
    auto x = random_tensor(t, n, Dist::normal, 91), y = random_tensor(t, cols, Dist::normal, 92);
    auto a = poisoned(n * es(t)), b = poisoned(2 * n * es(t)), loss_a = poisoned(es(t)), loss_b = poisoned(es(t));
    TensorView bv = TensorView::contiguous(b.data(), t, {rows, cols});
    bv.strides[1] = 2;
    bv.strides[0] = 2 * cols;
    forward_backward(TensorView::contiguous(x.data(), t, {rows, cols}), TensorView::contiguous(y.data(), t, {cols}),
                     TensorView::scalar(loss_a.data(), t), TensorView::contiguous(a.data(), t, {rows, cols}), {}, 1.0, {});
    forward_backward(TensorView::contiguous(x.data(), t, {rows, cols}), TensorView::contiguous(y.data(), t, {cols}),
                     TensorView::scalar(loss_b.data(), t), bv, {}, 1.0, {});
    EXPECT_EQ(loss_a, loss_b);
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(0, std::memcmp(&a[i * es(t)], &b[2 * i * es(t)], es(t))) << i;
  }
}

TEST(CpuGradient, ScaleGradientMultipliesOnceAndLeavesGOfOneAlone) {
  for (DType t : kDTypes)
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{300007}})
      for (double g : {1.0, 0.375, -3.0}) {
        const auto before = random_tensor(t, n, Dist::wide_range, 70 + n);
        const auto before_t = random_tensor(t, n, Dist::normal, 71 + n);
        std::vector<unsigned char> gbuf(es(t));
        store_exact(gbuf.data(), t, g);
        auto gi = before, gt = before_t;
        scale_gradient(TensorView::contiguous(gi.data(), t, {n}), TensorView::scalar(gbuf.data(), t),
                       TensorView::contiguous(gt.data(), t, {n}));
        std::vector<unsigned char> want(n * es(t)), want_t(n * es(t));
        for (std::int64_t i = 0; i < n; ++i) {
          for (auto* pair : {&before, &before_t}) {
            const double a = value_at(*pair, t, i);
            // fl_c(a * g): the product of two fp32 values is exact in fp64 (and
            // for fp64 the single multiply is the rounding).
            const double v = t == DType::f64 ? a * g : static_cast<double>(static_cast<float>(a * g));
            round_to(static_cast<__float128>(v), t, &(pair == &before ? want : want_t)[i * es(t)]);
          }
        }
        if (g == 1.0) {
          ASSERT_EQ(gi, before) << "g = 1 must leave grad_input as it was, " << to_string(t);
          ASSERT_EQ(gt, before_t) << "g = 1 must leave grad_target as it was, " << to_string(t);
        } else {
          ASSERT_EQ(gi, want) << to_string(t) << " N=" << n << " g=" << g;
          ASSERT_EQ(gt, want_t) << to_string(t) << " N=" << n << " g=" << g << " (grad_target)";
        }
      }
}

TEST(CpuGradient, ScaleGradientOfStridedViewsMatchesContiguous) {
  const DType t = DType::bf16;
  const std::int64_t rows = 301, cols = 217, n = rows * cols;
  const auto base = random_tensor(t, n, Dist::normal, 72);
  float g = -0.625f;
  auto contig = base, strided = base;
  scale_gradient(TensorView::contiguous(contig.data(), t, {n}), TensorView::scalar(&g, DType::f32));
  TensorView v = TensorView::contiguous(strided.data(), t, {cols, rows});
  v.strides[0] = 1;
  v.strides[1] = cols;  // the transpose of a [rows, cols] buffer: every element once
  scale_gradient(v, TensorView::scalar(&g, DType::f32));
  EXPECT_EQ(strided, contig);
}

// Options::cpu_run_tasks: the backend hands its work to the caller's runner,
// each task exactly once, and the bits are those of its own threads. The
// runner here runs the tasks on the calling thread, last first.
namespace {
std::vector<std::vector<int>> g_task_runs;  // per call of the runner: how often each task ran
void run_tasks_in_reverse(int tasks, void (*task)(void*, int), void* context) {
  g_task_runs.emplace_back(tasks, 0);
  for (int t = tasks - 1; t >= 0; --t) {
    task(context, t);
    ++g_task_runs.back()[t];
  }
}
}  // namespace

TEST(CpuThreads, TheCallersTaskRunnerGetsEveryTaskOnceAndTheBitsAreTheSame) {
  const int threads = 3;
  const std::int64_t n = threads * (std::int64_t{1} << 19) + 5;  // enough for 3 threads
  for (DType t : kDTypes) {
    auto x = random_tensor(t, n, Dist::normal, 81), y = random_tensor(t, n, Dist::normal, 82);
    for (Reduction r : {Reduction::mean, Reduction::none}) {
      auto fused = [&](CpuRunTasks runner) {
        Options o;
        o.reduction = r;
        o.num_threads = threads;
        o.cpu_run_tasks = runner;
        auto out = fused_cpu(x, y, t, n, o);
        // scale_gradient: the backend's other parallel loop.
        std::vector<unsigned char> g(es(t));
        store_exact(g.data(), t, -0.75);
        scale_gradient(TensorView::contiguous(out[1].data(), t, {n}), TensorView::scalar(g.data(), t),
                       TensorView::contiguous(out[2].data(), t, {n}), o);
        return out;
      };
      const auto own_threads = fused(nullptr);
      g_task_runs.clear();
      const auto with_runner = fused(run_tasks_in_reverse);
      // forward_backward and scale_gradient each hand over their tasks once, and every task runs once.
      EXPECT_EQ(g_task_runs, std::vector<std::vector<int>>(2, std::vector<int>(threads, 1)));
      EXPECT_TRUE(with_runner == own_threads) << to_string(t) << " " << to_string(r);
    }
  }
}
