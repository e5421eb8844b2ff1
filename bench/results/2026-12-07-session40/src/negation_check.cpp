// Session 40: the identity behind candidate `bit` (session 39's src/bit.patch), checked on
// every float. The tile stores grad_input g = store(gr) and the CPU backend stores
// grad_target = store(-gr) (§7). `bit` writes negated(g) instead: g with its sign bit
// flipped unless g is the canonical NaN. This checks negated(store(f)) == store(-f) for all
// 2^32 floats f, fp16 and bf16, with the library's host conversions (round to nearest even,
// NaN to the canonical NaN). Build: g++ -O2 -std=c++17 -I../../../../src negation_check.cpp
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/numerics.hpp"

using namespace mseloss::detail;

// The 16-bit half of src/bit.patch's negated_vector, one element at a time.
static std::uint16_t negated(std::uint16_t g, std::uint16_t nan) { return g == nan ? g : g ^ 0x8000u; }

int main() {
  std::uint64_t bad_half = 0, bad_bf16 = 0;
  for (std::uint64_t u = 0; u <= 0xffffffffull; ++u) {
    float f;
    const std::uint32_t b = static_cast<std::uint32_t>(u);
    std::memcpy(&f, &b, 4);
    if (negated(float_to_half(f).bits, kHalfNaN) != float_to_half(-f).bits && bad_half++ < 5)
      std::printf("fp16 differs at float bits %08x\n", b);
    if (negated(float_to_bf16(f).bits, kBf16NaN) != float_to_bf16(-f).bits && bad_bf16++ < 5)
      std::printf("bf16 differs at float bits %08x\n", b);
  }
  std::printf("2^32 floats: fp16 %llu differ, bf16 %llu differ\n", static_cast<unsigned long long>(bad_half),
              static_cast<unsigned long long>(bad_bf16));
  return bad_half || bad_bf16;
}
