#include "mseloss/npy.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <sstream>

namespace mseloss::npy {
namespace {

const char kMagic[] = "\x93NUMPY";
constexpr std::uint32_t kMaxHeader = 1u << 20;

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

std::int64_t Array::numel() const {  // parse_header bounds the product of a parsed shape
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
      if (__builtin_mul_overflow(stride, v.shape[d], &stride)) stride = INT64_MAX;  // empty arrays only
    }
  }
  return v;
}

Header parse_header(const std::string& path, const unsigned char* p, std::size_t n, bool u2_is_bf16) {
  if (n < 6 || std::memcmp(p, kMagic, 6) != 0) bad(path, "not a .npy file (no \\x93NUMPY magic)");
  if (n < 8) bad(path, "truncated before the format version");
  const unsigned char major = p[6], minor = p[7];
  std::size_t pos = 8;
  std::uint32_t hlen = 0;
  if (major == 1) {
    if (n < 10) bad(path, "truncated before the header length");
    hlen = p[8] | (p[9] << 8);
    pos = 10;
  } else if (major == 2 || major == 3) {
    if (n < 12) bad(path, "truncated before the header length");
    hlen = p[8] | (p[9] << 8) | (p[10] << 16) | (static_cast<std::uint32_t>(p[11]) << 24);
    pos = 12;
  } else {
    bad(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  }
  if (hlen > kMaxHeader) bad(path, "header length " + std::to_string(hlen) + " is implausible");
  if (n - pos < hlen) bad(path, "truncated inside the header");
  const std::string h(reinterpret_cast<const char*>(p + pos), hlen);

  Header a;
  a.data_offset = pos + hlen;
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
    if (item.find_first_not_of(" \t", b + used) != std::string::npos)
      bad(path, "shape entry '" + item + "' is not an integer");
    if (v < 0) bad(path, "shape entry " + std::to_string(v) + " is negative");
    if (a.shape.size() == static_cast<std::size_t>(kMaxRank))
      bad(path, "rank exceeds " + std::to_string(kMaxRank));
    a.shape.push_back(v);
  }
  std::int64_t count = 1;
  for (auto d : a.shape) {
    if (d != 0 && count > (INT64_MAX / 16) / d) bad(path, "shape " + sh + " is too large");
    count *= d;
  }
  a.data_bytes = count * static_cast<std::int64_t>(dtype_size(a.dtype));
  a.shape_text = sh;
  return a;
}

namespace {
Array from_header(const Header& h) {
  Array a;
  a.dtype = h.dtype;
  a.shape = h.shape;
  a.fortran_order = h.fortran_order;
  return a;
}
void check_size(const std::string& path, const Header& h, std::int64_t available) {
  if (available < h.data_bytes)
    bad(path, "truncated: shape " + h.shape_text + " needs " + std::to_string(h.data_bytes) + " data bytes, the file has " +
                  std::to_string(available));
  if (available > h.data_bytes)
    bad(path, "has " + std::to_string(available - h.data_bytes) + " bytes after the data for shape " + h.shape_text);
}
}  // namespace

Array parse(const std::string& name, const unsigned char* p, std::size_t n, bool u2_is_bf16) {
  Header h = parse_header(name, p, n, u2_is_bf16);
  check_size(name, h, static_cast<std::int64_t>(n - h.data_offset));
  Array a = from_header(h);
  a.data.assign(p + h.data_offset, p + n);
  return a;
}

Array read(const std::string& path, bool u2_is_bf16) {
  std::ifstream f(path, std::ios::binary);
  if (!f) bad(path, std::string("cannot open: ") + std::strerror(errno));
  f.seekg(0, std::ios::end);
  const std::int64_t file_size = f.tellg();
  if (!f || file_size < 0) bad(path, "cannot read (not a regular file?)");
  f.seekg(0);
  // The header is read first (it is at most 12 + kMaxHeader bytes), the data then straight into place.
  std::vector<unsigned char> head(static_cast<std::size_t>(std::min<std::int64_t>(file_size, 12 + kMaxHeader)));
  if (!f.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size())))
    bad(path, "read error in the header");
  Header h = parse_header(path, head.data(), head.size(), u2_is_bf16);
  check_size(path, h, file_size - static_cast<std::int64_t>(h.data_offset));
  Array a = from_header(h);
  a.data.resize(static_cast<std::size_t>(h.data_bytes));
  f.seekg(static_cast<std::streamoff>(h.data_offset));
  if (h.data_bytes > 0 && !f.read(reinterpret_cast<char*>(a.data.data()), h.data_bytes)) bad(path, "read error in the data");
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
