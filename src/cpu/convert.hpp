// Contiguous runs of 16-bit values to and from the float compute type (§6),
// vectorised: the CPU backend's 16-bit paths spend their time here, and the
// scalar conversions of common/numerics.hpp run at a few hundred MB/s.
//
// The values are those of half_to_float / float_to_half and bf16_to_float /
// float_to_bf16, bit for bit, with one exception that no output can show: a
// NaN read may come back with its quiet bit set (F16C quiets it). Every NaN
// the backend writes is the canonical one (§6), and arithmetic on a NaN gives
// a NaN whatever its payload.
//
// Pointers need no alignment (views may start at an odd byte offset).
#pragma once

#include <cstdint>

#include "common/numerics.hpp"

// The CPU backend's hot loops are cloned for AVX2 and baseline x86-64 (GCC
// picks one at load time). IEEE operations give the same bits in every clone,
// and contraction stays off (no FMA). The fp64 (double-double) loops, bound by
// arithmetic, also get an AVX-512 clone, which runs them 1.5x faster; the
// memory-bound loops ran 15-20 % slower with one (session 43, AMD EPYC).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MSELOSS_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#define MSELOSS_CPU_CLONES_WIDE __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MSELOSS_CPU_CLONES
#define MSELOSS_CPU_CLONES_WIDE
#endif

namespace mseloss::detail::cpu {

void load_halves(const Half* src, std::int64_t n, float* dst);
void store_halves(const float* src, std::int64_t n, Half* dst);
void load_bf16s(const BFloat16* src, std::int64_t n, float* dst);
void store_bf16s(const float* src, std::int64_t n, BFloat16* dst);

// The half conversions' implementation on this CPU: "f16c" or "portable".
const char* half_conversion_path();

// The portable loops behind the functions above, for tests to compare with the
// vectorised ones on the same machine.
void load_halves_portable(const Half* src, std::int64_t n, float* dst);
void store_halves_portable(const float* src, std::int64_t n, Half* dst);

}  // namespace mseloss::detail::cpu
