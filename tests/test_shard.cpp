// Sharded losses (docs/numerics.md §9): a tensor cut at chunk boundaries into
// shards, each shard's partials computed alone, the buffers summed and
// finished, give the bits of forward() / forward_backward() on the whole
// tensor, for any number of shards (empty ones included), on the CPU and on
// the GPU. Outputs are poisoned before every run.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#ifdef MSELOSS_WITH_CUDA
#include <cuda_runtime.h>
#endif

#include "oracle.hpp"

using namespace mseloss;
using namespace testing_mse;

namespace {

constexpr DType kDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
using Bytes = std::vector<unsigned char>;

// Device memory for one buffer (CPU: the host vector itself).
struct Buf {
  Device dev;
  Bytes host;
  void* ptr = nullptr;
  Buf(Device d, Bytes h) : dev(d), host(std::move(h)) {
    ptr = host.data();
#ifdef MSELOSS_WITH_CUDA
    if (dev == Device::cuda) {
      EXPECT_EQ(cudaMalloc(&ptr, host.size() + 1), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(ptr, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    }
#endif
  }
  Bytes read() const {
#ifdef MSELOSS_WITH_CUDA
    if (dev == Device::cuda) {
      Bytes h(host.size());
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(h.data(), ptr, h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      return h;
    }
#endif
    return host;
  }
  ~Buf() {
#ifdef MSELOSS_WITH_CUDA
    if (dev == Device::cuda) cudaFree(ptr);
#endif
  }
  Buf(const Buf&) = delete;
};

TensorView view1d(const Buf& b, DType t, std::int64_t n) {
  return TensorView::contiguous(b.ptr, t, {n}, b.dev);
}

Bytes slice(const Bytes& v, DType t, std::int64_t begin, std::int64_t n) {
  const std::size_t es = dtype_size(t);
  return Bytes(v.begin() + begin * es, v.begin() + (begin + n) * es);
}

// Cut points 0 = b0 <= b1 <= ... <= bS = N, all at multiples of C (empty
// shards included), S = shards.
std::vector<std::int64_t> cuts(std::int64_t n, std::int64_t C, int shards, std::mt19937_64& rng) {
  const std::int64_t K = (n + C - 1) / C;
  std::vector<std::int64_t> b = {0};
  for (int s = 1; s < shards; ++s) b.push_back(std::uniform_int_distribution<std::int64_t>(0, K)(rng) * C);
  b.push_back(n);
  std::sort(b.begin(), b.end());
  for (auto& v : b) v = std::min(v, n);
  return b;
}

struct Result {
  Bytes loss, grad;
};

// The whole tensor in one call.
Result whole(Device dev, DType t, Reduction r, const Bytes& x, const Bytes& y, std::int64_t n, bool grad) {
  Options o;
  o.reduction = r;
  Buf bx(dev, x), by(dev, y), bl(dev, Bytes(dtype_size(t), 0xA5)), bg(dev, Bytes(n * dtype_size(t), 0xA5));
  if (grad)
    forward_backward(view1d(bx, t, n), view1d(by, t, n), TensorView::scalar(bl.ptr, t, dev), view1d(bg, t, n), {},
                     0.625, o);
  else
    forward(view1d(bx, t, n), view1d(by, t, n), TensorView::scalar(bl.ptr, t, dev), o);
  return {bl.read(), grad ? bg.read() : Bytes{}};
}

// Shard by shard, summing the partial buffers in `order`, then finishing.
Result sharded(Device dev, DType t, Reduction r, const Bytes& x, const Bytes& y, std::int64_t n, bool grad,
               const std::vector<std::int64_t>& b, bool reverse_sum) {
  Options o;
  o.reduction = r;
  const std::int64_t P = partials_numel(n, t);
  std::vector<Bytes> parts;
  Bytes g;
  for (std::size_t s = 0; s + 1 < b.size(); ++s) {
    const std::int64_t len = b[s + 1] - b[s];
    Buf bx(dev, slice(x, t, b[s], len)), by(dev, slice(y, t, b[s], len));
    Buf bp(dev, Bytes(P * 8, 0xA5)), bg(dev, Bytes(len * dtype_size(t), 0xA5));
    TensorView pv = TensorView::contiguous(bp.ptr, DType::f64, {P}, dev);
    if (grad)
      shard_partials(view1d(bx, t, len), view1d(by, t, len), Shard{n, b[s]}, pv, view1d(bg, t, len), {}, 0.625, o);
    else
      shard_partials(view1d(bx, t, len), view1d(by, t, len), Shard{n, b[s]}, pv, {}, {}, 1.0, o);
    parts.push_back(bp.read());
    const Bytes gs = bg.read();
    if (grad) g.insert(g.end(), gs.begin(), gs.end());
  }
  // Every slot is non-zero on one shard at most: the sum is exact in any order.
  std::vector<double> total(P, 0.0);
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const Bytes& part = parts[reverse_sum ? parts.size() - 1 - k : k];
    for (std::int64_t j = 0; j < P; ++j) {
      double v;
      std::memcpy(&v, &part[j * 8], 8);
      total[j] += v;
    }
  }
  Bytes tb(P * 8);
  if (P > 0) std::memcpy(tb.data(), total.data(), tb.size());  // N = 0 has no chunks
  Buf bt(dev, tb), bl(dev, Bytes(dtype_size(t), 0xA5));
  finish_partials(TensorView::contiguous(bt.ptr, DType::f64, {P}, dev), n, t, TensorView::scalar(bl.ptr, t, dev), o);
  return {bl.read(), g};
}

void check_every_sharding(Device dev) {
  std::mt19937_64 rng(2026);
  std::uint64_t seed = 100;
  for (DType t : kDTypes) {
    const std::int64_t C = chunk_numel(1, t);  // 8 rows for every N below 2^25 fp32
    const std::int64_t sizes[] = {0, 1, 97, C, 3 * C, 5 * C + 17, 40 * C + 1};
    for (std::int64_t n : sizes)
      for (Reduction r : {Reduction::mean, Reduction::sum})
        for (bool grad : {false, true})
          for (int shards : {1, 2, 3, 4, 7}) {
            const Dist d = kAllDists[seed % 7];
            const Bytes x = random_tensor(t, n, d, ++seed), y = random_tensor(t, n, Dist::normal, ++seed);
            const auto b = cuts(n, chunk_numel(n, t), shards, rng);
            const std::string ctx = std::string(to_string(t)) + " N=" + std::to_string(n) + " " + to_string(r) +
                                    (grad ? " fused" : "") + " shards=" + std::to_string(shards) + " " + to_string(d);
            const Result want = whole(dev, t, r, x, y, n, grad);
            const Result got = sharded(dev, t, r, x, y, n, grad, b, shards % 2 == 0);
            EXPECT_EQ(got.loss, want.loss) << ctx << ": loss";
            EXPECT_EQ(got.grad, want.grad) << ctx << ": gradient";
          }
  }
}

bool have_cuda(Device dev) { return dev == Device::cpu || cuda_available(); }

}  // namespace

TEST(Shard, CpuShardsGiveTheWholeTensorsBits) { check_every_sharding(Device::cpu); }

TEST(Shard, CudaShardsGiveTheWholeTensorsBits) {
  if (!have_cuda(Device::cuda)) GTEST_SKIP() << "no CUDA device visible (or a CPU-only build): GPU tests skipped";
  check_every_sharding(Device::cuda);
}

// More than 8 rows per chunk (fp64 at N > 4096 chunks of 8 rows).
TEST(Shard, LargeChunksAndManyShards) {
  const DType t = DType::f64;
  const std::int64_t n = 4096 * 4096 + 1000;
  ASSERT_GT(chunk_numel(n, t), 8 * 512);
  const Bytes x = random_tensor(t, n, Dist::wide_range, 7), y = random_tensor(t, n, Dist::normal, 8);
  std::mt19937_64 rng(9);
  const auto b = cuts(n, chunk_numel(n, t), 9, rng);
  for (Device dev : {Device::cpu, Device::cuda}) {
    if (!have_cuda(dev)) continue;
    EXPECT_EQ(sharded(dev, t, Reduction::mean, x, y, n, true, b, false).loss,
              whole(dev, t, Reduction::mean, x, y, n, true).loss)
        << to_string(dev);
  }
}

TEST(Shard, BadShardsAreRefusedAndNothingIsWritten) {
  const DType t = DType::f32;
  const std::int64_t n = 10 * chunk_numel(1, t), C = chunk_numel(n, t), P = partials_numel(n, t);
  std::vector<float> x(n, 1.0f), y(n, 0.5f);
  std::vector<double> part(P + 1);
  const auto poison = [&] { std::fill(part.begin(), part.end(), -7.0); };
  auto call = [&](std::int64_t offset, std::int64_t len, std::int64_t p_len, DType p_dtype, Reduction r) {
    Options o;
    o.reduction = r;
    shard_partials(TensorView::contiguous(x.data(), t, {len}), TensorView::contiguous(y.data(), t, {len}),
                   Shard{n, offset}, TensorView::contiguous(part.data(), p_dtype, {p_len}), {}, {}, 1.0, o);
  };
  struct Case {
    const char* what;
    const char* names;
    std::int64_t offset, len, p_len;
    DType p_dtype;
    Reduction r;
  };
  const Case cases[] = {
      {"offset inside a chunk", "shard.offset", C / 2, C, P, DType::f64, Reduction::mean},
      {"end inside a chunk", "shard:", 0, C + 3, P, DType::f64, Reduction::mean},
      {"past global_numel", "shard:", 9 * C, 2 * C, P, DType::f64, Reduction::sum},
      {"negative offset", "shard:", -C, C, P, DType::f64, Reduction::sum},
      {"partials too short", "partials", 0, C, P - 1, DType::f64, Reduction::mean},
      {"partials not fp64", "partials", 0, C, P, DType::f32, Reduction::mean},
      {"reduction none", "options.reduction", 0, C, P, DType::f64, Reduction::none},
  };
  for (const Case& c : cases) {
    poison();
    try {
      call(c.offset, c.len, c.p_len, c.p_dtype, c.r);
      ADD_FAILURE() << c.what << ": no error";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(c.names), std::string::npos) << c.what << ": " << e.what();
    }
    for (double v : part) ASSERT_EQ(v, -7.0) << c.what << ": partials written on error";
  }
  poison();
  call(3 * C, 2 * C, P, DType::f64, Reduction::mean);  // a valid shard writes all of the buffer
  for (std::int64_t j = 0; j < P; ++j) {
    if (j / 2 == 3 || j / 2 == 4) continue;
    ASSERT_EQ(part[j], 0.0) << "slot " << j << " of another shard's chunk";
  }
  EXPECT_EQ(part[P], -7.0) << "past the buffer";
  float out = 0;
  EXPECT_THROW(finish_partials(TensorView::contiguous(part.data(), DType::f64, {P - 2}), n, t,
                               TensorView::scalar(&out, t)),
               InvalidArgument);
}
