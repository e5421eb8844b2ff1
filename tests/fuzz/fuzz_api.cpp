// libFuzzer target over the API's argument space on the CPU backend: dtypes,
// ranks 0..9, shapes, strides (negative, zero, huge), null pointers,
// reductions, ops, aliasing outputs. Views are placed inside one arena and the
// input is skipped when a view would reach outside it (reading there would be
// the caller's bug, not the library's). Every call must either succeed or
// throw mseloss::Error, and a throwing call must leave the outputs untouched.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <vector>

#include "mseloss/mseloss.hpp"

namespace {

using namespace mseloss;

struct Reader {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t byte() { return n ? (--n, *p++) : 0; }
  std::int64_t small(int mod) { return static_cast<std::int64_t>(byte() % mod); }
};

constexpr std::size_t kRegion = 1 << 16;  // bytes per view; a view starts mid-region

// A view inside the region [base, base + kRegion) or null; false if it would not fit.
bool make_view(Reader& r, unsigned char* base, DType t, TensorView& v) {
  v = TensorView{};
  v.dtype = r.byte() % 16 == 0 ? static_cast<DType>(7) : t;  // now and then an invalid dtype
  v.device = r.byte() % 32 == 0 ? Device::cuda : Device::cpu;
  v.rank = static_cast<int>(r.small(10));  // 9 is invalid
  const std::int64_t es = static_cast<std::int64_t>(dtype_size(t));
  std::int64_t lo = 0, hi = 0;
  bool must_refuse = v.rank > kMaxRank || v.dtype != t;  // the API has to reject these before touching memory
  for (int d = 0; d < v.rank && d < kMaxRank; ++d) {
    v.shape[d] = r.small(9) - (r.byte() % 64 == 0 ? 5 : 0);  // rarely negative
    if (v.shape[d] < 0) must_refuse = true;
    std::uint8_t s = r.byte();
    v.strides[d] = s < 200 ? static_cast<std::int64_t>(s % 40) - 10 : (s < 250 ? 0 : INT64_MAX / (s - 240));
    if (s >= 250 && v.shape[d] > 1) must_refuse = true;  // a span beyond 2^59 elements
    if (v.shape[d] > 1 && s < 250) {
      std::int64_t ext = v.strides[d] * (v.shape[d] - 1);
      (ext < 0 ? lo : hi) += ext;
    }
  }
  const std::int64_t offset = r.small(64);  // elements past the middle of the region
  if (r.byte() % 64 == 0) {
    v.data = nullptr;
    return true;
  }
  const std::int64_t half = static_cast<std::int64_t>(kRegion / 2) / es;
  const bool fits = lo > -half + 1 && offset + hi + 2 < half;
  if (!fits && !must_refuse) return false;
  v.data = base + kRegion / 2 + offset * es + (r.byte() % 16 == 0 ? 1 : 0);  // sometimes misaligned
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader r{data, size};
  static std::vector<unsigned char> in_arena(2 * kRegion), out_arena(4 * kRegion), snapshot(4 * kRegion);
  for (std::size_t i = 0; i < in_arena.size(); ++i) in_arena[i] = static_cast<unsigned char>(i * 2654435761u >> 13);
  std::memset(out_arena.data(), 0xA5, out_arena.size());
  const DType dtypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
  const DType t = dtypes[r.byte() % 4];
  TensorView x, y, out, gi, gt, go;
  if (!make_view(r, in_arena.data(), t, x) || !make_view(r, in_arena.data() + kRegion, t, y)) return 0;
  // Outputs normally live in their own arena; sometimes they alias an input or each other.
  unsigned char* out_base = r.byte() % 16 == 0 ? in_arena.data() : out_arena.data();
  if (!make_view(r, out_base, r.byte() % 8 == 0 ? DType::f32 : t, out) ||
      !make_view(r, out_arena.data() + kRegion, t, gi) || !make_view(r, out_arena.data() + 2 * kRegion, t, go))
    return 0;
  if (r.byte() % 2 == 0) {
    if (!make_view(r, out_arena.data() + 3 * kRegion, t, gt)) return 0;
  }
  Options o;
  o.reduction = static_cast<Reduction>(r.byte() % 4);  // 3 is invalid
  o.num_threads = static_cast<int>(r.small(5)) - (r.byte() % 64 == 0 ? 1 : 0);
  const int op = r.byte() % 3;
  std::memcpy(snapshot.data(), out_arena.data(), out_arena.size());
  std::vector<unsigned char> in_before = in_arena;
  if (std::getenv("MSELOSS_FUZZ_VERBOSE")) {
    auto show = [](const char* n, const TensorView& v, const unsigned char* base) {
      std::fprintf(stderr, "%s: dtype=%d dev=%d rank=%d off=%td shape=[", n, int(v.dtype), int(v.device), v.rank,
                   v.data ? static_cast<const unsigned char*>(v.data) - base : -1);
      for (int d = 0; d < v.rank && d < kMaxRank; ++d) std::fprintf(stderr, "%lld,", (long long)v.shape[d]);
      std::fprintf(stderr, "] strides=[");
      for (int d = 0; d < v.rank && d < kMaxRank; ++d) std::fprintf(stderr, "%lld,", (long long)v.strides[d]);
      std::fprintf(stderr, "]\n");
    };
    show("x", x, in_arena.data()); show("y", y, in_arena.data()); show("out", out, out_arena.data());
    show("gi", gi, out_arena.data()); show("gt", gt, out_arena.data()); show("go", go, out_arena.data());
    std::fprintf(stderr, "op=%d reduction=%d threads=%d\n", op, int(o.reduction), o.num_threads);
  }
  bool threw = false;
  try {
    if (op == 0) forward(x, y, out, o);
    if (op == 1) backward(x, y, go, gi, gt, o);
    if (op == 2) forward_backward(x, y, out, gi, gt, 0.5, o);
  } catch (const Error&) {
    threw = true;
  }
  if (threw && std::memcmp(snapshot.data(), out_arena.data(), out_arena.size()) != 0) std::abort();  // wrote on error
  if (out_base != in_arena.data() && in_before != in_arena) std::abort();                            // wrote an input
  return 0;
}
