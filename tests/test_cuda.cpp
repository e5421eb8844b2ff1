// The CUDA backend against the CPU backend: identical bits for every dtype,
// reduction, operation, size class, layout, grid size, stream and graph
// replay. Outputs are poisoned before every run. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <algorithm>
#include <memory>
#include <thread>
#include <atomic>
#include <mutex>
#include <vector>

#include "late_writer.hpp"
#include "oracle.hpp"

using namespace mseloss;
using namespace testing_mse;

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr << ": " << cudaGetErrorString(cudaGetLastError())

namespace {

constexpr DType kDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
std::size_t es(DType t) { return dtype_size(t); }

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device visible (or a CPU-only build): GPU tests skipped";
  }
};

// A device buffer, copied from / to host vectors; `offset` bytes misalign it.
// With an offset the allocation ends where the data ends, so that a read
// past the end is caught by compute-sanitizer.
struct Dev {
  unsigned char* base = nullptr;
  unsigned char* ptr = nullptr;
  std::size_t bytes = 0, alloc = 0;
  Dev(std::size_t b, std::size_t offset = 0) : bytes(b), alloc(offset > 0 ? b + offset : b + 16) {
    EXPECT_EQ(cudaMalloc(&base, alloc), cudaSuccess);
    ptr = base + offset;
    poison();
  }
  Dev(const std::vector<unsigned char>& h, std::size_t offset = 0) : Dev(h.size(), offset) {
    EXPECT_EQ(cudaMemcpy(ptr, h.data(), h.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  // The whole allocation. cudaMemset runs on the legacy stream, which the
  // tests' non-blocking streams do not wait for: synchronise, or a kernel
  // launched next could write before the poison lands.
  void poison() {
    EXPECT_EQ(cudaMemset(base, 0xA5, alloc), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  std::vector<unsigned char> host() const {
    std::vector<unsigned char> h(bytes);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(h.data(), ptr, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  ~Dev() { cudaFree(base); }
  Dev(const Dev&) = delete;
};

TensorView on(TensorView v, const Dev& d) {
  v.data = d.ptr;
  v.device = Device::cuda;
  return v;
}

struct Outputs {
  std::vector<unsigned char> loss, grad, grad_t;
};

enum class Which { forward, backward, fused };

// Runs one operation on the CPU and on the GPU with the same logical inputs.
// Elements by which each GPU operand starts past a 16-byte boundary.
struct Offsets {
  std::size_t x = 0, y = 0, out = 0, grad = 0, g = 0;
};

Outputs run_op(Device dev, Which op, DType t, std::int64_t n, Reduction r, const std::vector<unsigned char>& x,
               const std::vector<unsigned char>& y, const std::vector<unsigned char>& g, Options o = {},
               Offsets off = {}) {
  o.reduction = r;
  const std::size_t lb = r == Reduction::none ? n * es(t) : es(t);
  Outputs out;
  if (dev == Device::cpu) {
    out.loss.assign(lb, 0xA5);
    out.grad.assign(n * es(t), 0xA5);
    out.grad_t.assign(n * es(t), 0xA5);
    TensorView xv = TensorView::contiguous(x.data(), t, {n}), yv = TensorView::contiguous(y.data(), t, {n});
    TensorView lv = r == Reduction::none ? TensorView::contiguous(out.loss.data(), t, {n}) : TensorView::scalar(out.loss.data(), t);
    TensorView gi = TensorView::contiguous(out.grad.data(), t, {n}), gt = TensorView::contiguous(out.grad_t.data(), t, {n});
    TensorView go = r == Reduction::none ? TensorView::contiguous(g.data(), t, {n}) : TensorView::scalar(g.data(), t);
    if (op == Which::forward) forward(xv, yv, lv, o);
    if (op == Which::backward) backward(xv, yv, go, gi, gt, o);
    if (op == Which::fused) forward_backward(xv, yv, lv, gi, gt, 0.625, o);
    return out;
  }
  Dev dx(x, off.x * es(t)), dy(y, off.y * es(t)), dg(g, off.g * es(t)), dl(lb, off.out * es(t)),
      dgi(n * es(t), off.grad * es(t)), dgt(n * es(t), off.grad * es(t));
  TensorView xv = on(TensorView::contiguous(nullptr, t, {n}), dx), yv = on(TensorView::contiguous(nullptr, t, {n}), dy);
  TensorView lv = on(r == Reduction::none ? TensorView::contiguous(nullptr, t, {n}) : TensorView::scalar(nullptr, t), dl);
  TensorView gi = on(TensorView::contiguous(nullptr, t, {n}), dgi), gt = on(TensorView::contiguous(nullptr, t, {n}), dgt);
  TensorView go = on(r == Reduction::none ? TensorView::contiguous(nullptr, t, {n}) : TensorView::scalar(nullptr, t), dg);
  if (op == Which::forward) forward(xv, yv, lv, o);
  if (op == Which::backward) backward(xv, yv, go, gi, gt, o);
  if (op == Which::fused) forward_backward(xv, yv, lv, gi, gt, 0.625, o);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  out.loss = dl.host();
  out.grad = dgi.host();
  out.grad_t = dgt.host();
  return out;
}

std::string where(Which op, DType t, std::int64_t n, Reduction r) {
  const char* ops[] = {"forward", "backward", "fused"};
  return std::string(ops[static_cast<int>(op)]) + " " + to_string(t) + " N=" + std::to_string(n) + " " + to_string(r);
}

void expect_same(const Outputs& a, const Outputs& b, Which op, const std::string& ctx) {
  if (op != Which::backward) EXPECT_TRUE(a.loss == b.loss) << ctx << ": loss differs";
  if (op != Which::forward) {
    EXPECT_TRUE(a.grad == b.grad) << ctx << ": grad_input differs";
    EXPECT_TRUE(a.grad_t == b.grad_t) << ctx << ": grad_target differs";
  }
}

std::vector<unsigned char> upstream(DType t, std::int64_t n, Reduction r) {
  if (r == Reduction::none) return random_tensor(t, n, Dist::uniform, 777);
  std::vector<unsigned char> g(es(t));
  store_exact(g.data(), t, 0.375);
  return g;
}

}  // namespace

// MSELOSS_TEST_MAX_N caps the sizes of the sweep below (compute-sanitizer
// runs, which are 10-100x slower, use it); unset, every size runs.
std::int64_t max_test_n() {
  const char* v = std::getenv("MSELOSS_TEST_MAX_N");
  return v ? std::strtoll(v, nullptr, 10) : std::numeric_limits<std::int64_t>::max();
}

TEST_F(CudaTest, IdenticalBitsToTheCpuForEveryDtypeReductionAndSize) {
  const std::int64_t sizes[] = {0, 1, 2, 3, 7, 97, 1023, 2048, 4099, 65537, 300001, (1 << 20) + 7, (1 << 22) + 3, 9000011};
  std::uint64_t seed = 1;
  for (DType t : kDTypes)
    for (std::int64_t n : sizes)
      for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
        if (n > max_test_n()) continue;
        Dist d = kAllDists[seed % 7];
        auto x = random_tensor(t, n, d, ++seed), y = random_tensor(t, n, Dist::normal, ++seed);
        auto g = upstream(t, n, r);
        for (Which op : {Which::forward, Which::backward, Which::fused}) {
          auto cpu = run_op(Device::cpu, op, t, n, r, x, y, g);
          auto gpu = run_op(Device::cuda, op, t, n, r, x, y, g);
          expect_same(cpu, gpu, op, where(op, t, n, r) + " " + to_string(d));
        }
      }
}

// One chunk takes a one-block kernel of 1, 2, 4 or 8 rows. From 2 to 16
// chunks, fp32 and 16-bit inputs take the sliced kernel (2 blocks per
// chunk); fp64 inputs one block per chunk, in a thread-block cluster up to 8
// chunks and in the single-wave kernel from 9. From 17 on, the single-wave
// kernel for all. Both sides of each line, with whole chunks and rows and
// with a last chunk that ends in a partial vector.
TEST_F(CudaTest, ChunkCountsAroundTheClusterLimitGiveTheCpuBits) {
  std::uint64_t seed = 500;
  for (DType t : kDTypes) {
    const std::int64_t row = 4096 / static_cast<std::int64_t>(es(t));  // W (§2)
    const std::int64_t chunk = 8 * row;                                 // R = 8 rows
    std::vector<std::int64_t> sizes = {row, row + 3, 2 * row, 2 * row + 5, 4 * row, 4 * row + 7};
    for (std::int64_t k : {1, 2, 3, 8, 9, 16, 17}) {
      sizes.push_back(k * chunk);
      sizes.push_back((k - 1) * chunk + chunk / 2 + 3);
    }
    for (std::int64_t n : sizes) {
      if (n > max_test_n()) continue;
      auto x = random_tensor(t, n, Dist::normal, ++seed), y = random_tensor(t, n, Dist::uniform, ++seed);
      for (Reduction r : {Reduction::mean, Reduction::sum}) {
        auto g = upstream(t, n, r);
        for (Which op : {Which::forward, Which::fused}) {
          auto cpu = run_op(Device::cpu, op, t, n, r, x, y, g);
          auto gpu = run_op(Device::cuda, op, t, n, r, x, y, g);
          expect_same(cpu, gpu, op, where(op, t, n, r));
        }
      }
    }
  }
}

// Misaligned operands, in the three cases the CUDA backend tells apart:
// every operand off by the same amount (element by element), inputs off and
// outputs aligned as fresh gradients are (vectors cut from aligned words:
// the shifted kernels), and inputs off by different amounts. Sizes from
// below one tile of the elementwise kernel (head and tail only) to many
// chunks per block.
TEST_F(CudaTest, MisalignedPointersGiveTheSameBits) {
  struct Case {
    const char* name;
    Offsets off;
  };
  const Case cases[] = {{"all operands by 1", {1, 1, 1, 1, 1}},
                        {"all operands by 3", {3, 3, 3, 3, 3}},
                        {"inputs by 1, outputs aligned", {1, 1, 0, 0, 1}},
                        {"inputs by 3, outputs aligned", {3, 3, 0, 0, 3}},
                        {"x by 1, y by 2, g by 3, outputs aligned", {1, 2, 0, 0, 3}},
                        {"x aligned, y by 1, outputs aligned", {0, 1, 0, 0, 0}}};
  std::uint64_t seed = 500;
  for (DType t : kDTypes)
    for (std::int64_t n : {std::int64_t{1000}, std::int64_t{123457}, std::int64_t{3000017}})
      for (const Case& c : cases) {
        auto x = random_tensor(t, n, Dist::normal, ++seed), y = random_tensor(t, n, Dist::wide_range, ++seed);
        for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
          auto g = upstream(t, n, r);
          for (Which op : {Which::forward, Which::backward, Which::fused})
            expect_same(run_op(Device::cpu, op, t, n, r, x, y, g), run_op(Device::cuda, op, t, n, r, x, y, g, {}, c.off),
                        op, where(op, t, n, r) + " " + c.name);
        }
      }
}

// The forward pass and the fused pass, every grid from one block to more
// blocks than chunks (5000003 elements: 611 chunks of fp32, 306 of 16-bit,
// 1221 of fp64, the last cut short): the persistent kernels' batches,
// tickets and chunk-less blocks.
TEST_F(CudaTest, GridSizeNeverChangesTheBits) {
  for (DType t : kDTypes) {
    const std::int64_t n = 5000003;
    auto x = random_tensor(t, n, Dist::wide_range, 7), y = random_tensor(t, n, Dist::normal, 8);
    auto g = upstream(t, n, Reduction::mean);
    for (Which op : {Which::forward, Which::fused}) {
      auto cpu = run_op(Device::cpu, op, t, n, Reduction::mean, x, y, g);
      for (int grid : {1, 2, 3, 7, 100, 1000, 4096}) {
        Options o;
        o.grid_blocks = grid;
        expect_same(cpu, run_op(Device::cuda, op, t, n, Reduction::mean, x, y, g, o), op,
                    std::string(to_string(t)) + " grid=" + std::to_string(grid));
      }
    }
  }
}

// From 2^24 elements (aligned, contiguous) the elementwise kernel deals its
// tiles from the workspace's counter, which its launch's last request resets
// (mse_elementwise_kernel); the fused mean pass deals its chunks from another
// (for fp32 in mse_fused_stream_kernel, for 16-bit inputs at these sizes in
// the ring kernel): every elementwise mode, the fused mean pass and
// every dtype, just above the threshold and at 2^25, each with a tail of whole
// and partial vectors past the last whole tile (and a last chunk cut short),
// called again and again on one stream (a counter left unreset would skip
// tiles or chunks of the next call, whose outputs are poisoned), on forced
// grids (7 blocks: hundreds of tiles each; 1000: one to three chunks each at
// 2^24), and misaligned (the shifted kernels are not dealt).
TEST_F(CudaTest, DealtTilesAndChunksGiveTheCpuBits) {
  std::uint64_t seed = 500;
  for (std::int64_t n : {(std::int64_t{1} << 24) + 3, (std::int64_t{1} << 25) + 40961}) {
    for (DType t : kDTypes) {
      auto x = random_tensor(t, n, Dist::wide_range, ++seed), y = random_tensor(t, n, Dist::normal, ++seed);
      for (Reduction r : {Reduction::none, Reduction::mean}) {
        auto g = upstream(t, n, r);
        for (Which op : {Which::forward, Which::backward, Which::fused}) {
          if (r == Reduction::mean && op == Which::forward) continue;  // the persistent forward: tested above
          auto cpu = run_op(Device::cpu, op, t, n, r, x, y, g);
          expect_same(cpu, run_op(Device::cuda, op, t, n, r, x, y, g), op, where(op, t, n, r));
          if (t != DType::f32 && t != DType::bf16) continue;
          for (int grid : {7, 1000}) {
            Options o;
            o.grid_blocks = grid;
            expect_same(cpu, run_op(Device::cuda, op, t, n, r, x, y, g, o), op,
                        where(op, t, n, r) + " grid=" + std::to_string(grid));
          }
          Offsets off;
          off.x = 1;
          expect_same(cpu, run_op(Device::cuda, op, t, n, r, x, y, g, {}, off), op, where(op, t, n, r) + " x off by 1");
        }
      }
    }
  }
}

// Fused passes with more chunks than 3 per SM (the reduce kernel's grid) go to
// mse_fused_stream_kernel, the others to the reduce kernel (launch_reduce):
// chunk counts at the bound and one past it, for this GPU's SM count, and the
// most chunks there are (4096, docs/numerics.md §2), each with a last chunk
// cut short, mean and sum, on the default grid and on forced ones (7 blocks:
// a hundred chunks or more each; 500: more blocks than are resident).
TEST_F(CudaTest, FusedPassesAroundTheLeanKernelsBoundsGiveTheCpuBits) {
  int dev = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  std::uint64_t seed = 900;
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    // 8 rows of 4096 bytes while K <= 4096 (docs/numerics.md §2)
    const std::int64_t chunk = 8 * 4096 / static_cast<std::int64_t>(es(t));
    for (std::int64_t chunks : {std::int64_t{3} * sms, std::int64_t{3} * sms + 1, std::int64_t{4096}}) {
      const std::int64_t n = (chunks - 1) * chunk + 4099;
      auto x = random_tensor(t, n, Dist::wide_range, ++seed), y = random_tensor(t, n, Dist::normal, ++seed);
      for (Reduction r : {Reduction::mean, Reduction::sum}) {
        auto g = upstream(t, n, r);
        auto cpu = run_op(Device::cpu, Which::fused, t, n, r, x, y, g);
        const std::string ctx = where(Which::fused, t, n, r) + " (" + std::to_string(chunks) + " chunks)";
        expect_same(cpu, run_op(Device::cuda, Which::fused, t, n, r, x, y, g), Which::fused, ctx);
        for (int grid : {7, 500}) {
          Options o;
          o.grid_blocks = grid;
          expect_same(cpu, run_op(Device::cuda, Which::fused, t, n, r, x, y, g, o), Which::fused,
                      ctx + " grid=" + std::to_string(grid));
        }
      }
    }
  }
}

TEST_F(CudaTest, StridedAndBroadcastViewsGiveTheCpuBits) {
  for (DType t : kDTypes) {
    const std::int64_t rows = 1001, cols = 777, n = rows * cols;
    auto xs = random_tensor(t, n, Dist::normal, 9), ys = random_tensor(t, cols, Dist::uniform, 10);
    // x: transposed storage; y: a row broadcast over rows.
    TensorView xv = TensorView::contiguous(xs.data(), t, {rows, cols});
    xv.strides[0] = 1;
    xv.strides[1] = rows;
    TensorView yv = TensorView::contiguous(ys.data(), t, {cols});
    for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
      Options o;
      o.reduction = r;
      const std::size_t lb = r == Reduction::none ? n * es(t) : es(t);
      std::vector<unsigned char> cl(lb, 0xA5), cg(n * es(t), 0xA5);
      auto lview = [&](void* p) {
        return r == Reduction::none ? TensorView::contiguous(p, t, {rows, cols}) : TensorView::scalar(p, t);
      };
      forward_backward(xv, yv, lview(cl.data()), TensorView::contiguous(cg.data(), t, {rows, cols}), {}, 1.0, o);
      Dev dx(xs), dy(ys), dl(lb), dg(n * es(t));
      forward_backward(on(xv, dx), on(yv, dy), on(lview(nullptr), dl), on(TensorView::contiguous(nullptr, t, {rows, cols}), dg),
                       {}, 1.0, o);
      EXPECT_TRUE(dl.host() == cl) << to_string(t) << " " << to_string(r) << ": loss";
      EXPECT_TRUE(dg.host() == cg) << to_string(t) << " " << to_string(r) << ": grad";
    }
    // backward none with a broadcast upstream [rows, 1]
    auto gcol = random_tensor(t, rows, Dist::uniform, 11);
    std::vector<unsigned char> cg(n * es(t), 0xA5);
    Options o;
    o.reduction = Reduction::none;
    backward(xv, yv, TensorView::contiguous(gcol.data(), t, {rows, 1}), TensorView::contiguous(cg.data(), t, {rows, cols}), {}, o);
    Dev dx(xs), dy(ys), dgo(gcol), dg(n * es(t));
    backward(on(xv, dx), on(yv, dy), on(TensorView::contiguous(nullptr, t, {rows, 1}), dgo),
             on(TensorView::contiguous(nullptr, t, {rows, cols}), dg), {}, o);
    EXPECT_TRUE(dg.host() == cg) << to_string(t) << " backward none, broadcast upstream";
  }
}

TEST_F(CudaTest, HundredRepeatedRunsGiveOneResult) {
  const std::int64_t n = 33554432 + 5;
  auto x = random_tensor(DType::f32, n, Dist::normal, 12), y = random_tensor(DType::f32, n, Dist::normal, 13);
  Dev dx(x), dy(y), dl(4);
  TensorView xv = on(TensorView::contiguous(nullptr, DType::f32, {n}), dx), yv = on(TensorView::contiguous(nullptr, DType::f32, {n}), dy);
  std::vector<unsigned char> first;
  for (int i = 0; i < 100; ++i) {
    dl.poison();
    forward(xv, yv, on(TensorView::scalar(nullptr, DType::f32), dl));
    auto h = dl.host();
    if (i == 0) first = h;
    ASSERT_TRUE(h == first) << "run " << i;
  }
  std::vector<unsigned char> want(4);
  round_to(oracle_loss(x, y, DType::f32, n, Reduction::mean), DType::f32, want.data());
  EXPECT_LE(ulp_distance(first.data(), want.data(), DType::f32), 1);
}

TEST_F(CudaTest, RepeatedBackwardAndFusedRunsGiveOneResult) {
  const std::int64_t n = 16777216 + 3;
  for (DType t : {DType::f32, DType::bf16}) {
    auto x = random_tensor(t, n, Dist::normal, 14), y = random_tensor(t, n, Dist::normal, 15);
    auto g = upstream(t, n, Reduction::mean);
    auto want_fused = run_op(Device::cpu, Which::fused, t, n, Reduction::mean, x, y, g);
    auto want_back = run_op(Device::cpu, Which::backward, t, n, Reduction::mean, x, y, g);
    Dev dx(x), dy(y), dg(g), dl(es(t)), dgi(n * es(t)), dgt(n * es(t));
    TensorView xv = on(TensorView::contiguous(nullptr, t, {n}), dx), yv = on(TensorView::contiguous(nullptr, t, {n}), dy);
    TensorView gi = on(TensorView::contiguous(nullptr, t, {n}), dgi), gt = on(TensorView::contiguous(nullptr, t, {n}), dgt);
    for (int i = 0; i < 100; ++i) {
      dl.poison();
      dgi.poison();
      dgt.poison();
      if (i % 2 == 0) {
        forward_backward(xv, yv, on(TensorView::scalar(nullptr, t), dl), gi, gt, 0.625);
        ASSERT_TRUE(dl.host() == want_fused.loss) << to_string(t) << " fused run " << i;
        ASSERT_TRUE(dgi.host() == want_fused.grad) << to_string(t) << " fused run " << i;
        ASSERT_TRUE(dgt.host() == want_fused.grad_t) << to_string(t) << " fused run " << i;
      } else {
        backward(xv, yv, on(TensorView::scalar(nullptr, t), dg), gi, gt);
        ASSERT_TRUE(dgi.host() == want_back.grad) << to_string(t) << " backward run " << i;
        ASSERT_TRUE(dgt.host() == want_back.grad_t) << to_string(t) << " backward run " << i;
      }
    }
  }
}

TEST_F(CudaTest, BackToBackLaunchesOfOtherDataAndSizesNeverMixTheirPartials) {
  // fp32 inputs' chunk partials are tagged with their launch, and the
  // finishing block collects them while the last chunks are still landing:
  // it must never take a slot that an earlier launch (other data, other
  // size) left behind (bf16 takes the fenced ticket: the same must hold).
  // Launches on one stream back to back, each loss to its own slot, checked
  // after one synchronisation; fp32 sizes with K = 129 (one chunk per
  // block), 513 (blocks without a chunk: the grid is whole waves) and 4096.
  // A build that accepts any tag fails here (session 15, device run 2).
  const std::int64_t sizes[] = {(std::int64_t{1} << 25) - 7, (std::int64_t{1} << 25) - 7, (1 << 20) + 1, (1 << 22) + 3};
  const int order[] = {0, 1, 2, 3, 1, 0, 3, 2};
  const int launches = 400;
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Options o;
  o.stream = s;
  for (DType t : {DType::f32, DType::bf16})
    for (Which op : {Which::forward, Which::fused}) {
      std::vector<std::unique_ptr<Dev>> dx, dy, dgi;
      std::vector<Outputs> want;
      for (int k = 0; k < 4; ++k) {
        const auto x = random_tensor(t, sizes[k], Dist::normal, 300 + k), y = random_tensor(t, sizes[k], Dist::normal, 310 + k);
        want.push_back(run_op(Device::cpu, op, t, sizes[k], Reduction::mean, x, y, {}));
        dx.emplace_back(new Dev(x));
        dy.emplace_back(new Dev(y));
        dgi.emplace_back(new Dev(op == Which::fused ? sizes[k] * es(t) : 16));
      }
      Dev dl(launches * es(t)), dgt(sizes[0] * es(t));
      for (int i = 0; i < launches; ++i) {
        const int k = order[i % 8];
        const std::int64_t n = sizes[k];
        TensorView xv = on(TensorView::contiguous(nullptr, t, {n}), *dx[k]), yv = on(TensorView::contiguous(nullptr, t, {n}), *dy[k]);
        TensorView lv = TensorView::scalar(dl.ptr + i * es(t), t);
        lv.device = Device::cuda;
        if (op == Which::forward) {
          forward(xv, yv, lv, o);
        } else {
          TensorView gt = on(TensorView::contiguous(nullptr, t, {n}), dgt);
          forward_backward(xv, yv, lv, on(TensorView::contiguous(nullptr, t, {n}), *dgi[k]), gt, 0.625, o);
        }
      }
      CUDA_OK(cudaStreamSynchronize(s));
      const auto losses = dl.host();
      for (int i = 0; i < launches; ++i) {
        const int k = order[i % 8];
        ASSERT_EQ(std::memcmp(losses.data() + i * es(t), want[k].loss.data(), es(t)), 0)
            << where(op, t, sizes[k], Reduction::mean) << ": launch " << i;
      }
      if (op == Which::fused)
        for (int k = 0; k < 4; ++k) EXPECT_TRUE(dgi[k]->host() == want[k].grad) << where(op, t, sizes[k], Reduction::mean);
    }
  CUDA_OK(cudaStreamDestroy(s));
}

TEST_F(CudaTest, AnOverlappedLaunchWaitsForTheKernelThatWritesItsInput) {
  // Every call here is a programmatic dependent launch (the default
  // Options::programmatic_launch): its kernel may start while the kernel
  // before it in the stream still runs. That kernel here lets it start at
  // once and writes x only after 200 us, so a library kernel that read x
  // before waiting for it would read the poison. Sizes for each kernel: the
  // one-row kernel (1000); sliced chunks (20000 and 100003 for fp32 and
  // bf16); for fp64, a cluster (20000) and the single-wave reduction
  // (100003); the persistent reduction and the elementwise kernels
  // (2^22 + 3).
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Options o;
  o.stream = s;
  ASSERT_TRUE(o.programmatic_launch);
  for (DType t : {DType::f32, DType::bf16, DType::f64})
    for (Which op : {Which::forward, Which::backward, Which::fused})
      for (Reduction r : {Reduction::mean, Reduction::none})
        for (std::int64_t n : {std::int64_t{1000}, std::int64_t{20000}, std::int64_t{100003}, (std::int64_t{1} << 22) + 3}) {
          const auto x = random_tensor(t, n, Dist::normal, 400), y = random_tensor(t, n, Dist::normal, 401);
          const auto g = upstream(t, n, r);
          const Outputs want = run_op(Device::cpu, op, t, n, r, x, y, g);
          const std::size_t lb = r == Reduction::none ? n * es(t) : es(t);
          Dev src(x), dx(n * es(t)), dy(y), dg(g), dl(lb), dgi(n * es(t)), dgt(n * es(t));
          o.reduction = r;
          TensorView xv = on(TensorView::contiguous(nullptr, t, {n}), dx), yv = on(TensorView::contiguous(nullptr, t, {n}), dy);
          TensorView lv = on(r == Reduction::none ? TensorView::contiguous(nullptr, t, {n}) : TensorView::scalar(nullptr, t), dl);
          TensorView gi = on(TensorView::contiguous(nullptr, t, {n}), dgi), gt = on(TensorView::contiguous(nullptr, t, {n}), dgt);
          TensorView go = on(r == Reduction::none ? TensorView::contiguous(nullptr, t, {n}) : TensorView::scalar(nullptr, t), dg);
          CUDA_OK(launch_late_copy(dx.ptr, src.ptr, n * es(t), 200000, s));
          if (op == Which::forward) forward(xv, yv, lv, o);
          if (op == Which::backward) backward(xv, yv, go, gi, gt, o);
          if (op == Which::fused) forward_backward(xv, yv, lv, gi, gt, 0.625, o);
          CUDA_OK(cudaStreamSynchronize(s));
          const Outputs got{dl.host(), dgi.host(), dgt.host()};
          expect_same(got, want, op, where(op, t, n, r));
        }
  CUDA_OK(cudaStreamDestroy(s));
}

TEST_F(CudaTest, FourConcurrentStreamsAndGraphReplay) {
  const std::int64_t n = 4000037;
  const DType t = DType::bf16;
  std::vector<std::vector<unsigned char>> xs, ys, want;
  std::vector<std::unique_ptr<Dev>> dx, dy, dl;
  std::vector<cudaStream_t> streams(4);
  for (int k = 0; k < 4; ++k) {
    xs.push_back(random_tensor(t, n, Dist::normal, 20 + k));
    ys.push_back(random_tensor(t, n, Dist::normal, 30 + k));
    want.push_back(run_op(Device::cpu, Which::forward, t, n, Reduction::mean, xs[k], ys[k], {}).loss);
    dx.emplace_back(new Dev(xs[k]));
    dy.emplace_back(new Dev(ys[k]));
    dl.emplace_back(new Dev(es(t)));
    CUDA_OK(cudaStreamCreateWithFlags(&streams[k], cudaStreamNonBlocking));
  }
  auto call = [&](int k) {
    Options o;
    o.stream = streams[k];
    forward(on(TensorView::contiguous(nullptr, t, {n}), *dx[k]), on(TensorView::contiguous(nullptr, t, {n}), *dy[k]),
            on(TensorView::scalar(nullptr, t), *dl[k]), o);
  };
  for (int round = 0; round < 20; ++round) {
    for (auto& d : dl) d->poison();
    std::vector<std::thread> th;
    for (int k = 0; k < 4; ++k) th.emplace_back([&, k] { for (int i = 0; i < 5; ++i) call(k); });
    for (auto& h : th) h.join();
    for (int k = 0; k < 4; ++k) ASSERT_TRUE(dl[k]->host() == want[k]) << "stream " << k << " round " << round;
  }
  // Graph capture of all four, replayed.
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeGlobal));
  call(0);
  CUDA_OK(cudaStreamEndCapture(streams[0], &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 50; ++i) {
    dl[0]->poison();
    CUDA_OK(cudaGraphLaunch(exec, streams[0]));
    CUDA_OK(cudaStreamSynchronize(streams[0]));
    ASSERT_TRUE(dl[0]->host() == want[0]) << "replay " << i;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  // backward (upstream read on the device) and forward_backward, captured together.
  std::vector<unsigned char> g(es(t));
  store_exact(g.data(), t, 0.375);
  auto want_back = run_op(Device::cpu, Which::backward, t, n, Reduction::mean, xs[1], ys[1], g);
  auto want_fused = run_op(Device::cpu, Which::fused, t, n, Reduction::mean, xs[1], ys[1], g);
  Dev dg(g), dgi(n * es(t)), dgt(n * es(t)), dfi(n * es(t)), dfl(es(t));
  Options o;
  o.stream = streams[1];
  TensorView x1 = on(TensorView::contiguous(nullptr, t, {n}), *dx[1]), y1 = on(TensorView::contiguous(nullptr, t, {n}), *dy[1]);
  backward(x1, y1, on(TensorView::scalar(nullptr, t), dg), on(TensorView::contiguous(nullptr, t, {n}), dgi),
           on(TensorView::contiguous(nullptr, t, {n}), dgt), o);  // outside capture first
  CUDA_OK(cudaStreamSynchronize(streams[1]));
  CUDA_OK(cudaStreamBeginCapture(streams[1], cudaStreamCaptureModeGlobal));
  backward(x1, y1, on(TensorView::scalar(nullptr, t), dg), on(TensorView::contiguous(nullptr, t, {n}), dgi),
           on(TensorView::contiguous(nullptr, t, {n}), dgt), o);
  forward_backward(x1, y1, on(TensorView::scalar(nullptr, t), dfl), on(TensorView::contiguous(nullptr, t, {n}), dfi), {},
                   0.625, o);
  CUDA_OK(cudaStreamEndCapture(streams[1], &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 20; ++i) {
    dgi.poison();
    dgt.poison();
    dfi.poison();
    dfl.poison();
    CUDA_OK(cudaGraphLaunch(exec, streams[1]));
    CUDA_OK(cudaStreamSynchronize(streams[1]));
    ASSERT_TRUE(dgi.host() == want_back.grad) << "backward replay " << i;
    ASSERT_TRUE(dgt.host() == want_back.grad_t) << "backward replay " << i;
    ASSERT_TRUE(dfi.host() == want_fused.grad) << "fused replay " << i;
    ASSERT_TRUE(dfl.host() == want_fused.loss) << "fused replay " << i;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (auto s : streams) cudaStreamDestroy(s);
}

TEST_F(CudaTest, HugeNBeyondTwoToThe31) {
  const std::int64_t n = (std::int64_t{1} << 31) + 3;
  const DType t = DType::bf16;
  std::vector<unsigned char> x(n * 2), y(n * 2);
  std::uint64_t h = 88172645463325252ull;
  for (std::int64_t i = 0; i < n; ++i) {  // xorshift: quick, values in [-4, 4)
    h ^= h << 13, h ^= h >> 7, h ^= h << 17;
    std::uint16_t a = static_cast<std::uint16_t>(0x3e00 + (h & 0x1ff)) | static_cast<std::uint16_t>((h >> 9 & 1) << 15);
    std::uint16_t b = static_cast<std::uint16_t>(0x3e00 + (h >> 16 & 0x1ff));
    std::memcpy(&x[i * 2], &a, 2);
    std::memcpy(&y[i * 2], &b, 2);
  }
  for (Reduction r : {Reduction::mean, Reduction::sum}) {
    auto cpu = run_op(Device::cpu, Which::forward, t, n, r, x, y, {});
    auto gpu = run_op(Device::cuda, Which::forward, t, n, r, x, y, {});
    EXPECT_TRUE(cpu.loss == gpu.loss) << "N = 2^31 + 3 " << to_string(r) << ": cpu " << bits_string(cpu.loss.data(), t)
                                      << " gpu " << bits_string(gpu.loss.data(), t);
  }
  // The fused pass (loss and gradient) at the same size.
  std::vector<unsigned char> g(2);
  store_exact(g.data(), t, 1.0);
  auto cpu = run_op(Device::cpu, Which::fused, t, n, Reduction::mean, x, y, g);
  auto gpu = run_op(Device::cuda, Which::fused, t, n, Reduction::mean, x, y, g);
  EXPECT_TRUE(cpu.loss == gpu.loss) << "fused loss at N = 2^31 + 3";
  EXPECT_TRUE(cpu.grad == gpu.grad) << "fused grad_input at N = 2^31 + 3";
  EXPECT_TRUE(cpu.grad_t == gpu.grad_t) << "fused grad_target at N = 2^31 + 3";
}

TEST_F(CudaTest, HalfGradientAtTwoToThe26MatchesTheCpu) {
  const std::int64_t n = std::int64_t{1} << 26;
  const DType t = DType::f16;
  auto x = random_tensor(t, n, Dist::near_overflow, 40), y = random_tensor(t, n, Dist::normal, 41);
  auto g = upstream(t, n, Reduction::mean);
  expect_same(run_op(Device::cpu, Which::backward, t, n, Reduction::mean, x, y, g),
              run_op(Device::cuda, Which::backward, t, n, Reduction::mean, x, y, g), Which::backward, "f16 2^26 backward");
}

TEST_F(CudaTest, ComparisonAlgorithmsAreWithinFp32AccumulationError) {
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (std::int64_t n : {std::int64_t{1000}, std::int64_t{1} << 20, (std::int64_t{1} << 24) + 1})
      for (Algorithm a : {Algorithm::atomic, Algorithm::gridstride_atomic, Algorithm::gridstride_store}) {
        auto x = random_tensor(t, n, Dist::normal, 50), y = random_tensor(t, n, Dist::normal, 51);
        Options o;
        o.algorithm = a;
        Dev dx(x), dy(y), dl(4);
        forward(on(TensorView::contiguous(nullptr, t, {n}), dx), on(TensorView::contiguous(nullptr, t, {n}), dy),
                on(TensorView::scalar(nullptr, DType::f32), dl), o);
        auto h = dl.host();
        double got = value_of(h.data(), DType::f32);
        double exact = static_cast<double>(oracle_loss(x, y, t, n, Reduction::mean));
        // fp32 accumulation: per-thread chains of up to N / threads terms,
        // then trees; 1e-4 relative is ~1000 fp32 ulps, far above what the
        // deterministic path allows (<= 1 ulp) and well above these errors.
        EXPECT_NEAR(got, exact, 1e-4 * exact) << to_string(a) << " " << to_string(t) << " N=" << n;
      }
}

TEST_F(CudaTest, HostPointersOnTheCudaDeviceAreRefused) {
  std::vector<float> x(64, 1), y(64, 2);
  Dev dl(4);
  TensorView xv = TensorView::contiguous(x.data(), DType::f32, {64}, Device::cuda);
  TensorView yv = TensorView::contiguous(y.data(), DType::f32, {64}, Device::cuda);
  try {
    forward(xv, yv, on(TensorView::scalar(nullptr, DType::f32), dl));
    FAIL() << "host memory accepted as a CUDA view";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("input"), std::string::npos) << e.what();
  }
  auto h = dl.host();
  EXPECT_TRUE(std::all_of(h.begin(), h.end(), [](unsigned char c) { return c == 0xA5; }));
}

// ---- stress: many host threads, several streams, every operation ----------------

namespace {

struct StressCase {
  Which op;
  DType t;
  std::int64_t n;
  Reduction r;
  std::vector<unsigned char> x, y, g;
  Outputs want;
};

std::vector<StressCase> stress_cases() {
  const Which ops[] = {Which::forward, Which::backward, Which::fused};
  const std::int64_t sizes[] = {1000, 65537, (1 << 20) + 3, 3000017};
  const Reduction reds[] = {Reduction::mean, Reduction::sum, Reduction::none};
  std::vector<StressCase> cases;
  std::uint64_t seed = 900;
  for (int k = 0; k < 16; ++k) {
    StressCase c;
    c.op = ops[k % 3];
    c.t = kDTypes[k % 4];
    c.n = sizes[(k / 2) % 4];
    c.r = reds[(k / 4) % 3];
    c.x = random_tensor(c.t, c.n, kAllDists[k % 7], ++seed);
    c.y = random_tensor(c.t, c.n, Dist::normal, ++seed);
    c.g = upstream(c.t, c.n, c.r);
    c.want = run_op(Device::cpu, c.op, c.t, c.n, c.r, c.x, c.y, c.g);
    cases.push_back(std::move(c));
  }
  return cases;
}

// Device buffers for one case, and the call that runs it on `stream`.
struct StressRun {
  const StressCase& c;
  Dev dx, dy, dg, dl, dgi, dgt;
  explicit StressRun(const StressCase& sc)
      : c(sc), dx(sc.x), dy(sc.y), dg(sc.g), dl(sc.want.loss.size()), dgi(sc.n * es(sc.t)), dgt(sc.n * es(sc.t)) {}
  void launch(cudaStream_t stream) {
    Options o;
    o.reduction = c.r;
    o.stream = stream;
    const DType t = c.t;
    const std::int64_t n = c.n;
    auto vec = [&](const Dev& d) { return on(TensorView::contiguous(nullptr, t, {n}), d); };
    auto red = [&](const Dev& d) { return c.r == Reduction::none ? vec(d) : on(TensorView::scalar(nullptr, t), d); };
    if (c.op == Which::forward) forward(vec(dx), vec(dy), red(dl), o);
    if (c.op == Which::backward) backward(vec(dx), vec(dy), red(dg), vec(dgi), vec(dgt), o);
    if (c.op == Which::fused) forward_backward(vec(dx), vec(dy), red(dl), vec(dgi), vec(dgt), 0.625, o);
  }
  void poison_async(cudaStream_t s) {
    for (Dev* d : {&dl, &dgi, &dgt})
      if (cudaMemsetAsync(d->base, 0xA5, d->alloc, s) != cudaSuccess) throw Error("cudaMemsetAsync failed");
  }
  // Copies the outputs back on `s` and compares them; returns "" when equal.
  std::string check(cudaStream_t s) {
    Outputs got;
    got.loss.resize(dl.bytes);
    got.grad.resize(dgi.bytes);
    got.grad_t.resize(dgt.bytes);
    if (cudaMemcpyAsync(got.loss.data(), dl.ptr, dl.bytes, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
        cudaMemcpyAsync(got.grad.data(), dgi.ptr, dgi.bytes, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
        cudaMemcpyAsync(got.grad_t.data(), dgt.ptr, dgt.bytes, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess)
      return "CUDA error while copying back";
    if (c.op != Which::backward && got.loss != c.want.loss) return where(c.op, c.t, c.n, c.r) + ": loss differs";
    if (c.op != Which::forward && (got.grad != c.want.grad || got.grad_t != c.want.grad_t))
      return where(c.op, c.t, c.n, c.r) + ": gradient differs";
    return "";
  }
};

}  // namespace

TEST_F(CudaTest, SixteenThreadsOnFourStreamsGiveTheCpuBits) {
  const auto cases = stress_cases();
  std::vector<cudaStream_t> streams(4);
  for (auto& s : streams) CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // The streams are new, so the first calls (four threads per stream) also
  // race to create each stream's workspace.
  std::vector<std::unique_ptr<StressRun>> runs;
  for (const auto& c : cases) runs.emplace_back(new StressRun(c));
  std::mutex m;
  std::vector<std::string> failures;
  std::atomic<int> checked{0};
  auto worker = [&](int k) {
    cudaStream_t s = streams[k % 4];
    StressRun& run = *runs[k];
    try {
      for (int i = 0; i < 30; ++i) {
        run.poison_async(s);
        run.launch(s);
        std::string err = run.check(s);
        ++checked;
        if (!err.empty()) {
          std::lock_guard<std::mutex> lock(m);
          failures.push_back("thread " + std::to_string(k) + " iteration " + std::to_string(i) + ": " + err);
          return;
        }
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(m);
      failures.push_back("thread " + std::to_string(k) + ": " + e.what());
    }
  };
  std::vector<std::thread> threads;
  for (int k = 0; k < 16; ++k) threads.emplace_back(worker, k);
  for (auto& th : threads) th.join();
  for (auto s : streams) CUDA_OK(cudaStreamDestroy(s));
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures, first: " << failures.front();
  EXPECT_EQ(checked.load(), 16 * 30);
}

TEST_F(CudaTest, TenThousandGraphReplaysGiveTheCpuBits) {
  // forward (multi-block, ticketed), backward and fused, poisoned inside the graph.
  const auto all = stress_cases();
  std::vector<const StressCase*> picked;
  for (const auto& c : all)
    if (c.n <= 65537) picked.push_back(&c);
  ASSERT_GE(picked.size(), 3u);
  StressCase big;
  big.op = Which::forward;
  big.t = DType::f32;
  big.n = (1 << 20) + 3;
  big.r = Reduction::mean;
  big.x = random_tensor(big.t, big.n, Dist::normal, 990);
  big.y = random_tensor(big.t, big.n, Dist::normal, 991);
  big.want = run_op(Device::cpu, big.op, big.t, big.n, big.r, big.x, big.y, {});
  picked.push_back(&big);
  std::vector<std::unique_ptr<StressRun>> runs;
  for (const auto* c : picked) runs.emplace_back(new StressRun(*c));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (auto& r : runs) r->launch(s);  // workspaces exist before capture
  CUDA_OK(cudaStreamSynchronize(s));
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (auto& r : runs) {
    r->poison_async(s);
    r->launch(s);
  }
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  int replays = 0;
  for (int i = 0; i < 10000; ++i) {
    CUDA_OK(cudaGraphLaunch(exec, s));
    for (auto& r : runs) {
      std::string err = r->check(s);
      ASSERT_TRUE(err.empty()) << "replay " << i << ": " << err;
    }
    ++replays;
  }
  EXPECT_EQ(replays, 10000);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(s));
}

TEST_F(CudaTest, ScaleGradientGivesTheCpuBitsAndSkipsGOfOne) {
  for (DType t : kDTypes)
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{4099}, std::int64_t{3000017}})
      for (double g : {1.0, -0.375}) {
        const auto before = random_tensor(t, n, Dist::wide_range, 80 + n), before_t = random_tensor(t, n, Dist::normal, 81);
        std::vector<unsigned char> gbuf(es(t));
        store_exact(gbuf.data(), t, g);
        auto cpu = before, cpu_t = before_t;
        scale_gradient(TensorView::contiguous(cpu.data(), t, {n}), TensorView::scalar(gbuf.data(), t),
                       TensorView::contiguous(cpu_t.data(), t, {n}));
        Dev dgi(before), dgt(before_t), dg(gbuf);
        scale_gradient(on(TensorView::contiguous(nullptr, t, {n}), dgi), on(TensorView::scalar(nullptr, t), dg),
                       on(TensorView::contiguous(nullptr, t, {n}), dgt));
        EXPECT_TRUE(dgi.host() == cpu) << to_string(t) << " N=" << n << " g=" << g;
        EXPECT_TRUE(dgt.host() == cpu_t) << to_string(t) << " N=" << n << " g=" << g << " grad_target";
        if (g == 1.0) EXPECT_TRUE(cpu == before) << "g = 1 changed the gradient";
      }
  // A transposed (strided) view.
  const DType t = DType::f16;
  const std::int64_t rows = 1001, cols = 333, n = rows * cols;
  const auto before = random_tensor(t, n, Dist::normal, 82);
  float g = 3.0f;
  auto cpu = before;
  TensorView v = TensorView::contiguous(cpu.data(), t, {cols, rows});
  v.strides[0] = 1;
  v.strides[1] = cols;
  scale_gradient(v, TensorView::scalar(&g, DType::f32));
  Dev dgi(before), dg(std::vector<unsigned char>(reinterpret_cast<unsigned char*>(&g), reinterpret_cast<unsigned char*>(&g) + 4));
  scale_gradient(on(v, dgi), on(TensorView::scalar(nullptr, DType::f32), dg));
  EXPECT_TRUE(dgi.host() == cpu) << "strided f16 scale";
}

TEST_F(CudaTest, AStreamFirstUsedInsideACaptureWorks) {
  // PyTorch captures on a stream of its own: the first call on it is captured.
  const std::int64_t n = (1 << 20) + 3;
  auto x = random_tensor(DType::f32, n, Dist::normal, 95), y = random_tensor(DType::f32, n, Dist::normal, 96);
  auto want = run_op(Device::cpu, Which::forward, DType::f32, n, Reduction::mean, x, y, {});
  Dev dx(x), dy(y), dl(4);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Options o;
  o.stream = s;
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  forward(on(TensorView::contiguous(nullptr, DType::f32, {n}), dx), on(TensorView::contiguous(nullptr, DType::f32, {n}), dy),
          on(TensorView::scalar(nullptr, DType::f32), dl), o);
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 5; ++i) {
    dl.poison();
    CUDA_OK(cudaGraphLaunch(exec, s));
    CUDA_OK(cudaStreamSynchronize(s));
    ASSERT_TRUE(dl.host() == want.loss) << "replay " << i;
  }
  // An uncaptured call on the same stream afterwards also gives the CPU bits.
  dl.poison();
  forward(on(TensorView::contiguous(nullptr, DType::f32, {n}), dx), on(TensorView::contiguous(nullptr, DType::f32, {n}), dy),
          on(TensorView::scalar(nullptr, DType::f32), dl), o);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_TRUE(dl.host() == want.loss);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(s));
}
