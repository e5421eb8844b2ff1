// Test support written from docs/numerics.md alone, sharing no code with src/:
// random data of every kind, exact conversions, a >= 113-bit oracle, and a
// literal (slow, obviously-ordered) reference of the specified order.
#pragma once

#include <quadmath.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mseloss/mseloss.hpp"

namespace testing_mse {

using mseloss::DType;
using mseloss::Reduction;

enum class Dist { normal, uniform, wide_range, near_overflow, specials, all_equal, tiny };
const char* to_string(Dist d);
constexpr Dist kAllDists[] = {Dist::normal,   Dist::uniform,   Dist::wide_range, Dist::near_overflow,
                              Dist::specials, Dist::all_equal, Dist::tiny};

// n random elements of dtype t, as raw little-endian storage.
std::vector<unsigned char> random_tensor(DType t, std::int64_t n, Dist dist, std::uint64_t seed);

// Exact value of element i of raw storage.
double value_at(const std::vector<unsigned char>& buf, DType t, std::int64_t i);
// Exact value of one stored element.
double value_of(const void* p, DType t);
// Storage bits of a value that is exactly representable in t (used to build
// inputs and grad_output scalars).
void store_exact(void* p, DType t, double v);

// Correctly rounded (nearest even) conversion of a __float128 to dtype t,
// written as raw bits into p. Independent of the library's conversions.
void round_to(__float128 v, DType t, void* p);
// Distance in units in the last place between two stored values of dtype t
// (0 = same bits; NaN vs NaN = 0; NaN vs number = huge).
std::int64_t ulp_distance(const void* a, const void* b, DType t);
// Raw bits of a stored value, for messages.
std::string bits_string(const void* p, DType t);

// d = fl(x - y) in the term precision, term as specified (§1).
__float128 term128(double x, double y, DType t);
// The exact loss (sum of terms, / N for mean), accumulated in 113 bits.
__float128 oracle_loss(const std::vector<unsigned char>& x, const std::vector<unsigned char>& y, DType t,
                       std::int64_t n, Reduction r);

// The specified reduction evaluated literally (lanes, rows, lane tree, chunk
// tree, finishing), returning the stored result in `out_dtype` as raw bits.
std::vector<unsigned char> spec_reference(const std::vector<unsigned char>& x, const std::vector<unsigned char>& y,
                                          DType t, std::int64_t n, Reduction r, DType out_dtype);

}  // namespace testing_mse
