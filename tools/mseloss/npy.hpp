// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mseloss/mseloss.hpp"

namespace mseloss::npy {

// A bad or unsupported file; the message names the file and what is wrong.
class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Array {
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  bool fortran_order = false;     // column-major data: view() gives matching strides
  std::vector<unsigned char> data;

  std::int64_t numel() const;
  // A CPU view of the data, honouring Fortran order through strides.
  TensorView view() const;
};

// What a header says; data_offset is where the data starts.
struct Header {
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  bool fortran_order = false;
  std::size_t data_offset = 0;
  std::int64_t data_bytes = 0;
  std::string shape_text;
};
// Parses the header at the start of the n bytes at p; `name` is for messages.
Header parse_header(const std::string& name, const unsigned char* p, std::size_t n, bool u2_is_bf16 = false);
// A whole .npy image in memory (the fuzzer's entry point; read() shares the header code).
Array parse(const std::string& name, const unsigned char* p, std::size_t n, bool u2_is_bf16 = false);

// bf16 has no NumPy dtype: it is stored as '<u2' holding the bits, and read
// as bf16 only when `u2_is_bf16` is set. '<f2', '<f4', '<f8' map to
// float16/32/64. Big-endian and other dtypes are refused.
Array read(const std::string& path, bool u2_is_bf16 = false);

// Writes C-order data atomically: to a temporary file renamed into place, so
// that a failure leaves no partial file behind.
void write(const std::string& path, DType dtype, const std::vector<std::int64_t>& shape, const void* data);

// The header for a C-order array (exposed for tests that craft bad files).
std::string header(DType dtype, const std::vector<std::int64_t>& shape, bool fortran_order = false);

}  // namespace mseloss::npy
