// The lanes of §3 and §4: the loop that adds rows of terms to them, shared by
// the float lanes (cpu_backend.cpp) and the double-double lanes of fp64 inputs
// (lanes_dd.cpp), and the entry points of the latter.
//
// The hot loops are cloned for AVX2 and baseline x86-64 (GCC picks one at load
// time). IEEE operations give the same bits in every clone, and contraction
// stays off (no FMA). The lane loops, with the most arithmetic per byte, also
// get an AVX-512 clone: fp64's ran 1.5x faster, fp32's forward at 2^24 went
// from 0.55-0.70 to 0.71-0.85 of the read probe; the elementwise loops, which
// do little arithmetic, ran 25-35 % slower with one (session 43, AMD EPYC). lanes_dd.cpp is compiled with
// -fno-trapping-math, without which GCC keeps dd_add's branch and those loops
// scalar; the flag changes no result, but it slowed the float file's gradient
// loops by 15-20 %, so it is confined to that file.
#pragma once

#include <cstdint>

#include "common/numerics.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MSELOSS_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#define MSELOSS_CPU_CLONES_WIDE __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MSELOSS_CPU_CLONES
#define MSELOSS_CPU_CLONES_WIDE
#endif

namespace mseloss::detail::cpu {

// Adds rows r = 0 .. nr-1 (nr <= kRowBlock, `stride` elements apart) to the
// lanes, one lane per k, in row order per lane as §3 requires; the lane stays
// in registers across the rows, so the lanes array is read and written once
// per block of rows.
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

// fp64 inputs (lanes_dd.cpp): rows of terms into the lanes; the terms of one
// row of differences d into the lanes; one level of the pairwise tree (§2),
// b[j] = a[2j] (+) a[2j+1].
void accumulate_block(DD* lanes, const double* x, const double* y, std::int64_t stride, int nr, std::int64_t count);
void add_terms(DD* lanes, const double* d, std::int64_t n);
void tree_level(DD* b, const DD* a, std::int64_t half);

}  // namespace mseloss::detail::cpu
