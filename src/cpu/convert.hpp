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
#include <cstring>

#include "common/numerics.hpp"

namespace mseloss::detail::cpu {

// Element access through memcpy: views may be misaligned (a slice at an odd
// byte offset), and a misaligned T* dereference is undefined behaviour. The
// compiler turns these into plain loads and stores.
template <class T>
inline T read_elem(const T* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
inline void write_elem(T* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

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
