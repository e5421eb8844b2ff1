#include "mseloss/npy.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mseloss::npy {
namespace {

const char kMagic[] = "\x93NUMPY";

[[noreturn]] void bad(const std::string& path, const std::string& what) { throw NpyError(path + ": " + what); }

const char* descr_of(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::f16: return "<f2";
    case DType::bf16: return "<u2";
  }
  return "?";
}

// The value of `key` in the header dict, as raw text up to the next top-level ',' or '}'.
std::string dict_value(const std::string& h, const std::string& key, const std::string& path) {
  std::size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) k = h.find("\"" + key + "\"");
  if (k == std::string::npos) bad(path, "header has no '" + key + "' entry");
  std::size_t colon = h.find(':', k);
  if (colon == std::string::npos) bad(path, "header entry '" + key + "' has no value");
  std::size_t i = colon + 1;
  int depth = 0;
  std::size_t start = i;
  for (; i < h.size(); ++i) {
    char c = h[i];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  if (depth != 0 || i >= h.size()) bad(path, "header entry '" + key + "' is not terminated");
  std::string v = h.substr(start, i - start);
  std::size_t a = v.find_first_not_of(" \t"), b = v.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : v.substr(a, b - a + 1);
}

}  // namespace

std::int64_t Array::numel() const {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

TensorView Array::view() const {
  TensorView v = TensorView::contiguous(data.data(), dtype, static_cast<int>(shape.size()), shape.data());
  if (fortran_order) {
    std::int64_t stride = 1;
    for (int d = 0; d < v.rank; ++d) {
      v.strides[d] = stride;
      stride *= v.shape[d];
    }
  }
  return v;
}

Array read(const std::string& path, bool u2_is_bf16) {
  std::ifstream f(path, std::ios::binary);
  if (!f) bad(path, std::string("cannot open: ") + std::strerror(errno));
  char magic[6];
  if (!f.read(magic, 6) || std::memcmp(magic, kMagic, 6) != 0) bad(path, "not a .npy file (no \\x93NUMPY magic)");
  unsigned char ver[2];
  if (!f.read(reinterpret_cast<char*>(ver), 2)) bad(path, "truncated before the format version");
  std::uint32_t hlen = 0;
  if (ver[0] == 1) {
    unsigned char l[2];
    if (!f.read(reinterpret_cast<char*>(l), 2)) bad(path, "truncated before the header length");
    hlen = l[0] | (l[1] << 8);
  } else if (ver[0] == 2 || ver[0] == 3) {
    unsigned char l[4];
    if (!f.read(reinterpret_cast<char*>(l), 4)) bad(path, "truncated before the header length");
    hlen = l[0] | (l[1] << 8) | (l[2] << 16) | (static_cast<std::uint32_t>(l[3]) << 24);
  } else {
    bad(path, "unsupported .npy format version " + std::to_string(ver[0]) + "." + std::to_string(ver[1]));
  }
  if (hlen > (1u << 20)) bad(path, "header length " + std::to_string(hlen) + " is implausible");
  std::string h(hlen, '\0');
  if (!f.read(&h[0], hlen)) bad(path, "truncated inside the header");

  Array a;
  std::string descr = dict_value(h, "descr", path);
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"')) bad(path, "descr " + descr + " is not a simple dtype");
  descr = descr.substr(1, descr.size() - 2);
  if (descr == "<f4" || descr == "=f4") a.dtype = DType::f32;
  else if (descr == "<f8" || descr == "=f8") a.dtype = DType::f64;
  else if (descr == "<f2" || descr == "=f2") a.dtype = DType::f16;
  else if ((descr == "<u2" || descr == "=u2") && u2_is_bf16) a.dtype = DType::bf16;
  else if (descr == "<u2" || descr == "=u2")
    bad(path, "dtype '<u2' holds bfloat16 only with --bf16; without it it is an unsupported integer dtype");
  else if (!descr.empty() && descr[0] == '>')
    bad(path, "dtype '" + descr + "' is big-endian; only little-endian float16/32/64 (and bfloat16 as '<u2') are supported");
  else
    bad(path, "unsupported dtype '" + descr + "'; supported: '<f2', '<f4', '<f8', and '<u2' with --bf16");

  std::string fo = dict_value(h, "fortran_order", path);
  if (fo == "True") a.fortran_order = true;
  else if (fo == "False") a.fortran_order = false;
  else bad(path, "fortran_order is '" + fo + "', not True or False");

  std::string sh = dict_value(h, "shape", path);
  if (sh.size() < 2 || sh.front() != '(' || sh.back() != ')') bad(path, "shape '" + sh + "' is not a tuple");
  std::stringstream ss(sh.substr(1, sh.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t b = item.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item.substr(b), &used);
    } catch (const std::exception&) {
      bad(path, "shape entry '" + item + "' is not an integer");
    }
    if (v < 0) bad(path, "shape entry " + std::to_string(v) + " is negative");
    a.shape.push_back(v);
  }
  if (a.shape.size() > static_cast<std::size_t>(kMaxRank))
    bad(path, "rank " + std::to_string(a.shape.size()) + " exceeds " + std::to_string(kMaxRank));

  std::int64_t n = 1;
  for (auto s : a.shape) {
    if (s != 0 && n > (INT64_MAX / 16) / s) bad(path, "shape " + sh + " is too large");
    n *= s;
  }
  const std::int64_t bytes = n * static_cast<std::int64_t>(dtype_size(a.dtype));
  const std::streamoff data_start = f.tellg();
  f.seekg(0, std::ios::end);
  const std::streamoff file_size = f.tellg();
  if (file_size - data_start < bytes)
    bad(path, "truncated: shape " + sh + " needs " + std::to_string(bytes) + " data bytes, the file has " +
                  std::to_string(file_size - data_start));
  if (file_size - data_start > bytes)
    bad(path, "has " + std::to_string(file_size - data_start - bytes) + " bytes after the data for shape " + sh);
  f.seekg(data_start);
  a.data.resize(static_cast<std::size_t>(bytes));
  if (bytes > 0 && !f.read(reinterpret_cast<char*>(a.data.data()), bytes)) bad(path, "read error in the data");
  return a;
}

std::string header(DType dtype, const std::vector<std::int64_t>& shape, bool fortran_order) {
  std::string s = "{'descr': '" + std::string(descr_of(dtype)) + "', 'fortran_order': " +
                  (fortran_order ? "True" : "False") + ", 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) s += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
  s += "), }";
  // Pad so that magic + version + length + header is a multiple of 64, ending in '\n'.
  std::size_t total = 10 + s.size() + 1;
  s += std::string((64 - total % 64) % 64, ' ');
  s += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(s.size() & 0xff);
  out += static_cast<char>((s.size() >> 8) & 0xff);
  return out + s;
}

void write(const std::string& path, DType dtype, const std::vector<std::int64_t>& shape, const void* data) {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  const std::string tmp = path + ".tmp-mseloss";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw NpyError(path + ": cannot create: " + std::strerror(errno));
    std::string h = header(dtype, shape);
    f.write(h.data(), static_cast<std::streamsize>(h.size()));
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n * dtype_size(dtype)));
    if (!f.flush()) {
      std::remove(tmp.c_str());
      throw NpyError(path + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw NpyError(path + ": cannot rename the finished file into place: " + std::strerror(errno));
  }
}

}  // namespace mseloss::npy
