// libFuzzer target: the .npy parser on arbitrary bytes. It must either
// return an array whose data size matches its shape, or throw NpyError.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "mseloss/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (bool bf16 : {false, true}) {
    try {
      mseloss::npy::Array a = mseloss::npy::parse("fuzz.npy", data, size, bf16);
      if (static_cast<std::int64_t>(a.data.size()) != a.numel() * static_cast<std::int64_t>(mseloss::dtype_size(a.dtype)))
        std::abort();  // a parsed array whose data does not match its shape is a bug
      if (a.shape.size() > static_cast<std::size_t>(mseloss::kMaxRank)) std::abort();
      (void)a.view();
    } catch (const mseloss::npy::NpyError&) {
    }
  }
  return 0;
}
