// The double-double lanes of fp64 inputs (§4), compiled with
// -fno-trapping-math so that they vectorise (cpu/lanes.hpp says why).
#include "cpu/lanes.hpp"

namespace mseloss::detail::cpu {

MSELOSS_CPU_CLONES_WIDE void accumulate_block(DD* __restrict lanes, const double* __restrict x,
                                              const double* __restrict y, std::int64_t stride, int nr,
                                              std::int64_t count) {
  accumulate_any_rows(lanes, x, y, stride, nr, count);
}

MSELOSS_CPU_CLONES_WIDE void add_terms(DD* __restrict lanes, const double* __restrict d, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) lanes[k] = acc_add_term(lanes[k], d[k]);
}

MSELOSS_CPU_CLONES_WIDE void tree_level(DD* __restrict b, const DD* __restrict a, std::int64_t half) {
  for (std::int64_t j = 0; j < half; ++j) b[j] = dd_add(a[2 * j], a[2 * j + 1]);
}

}  // namespace mseloss::detail::cpu
