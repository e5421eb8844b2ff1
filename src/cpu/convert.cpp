#include "cpu/convert.hpp"

#include "cpu/lanes.hpp"  // MSELOSS_CPU_CLONES

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define MSELOSS_F16C_PATH 1
#endif

namespace mseloss::detail::cpu {
namespace {

#ifdef MSELOSS_F16C_PATH
// F16C converts 8 values per instruction, exactly (half to float) and with
// round-to-nearest-even (float to half, the rounding of §6; the immediate
// overrides MXCSR's rounding mode). Only the NaN needs help: F16C keeps its
// payload, §6 writes the canonical one.
__attribute__((target("avx,f16c"))) void load_halves_f16c(const Half* src, std::int64_t n, float* dst) {
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    _mm256_storeu_ps(dst + k, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k))));
  load_halves_portable(src + k, n - k, dst + k);
}

__attribute__((target("avx,f16c"))) void store_halves_f16c(const float* src, std::int64_t n, Half* dst) {
  const __m128i magnitude = _mm_set1_epi16(0x7fff);
  const __m128i infinity = _mm_set1_epi16(0x7c00);
  const __m128i nan = _mm_set1_epi16(static_cast<short>(kHalfNaN));
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + k), _MM_FROUND_TO_NEAREST_INT);
    const __m128i is_nan = _mm_cmpgt_epi16(_mm_and_si128(h, magnitude), infinity);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + k), _mm_blendv_epi8(h, nan, is_nan));
  }
  store_halves_portable(src + k, n - k, dst + k);
}

bool use_f16c() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    // __builtin_cpu_supports("avx") also checks that the OS saves the YMM
    // registers; clang has no "f16c" for it, so that bit comes from CPUID.
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
  }();
  return has;
}
#endif

}  // namespace

void load_halves_portable(const Half* src, std::int64_t n, float* dst) {
  for (std::int64_t k = 0; k < n; ++k) dst[k] = half_to_float(read_elem(src + k));
}

void store_halves_portable(const float* src, std::int64_t n, Half* dst) {
  for (std::int64_t k = 0; k < n; ++k) write_elem(dst + k, float_to_half(src[k]));
}

void load_halves(const Half* src, std::int64_t n, float* dst) {
#ifdef MSELOSS_F16C_PATH
  if (use_f16c()) return load_halves_f16c(src, n, dst);
#endif
  load_halves_portable(src, n, dst);
}

void store_halves(const float* src, std::int64_t n, Half* dst) {
#ifdef MSELOSS_F16C_PATH
  if (use_f16c()) return store_halves_f16c(src, n, dst);
#endif
  store_halves_portable(src, n, dst);
}

const char* half_conversion_path() {
#ifdef MSELOSS_F16C_PATH
  if (use_f16c()) return "f16c";
#endif
  return "portable";
}

// bfloat16 is the top half of a float: plain integer loops that the compiler
// vectorises (the clones give AVX2 where the CPU has it).
MSELOSS_CPU_CLONES void load_bf16s(const BFloat16* src, std::int64_t n, float* dst) {
  for (std::int64_t k = 0; k < n; ++k) dst[k] = bf16_to_float(read_elem(src + k));
}

// float_to_bf16 without the branch, so that the loop vectorises.
MSELOSS_CPU_CLONES void store_bf16s(const float* src, std::int64_t n, BFloat16* dst) {
  for (std::int64_t k = 0; k < n; ++k) {
    const std::uint32_t u = bits_of(src[k]);
    const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    write_elem(dst + k, BFloat16{(u & 0x7fffffffu) > 0x7f800000u ? kBf16NaN : static_cast<std::uint16_t>(rounded)});
  }
}

}  // namespace mseloss::detail::cpu
