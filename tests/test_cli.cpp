// The `mseloss` binary on .npy files: results against the oracle, gradients,
// and bad input (one line on stderr, non-zero exit, no output file).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "mseloss/npy.hpp"
#include "oracle.hpp"

using namespace mseloss;
using namespace testing_mse;
namespace fs = std::filesystem;

namespace {

struct Result {
  int status;
  std::string out, err;
};

Result run_cli(const std::string& args) {
  static const fs::path dir = fs::temp_directory_path() / ("mseloss_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string err_file = (dir / "stderr.txt").string();
  std::string cmd = std::string(MSELOSS_CLI_PATH) + " " + args + " 2>" + err_file;
  FILE* p = popen(cmd.c_str(), "r");
  Result r;
  std::array<char, 4096> buf;
  std::size_t k;
  while ((k = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), k);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream e(err_file);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  return r;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("mseloss_cli_case_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& f) const { return (path / f).string(); }
  static int& counter() { static int c = 0; return c; }
};

void write_array(const std::string& path, DType t, std::vector<std::int64_t> shape, const std::vector<unsigned char>& data) {
  npy::write(path, t, shape, data.data());
}

}  // namespace

TEST(Cli, LossOfEveryDtypeAndReductionMatchesTheOracle) {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (Reduction r : {Reduction::mean, Reduction::sum}) {
      TempDir d;
      const std::int64_t n = 1000;  // small enough that an fp16 sum stays finite
      auto x = random_tensor(t, n, Dist::normal, 1), y = random_tensor(t, n, Dist::uniform, 2);
      write_array(d / "x.npy", t, {n}, x);
      write_array(d / "y.npy", t, {n}, y);
      std::string flags = t == DType::bf16 ? " --bf16" : "";
      Result res = run_cli("loss --input " + d / "x.npy" + " --target " + d / "y.npy" + " --reduction " + to_string(r) +
                           " --device cpu --json --out " + d / "loss.npy" + flags);
      ASSERT_EQ(res.status, 0) << res.err;
      auto j = nlohmann::json::parse(res.out);
      npy::Array loss = npy::read(d / "loss.npy", true);
      ASSERT_EQ(loss.shape.size(), 0u);
      std::vector<unsigned char> want(dtype_size(t));
      round_to(oracle_loss(x, y, t, n, r), t, want.data());
      EXPECT_LE(ulp_distance(loss.data.data(), want.data(), t), 1) << to_string(t) << " " << to_string(r);
      // the printed value round-trips to the stored one
      EXPECT_EQ(j["loss"].get<double>(), value_of(loss.data.data(), t));
      EXPECT_EQ(std::strtod(j["loss_hex"].get<std::string>().c_str(), nullptr), value_of(loss.data.data(), t));
    }
}

TEST(Cli, GradientWithAScalarOrAnArrayUpstream) {
  TempDir d;
  const std::int64_t rows = 20, cols = 33, n = rows * cols;
  auto x = random_tensor(DType::f32, n, Dist::normal, 3), y = random_tensor(DType::f32, n, Dist::normal, 4);
  write_array(d / "x.npy", DType::f32, {rows, cols}, x);
  write_array(d / "y.npy", DType::f32, {rows, cols}, y);
  Result res = run_cli("loss --input " + d / "x.npy" + " --target " + d / "y.npy" + " --device cpu --grad " + d / "g.npy" +
                       " --grad-output 0.5");
  ASSERT_EQ(res.status, 0) << res.err;
  npy::Array g = npy::read(d / "g.npy");
  ASSERT_EQ(g.shape, (std::vector<std::int64_t>{rows, cols}));
  for (std::int64_t i = 0; i < n; ++i) {
    float xv = static_cast<float>(value_at(x, DType::f32, i)), yv = static_cast<float>(value_at(y, DType::f32, i));
    float want = (xv - yv) * static_cast<float>(2.0 * 0.5 / n);
    ASSERT_EQ(value_of(&g.data[i * 4], DType::f32), want) << i;
  }
  // none with an upstream array broadcast over rows
  auto go = random_tensor(DType::f32, cols, Dist::uniform, 5);
  write_array(d / "go.npy", DType::f32, {cols}, go);
  res = run_cli("loss --input " + d / "x.npy" + " --target " + d / "y.npy" + " --reduction none --device cpu --out " +
                d / "l.npy" + " --grad " + d / "g2.npy" + " --grad-output " + d / "go.npy");
  ASSERT_EQ(res.status, 0) << res.err;
  npy::Array g2 = npy::read(d / "g2.npy"), l = npy::read(d / "l.npy");
  for (std::int64_t i = 0; i < n; ++i) {
    float xv = static_cast<float>(value_at(x, DType::f32, i)), yv = static_cast<float>(value_at(y, DType::f32, i));
    float gv = static_cast<float>(value_at(go, DType::f32, i % cols));
    ASSERT_EQ(value_of(&g2.data[i * 4], DType::f32), (xv - yv) * (2.0f * gv)) << i;
    ASSERT_EQ(value_of(&l.data[i * 4], DType::f32), (xv - yv) * (xv - yv)) << i;
  }
}

TEST(Cli, FortranOrderArraysAreReadThroughStrides) {
  TempDir d;
  const std::int64_t rows = 7, cols = 9, n = rows * cols;
  auto x = random_tensor(DType::f64, n, Dist::normal, 6), y = random_tensor(DType::f64, n, Dist::normal, 7);
  // x in Fortran order holds the transpose layout of the same logical array.
  std::vector<unsigned char> xf(n * 8);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) std::memcpy(&xf[(j * rows + i) * 8], &x[(i * cols + j) * 8], 8);
  {
    std::ofstream f(d / "xf.npy", std::ios::binary);
    std::string h = npy::header(DType::f64, {rows, cols}, true);
    f.write(h.data(), h.size());
    f.write(reinterpret_cast<const char*>(xf.data()), xf.size());
  }
  write_array(d / "x.npy", DType::f64, {rows, cols}, x);
  write_array(d / "y.npy", DType::f64, {rows, cols}, y);
  Result a = run_cli("loss --device cpu --input " + d / "xf.npy" + " --target " + d / "y.npy");
  Result b = run_cli("loss --device cpu --input " + d / "x.npy" + " --target " + d / "y.npy");
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(Cli, BadInputExitsNonZeroWithOneLineAndWritesNothing) {
  TempDir d;
  auto x = random_tensor(DType::f32, 10, Dist::normal, 8);
  write_array(d / "x.npy", DType::f32, {10}, x);
  write_array(d / "y4.npy", DType::f32, {4}, random_tensor(DType::f32, 4, Dist::normal, 9));
  write_array(d / "u2.npy", DType::bf16, {10}, random_tensor(DType::bf16, 10, Dist::normal, 9));
  { std::ofstream f(d / "text.npy"); f << "this is not numpy\n"; }
  {  // truncated: header says 10 floats, data has 3
    std::ofstream f(d / "short.npy", std::ios::binary);
    std::string h = npy::header(DType::f32, {10});
    f.write(h.data(), h.size());
    f.write(reinterpret_cast<const char*>(x.data()), 12);
  }
  {  // an int64 array
    std::ofstream f(d / "int.npy", std::ios::binary);
    std::string h = npy::header(DType::f64, {10});
    h.replace(h.find("<f8"), 3, "<i8");
    f.write(h.data(), h.size());
    f.write(reinterpret_cast<const char*>(x.data()), 40);
    f.write(reinterpret_cast<const char*>(x.data()), 40);
  }
  {  // big-endian
    std::ofstream f(d / "be.npy", std::ios::binary);
    std::string h = npy::header(DType::f32, {10});
    h.replace(h.find("<f4"), 3, ">f4");
    f.write(h.data(), h.size());
    f.write(reinterpret_cast<const char*>(x.data()), 40);
  }
  struct Bad {
    std::string args, names;
  };
  const std::string X = d / "x.npy", out = d / "out.npy", grad = d / "grad.npy";
  const std::string outs = " --out " + out + " --grad " + grad;
  const std::vector<Bad> bad = {
      {"--input " + d / "missing.npy" + " --target " + X + outs, "missing.npy"},
      {"--input " + d / "text.npy" + " --target " + X + outs, "not a .npy"},
      {"--input " + d / "short.npy" + " --target " + X + outs, "truncated"},
      {"--input " + d / "int.npy" + " --target " + X + outs, "unsupported dtype"},
      {"--input " + d / "be.npy" + " --target " + X + outs, "big-endian"},
      {"--input " + d / "u2.npy" + " --target " + X + outs, "--bf16"},
      {"--input " + X + " --target " + d / "y4.npy" + outs, "broadcast"},
      {"--input " + X + " --target " + X + " --reduction median" + outs, "--reduction"},
      {"--input " + X + " --target " + X + " --device tpu" + outs, "--device"},
      {"--input " + X + " --target " + X + " --reduction none --grad " + grad, "--out"},
      {"--input " + X + " --target " + d / "u2.npy" + " --bf16" + outs, "target"},
      {"--input " + X + " --target " + X + " --grad-output 2 --out " + out, "--grad"},
      {"--input " + X + " --target " + X + " --grad-output " + d / "missing.npy" + outs, "missing.npy"},
  };
  for (const Bad& b : bad) {
    Result r = run_cli("loss " + b.args);
    EXPECT_NE(r.status, 0) << b.args;
    EXPECT_NE(r.err.find(b.names), std::string::npos) << b.args << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_FALSE(fs::exists(out)) << b.args;
    EXPECT_FALSE(fs::exists(grad)) << b.args;
  }
}

TEST(Cli, BenchPrintsTheReadProbeRatio) {
  TempDir d;
  Result r = run_cli("bench --device cpu --sizes 2^12,2^16 --dtypes f32,bf16 --reductions mean,none --runs 3 --csv " +
                     d / "b.csv" + " --json " + d / "b.json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("x_probe"), std::string::npos) << r.out;
  std::ifstream f(d / "b.csv");
  std::string header, line;
  std::getline(f, header);
  EXPECT_NE(header.find("vs_probe"), std::string::npos);
  int rows = 0;
  while (std::getline(f, line)) ++rows;
  EXPECT_EQ(rows, 2 * 2 * 2);
  std::ifstream jf(d / "b.json");
  auto j = nlohmann::json::parse(jf);
  ASSERT_EQ(j.size(), 8u);
  for (auto& row : j) EXPECT_GT(row["vs_probe"].get<double>(), 0.0);
}

// --grad-target: backward and fused also write grad_target, one more tensor
// in the bytes they are credited with; forward is unchanged.
TEST(Cli, BenchWithGradTargetCountsTheSecondGradient) {
  TempDir d;
  Result r = run_cli("bench --device cpu --sizes 2^12 --dtypes f32 --reductions mean,none --op forward,backward,fused "
                     "--grad-target --runs 3 --json " + d / "b.json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("backward+gt"), std::string::npos) << r.out;
  std::ifstream jf(d / "b.json");
  auto j = nlohmann::json::parse(jf);
  ASSERT_EQ(j.size(), 6u);
  const double tensor = 4096.0 * 4;
  for (auto& row : j) {
    const std::string op = row["op"], red = row["reduction"];
    const bool none = red == "none", fwd = op == "forward";
    EXPECT_EQ(row["grad_target"].get<bool>(), !fwd) << op << " " << red;
    const double tensors = fwd ? (none ? 3 : 2) : (none ? 5 : 4);
    EXPECT_EQ(row["bytes"].get<double>(), tensors * tensor) << op << " " << red;
    EXPECT_GT(row["us"].get<double>(), 0.0) << op << " " << red;
  }
}
