// CUDA backend: docs/numerics.md on the GPU in one launch per call.
//
// mse_reduce_kernel (mean, sum; and forward_backward, which also writes the
// gradient): a persistent grid strides over the spec's chunks. Thread t of a
// block owns lanes [V t, V t + V) of every row (one 16-byte vector), so a
// chunk's lane tree is: within the thread, across the warp by shuffles, and
// across the 8 warps in shared memory. Chunk partials go to a workspace; the
// block that takes the last ticket (or, in a grid of one wave, the grid's
// last block) evaluates the chunk tree and writes the loss. For fp32 and
// 16-bit inputs partials are posted to slots that this block polls, so no
// block needs a fence and the partials are collected as they land (fp64
// partials take a fenced ticket). Which block computes a chunk never changes
// its value, so the bits depend on the data alone. The fused pass takes its
// chunks from a counter instead of striding, and its 16-bit form brings rows
// in through a ring of shared-memory slots (cp.async) instead of registers
// (kRing). Contiguous aligned tensors with many chunks go to lean kernels of
// the same walk without the other forms' branches: mse_stream_kernel (the
// forward pass) and mse_fused_stream_kernel (the fused pass).
//
// Small N: one chunk is one block of mse_few_chunks_kernel. 2 to 16 chunks
// of fp32 or 16-bit inputs go to mse_sliced_chunks_kernel, several blocks
// per chunk, each owning an aligned block of its lanes; fp64 ones, up to 8,
// to mse_few_chunks_kernel as one thread-block cluster of a block per chunk,
// with no workspace and no ticket.
//
// Every kernel is launched with programmatic dependent launch where the
// device has it, and orders itself after the previous kernel of its stream
// (enter_stream_order).
//
// mse_elementwise_kernel (none, backward, forward_backward with none): tiles
// of 16-byte vectors, grid-strided, or from 2^24 elements dealt from a counter.
//
// Contiguous inputs off 16-byte boundaries take the kShifted variants of
// both: each vector is cut from the two aligned words that cover it.
#include <algorithm>
#include <cstddef>
#include <limits>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include <cooperative_groups.h>

#include "cuda/cuda_common.cuh"

namespace mseloss::detail::cuda {

// ---- device info and workspace ------------------------------------------------------

// An attribute of the current device, queried once per device.
int current_device_attribute(cudaDeviceAttr attr) {
  static std::mutex m;
  static std::map<std::pair<int, int>, int> cache;
  int dev;
  MSELOSS_CUDA_CHECK(cudaGetDevice(&dev));
  const auto key = std::make_pair(static_cast<int>(attr), dev);
  std::lock_guard<std::mutex> lock(m);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  int value;
  MSELOSS_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, dev));
  return cache[key] = value;
}

int sm_count() { return current_device_attribute(cudaDevAttrMultiProcessorCount); }

// One workspace per (device, stream handle). A destroyed stream's handle can
// be reused by a new stream while the old one's last kernel still runs, and
// the two must not share a ticket: each entry remembers its stream's unique
// id, and a different id under the same handle gets a fresh workspace (the
// old one is kept, as it may still be in use). The id cannot be read during
// a capture (cudaStreamGetId is refused there), so a captured call uses the
// stream's entry as it is. A stream first seen inside a capture (PyTorch
// captures on a stream of its own) gets its workspace allocated in relaxed
// capture mode, and the zeroing of its workspace becomes a node of the graph.
// Each stream ever used keeps 96 KiB until the process ends; the cache frees
// it all at exit (errors ignored: the runtime may already be gone).
struct WorkspaceCache {
  struct Entry {
    Workspace* ws;
    unsigned long long stream_id;
  };
  std::mutex m;
  std::map<std::pair<int, cudaStream_t>, Entry> by_stream;
  std::vector<Workspace*> retired;
  ~WorkspaceCache() {
    for (auto& kv : by_stream) (void)cudaFree(kv.second.ws);
    for (Workspace* ws : retired) (void)cudaFree(ws);
  }
};

Workspace* workspace_for(cudaStream_t stream) {
  static WorkspaceCache cache;
  int dev;
  MSELOSS_CUDA_CHECK(cudaGetDevice(&dev));
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  MSELOSS_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  const bool capturing = capture != cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  if (!capturing) MSELOSS_CUDA_CHECK(cudaStreamGetId(stream, &id));
  std::lock_guard<std::mutex> lock(cache.m);
  const auto key = std::make_pair(dev, stream);
  auto it = cache.by_stream.find(key);
  if (it != cache.by_stream.end() && (capturing || it->second.stream_id == id)) return it->second.ws;
  Workspace* ws = nullptr;
  if (capturing) {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    MSELOSS_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    const cudaError_t e = cudaMalloc(&ws, sizeof(Workspace));
    MSELOSS_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    MSELOSS_CUDA_CHECK(e);
  } else {
    MSELOSS_CUDA_CHECK(cudaMalloc(&ws, sizeof(Workspace)));
  }
  // Captured, these run at each replay: every replay starts from a zeroed
  // workspace with every posted slot empty.
  MSELOSS_CUDA_CHECK(cudaMemsetAsync(ws, 0, sizeof(Workspace), stream));
  static_assert(kEmptySlot == ~0ull, "posted slots are emptied by a memset of 0xff bytes");
  MSELOSS_CUDA_CHECK(cudaMemsetAsync(ws->posted, 0xff, sizeof(ws->posted), stream));
  if (it != cache.by_stream.end()) {  // the handle now names another stream
    cache.retired.push_back(it->second.ws);
    it->second = {ws, id};
  } else {
    cache.by_stream[key] = {ws, id};
  }
  return ws;
}

bool available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// ---- device helpers -----------------------------------------------------------------

__device__ __forceinline__ double shfl_down(double v, int off) { return __shfl_down_sync(0xffffffffu, v, off); }
__device__ __forceinline__ DD shfl_down(DD v, int off) {
  return DD{__shfl_down_sync(0xffffffffu, v.hi, off), __shfl_down_sync(0xffffffffu, v.lo, off)};
}

__device__ __forceinline__ void put_partial(DD* slot, double v) { __stcg(&slot->hi, v); }
__device__ __forceinline__ void put_partial(DD* slot, DD v) {
  __stcg(&slot->hi, v.hi);
  __stcg(&slot->lo, v.lo);
}
template <class Acc>
__device__ __forceinline__ Acc get_partial(const DD* slot);
template <>
__device__ __forceinline__ double get_partial<double>(const DD* slot) { return __ldcg(&slot->hi); }
template <>
__device__ __forceinline__ DD get_partial<DD>(const DD* slot) { return DD{__ldcg(&slot->hi), __ldcg(&slot->lo)}; }

// Workspace::posted slots, written and read whole (8 bytes) and relaxed at
// GPU scope, so the polling block sees either the empty marker or the
// partial. A partial with the marker's bits (see kEmptySlot) is posted as
// the canonical NaN, so a slot once posted never reads as empty.
__device__ __forceinline__ void post_partial(double* slot, double v) {
  unsigned long long bits = __double_as_longlong(v);
  if (bits == kEmptySlot) bits = 0x7ff8000000000000ull;
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(slot), "l"(bits) : "memory");
}
__device__ __forceinline__ unsigned long long peek_posted(const double* slot) {
  unsigned long long bits;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(bits) : "l"(slot) : "memory");
  return bits;
}

// The lane tree of one warp (§2): lane 0 ends with the pairwise sum of the
// 32 values in lane order; other lanes hold partial garbage.
template <class Acc>
__device__ __forceinline__ Acc warp_tree(Acc v) {
#pragma unroll
  for (int off = 1; off < 32; off *= 2) v = acc_add(v, shfl_down(v, off));
  return v;
}

template <class T>
union Pack {
  static constexpr int V = 16 / sizeof(T);
  uint4 u;
  T e[V];
};

// The 16 bytes at byte `b` (0..15) of the 32 bytes lo:hi: a vector at a
// misaligned address, cut from the two aligned words that cover it.
__device__ __forceinline__ uint4 funnel16(const uint4& lo, const uint4& hi, int b) {
  const unsigned c[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  const int q = b >> 2;
  const unsigned sh = static_cast<unsigned>(b & 3) * 8;
  unsigned w[5];
#pragma unroll
  for (int j = 0; j < 5; ++j) w[j] = q == 0 ? c[j] : q == 1 ? c[j + 1] : q == 2 ? c[j + 2] : c[j + 3];
  return make_uint4(__funnelshift_r(w[0], w[1], sh), __funnelshift_r(w[1], w[2], sh), __funnelshift_r(w[2], w[3], sh),
                    __funnelshift_r(w[3], w[4], sh));
}

// The two aligned 16-byte words covering the vector of T at ptr + i, which
// lies `shift` bytes past a 16-byte boundary. The second word is the next
// thread's first: cached loads (__ldg), so L1 serves it and DRAM sees each
// byte once.
template <class T>
__device__ __forceinline__ void load_words(const void* ptr, std::int64_t i, int shift, uint4& lo, uint4& hi) {
  const uint4* w = reinterpret_cast<const uint4*>(reinterpret_cast<const char*>(static_cast<const T*>(ptr) + i) - shift);
  lo = __ldg(w);
  hi = __ldg(w + 1);
}

// Every load of a group in flight before its arithmetic. To save registers,
// ptxas may sink the later rows' loads of a group below the first rows'
// arithmetic, which halves the bytes a thread keeps in flight: forward `none`
// issued 4 of its 8 loads first and ran 7 % behind backward mean on the H200,
// whose code issued all 8 (session 29, docs/performance.md); issuing all 8
// made it 4-7.5 % faster there, at the copy of its bytes (session 30). Each
// word of x is made to depend on every loaded vector through `zero` (always
// 0, a kernel parameter the compiler cannot know), so no arithmetic on x
// starts before the last load is issued. `more` folds in further loads (a
// gradient's).
// CI reads the SASS to check it holds (tools/check_sass_loads.py).
template <int U>
__device__ __forceinline__ void issue_loads_first(uint4 (&x)[U], const uint4 (&y)[U], unsigned more, unsigned zero) {
  unsigned all = more;
#pragma unroll
  for (int u = 0; u < U; ++u) all |= x[u].x ^ y[u].x;
  all &= zero;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    x[u].x ^= all;
    x[u].y ^= all;
    x[u].z ^= all;
    x[u].w ^= all;
  }
}

// cp.async (sm_80+): a 16-byte copy from global to shared memory that holds
// no register while in flight, L2 only (.cg), marked evict-first in L2 as the
// __ldcs loads are. Groups complete in commit order; a thread that waits for
// its group sees its own copies without a barrier.
__device__ __forceinline__ std::uint64_t evict_first_policy() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ void cp_async16(uint4* smem, const void* gmem, std::uint64_t policy) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(s), "l"(gmem), "l"(policy) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// Calls at(v, offset) for the `cnt` (<= V) logical elements from index i of a
// strided view: the offset steps along the last dimension and is recomputed
// from the index only where a row ends.
template <int V, class At>
__device__ __forceinline__ void walk_strided(const KernelParams& p, const Strides& st, std::int64_t i, int cnt,
                                             At&& at) {
  const int last = p.rank - 1;
  std::int64_t off = offset_of(p, st, i);
  std::int64_t idx = i % p.shape[last];
#pragma unroll
  for (int v = 0; v < V; ++v) {
    if (v < cnt) {
      at(v, off);
      if (++idx < p.shape[last]) {
        off += st.s[last];
      } else {
        idx = 0;
        off = offset_of(p, st, i + v + 1);
      }
    }
  }
}

// Loads the `cnt` (<= V) logical elements from index i into c[0..cnt).
template <class T, bool kStrided>
__device__ __forceinline__ void load_elems(const KernelParams& p, const void* base, const Strides& st, std::int64_t i,
                                           int cnt, typename Traits<T>::Compute* c) {
  constexpr int V = Pack<T>::V;
  const T* ptr = static_cast<const T*>(base);
  if (!kStrided && p.vec && cnt == V) {
    Pack<T> pk;
    pk.u = __ldcs(reinterpret_cast<const uint4*>(ptr + i));  // streamed once: evict first
#pragma unroll
    for (int v = 0; v < V; ++v) c[v] = Traits<T>::load(pk.e[v]);
    return;
  }
  if (!kStrided) {
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (v < cnt) c[v] = Traits<T>::load(ptr[i + v]);
    return;
  }
  walk_strided<V>(p, st, i, cnt, [&](int v, std::int64_t off) { c[v] = Traits<T>::load(ptr[off]); });
}

template <class T, bool kStrided>
__device__ __forceinline__ void store_elems(const KernelParams& p, void* base, const Strides& st, std::int64_t i,
                                            int cnt, const typename Traits<T>::Compute* c) {
  constexpr int V = Pack<T>::V;
  T* ptr = static_cast<T*>(base);
  if (!kStrided && p.vec && cnt == V) {
    Pack<T> pk;
#pragma unroll
    for (int v = 0; v < V; ++v) pk.e[v] = Traits<T>::store(c[v]);
    __stcs(reinterpret_cast<uint4*>(ptr + i), pk.u);
    return;
  }
  if (!kStrided) {
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (v < cnt) ptr[i + v] = Traits<T>::store(c[v]);
    return;
  }
  walk_strided<V>(p, st, i, cnt, [&](int v, std::int64_t off) { ptr[off] = Traits<T>::store(c[v]); });
}

__device__ __forceinline__ double load_scalar(const void* ptr, DType t) {
  switch (t) {
    case DType::f32: return *static_cast<const float*>(ptr);
    case DType::f64: return *static_cast<const double*>(ptr);
    case DType::f16: return half_to_float(*static_cast<const Half*>(ptr));
    case DType::bf16: return bf16_to_float(*static_cast<const BFloat16*>(ptr));
  }
  return 0.0;
}

// ---- the reduction ------------------------------------------------------------------

// One whole vector of §1 terms folded into the thread's V lane sums, from the
// raw 16 bytes of x and y; with kGrad, its §7 gradient stored as one 16-byte
// vector at grad_input + i (and the negation at grad_target + i, if given).
// kStream: streaming stores, for the persistent kernels' large outputs.
template <class T, bool kGrad, bool kStream>
__device__ __forceinline__ void fold_vector(typename Traits<T>::Acc* acc, const uint4& xw, const uint4& yw,
                                            typename Traits<T>::Compute scale, void* grad_input, void* grad_target,
                                            std::int64_t i) {
  using C = typename Traits<T>::Compute;
  constexpr int V = Pack<T>::V;
  Pack<T> a, b, ga;
  a.u = xw;
  b.u = yw;
  C gv[V];
#pragma unroll
  for (int v = 0; v < V; ++v) {
    const C d = diff(Traits<T>::load(a.e[v]), Traits<T>::load(b.e[v]));
    acc[v] = acc_add_term(acc[v], d);
    if (kGrad) gv[v] = d * scale;
  }
  if constexpr (kGrad) {
    auto store16 = [](void* base, std::int64_t at, const uint4& w) {
      uint4* dst = reinterpret_cast<uint4*>(static_cast<T*>(base) + at);
      if constexpr (kStream) __stcs(dst, w);
      else *dst = w;
    };
#pragma unroll
    for (int v = 0; v < V; ++v) ga.e[v] = Traits<T>::store(gv[v]);
    store16(grad_input, i, ga.u);
    if (grad_target) {
#pragma unroll
      for (int v = 0; v < V; ++v) ga.e[v] = Traits<T>::store(-gv[v]);
      store16(grad_target, i, ga.u);
    }
  }
}

// grad_target = -grad_input (§7), exactly, from grad_input's stored fp16
// vector: a stored gradient's only NaN is the canonical one (§6), which stays
// itself; every other element has its sign bit flipped, two to a word.
__device__ __forceinline__ uint4 negated_half_vector(uint4 g) {
  auto negated = [](unsigned w) {
    unsigned flip = 0x80008000u;
    if ((w & 0xffffu) == kHalfNaN) flip &= 0xffff0000u;
    if ((w >> 16) == kHalfNaN) flip &= 0x0000ffffu;
    return w ^ flip;
  };
  return make_uint4(negated(g.x), negated(g.y), negated(g.z), negated(g.w));
}

// Where the workspace keeps chunk c's partial: transposed, so that thread t
// of the finish, which folds the aligned segment [t L, t L + L) of the K2
// leaves (L = K2 / kThreads), reads leaf t L + k from slot k kThreads + t and
// a warp's loads are coalesced. In leaf order, a warp's load touched 32 lines
// (16 partials of 16 bytes per thread): 32 L1 wavefronts per instruction,
// 4096 for the block at K = 4096, and the last block's finish took 2.9 us at
// 2^25 fp32 (H200), where the whole kernel reads for 63; transposed, the
// kernel went from 67.2 to 64.3-64.9 us. A caller's shard buffer (§9) stays
// in leaf order.
__device__ __forceinline__ int partial_slot(int c, int K2) {  // c < K2 <= kMaxChunks; powers of two
  const int L = K2 > kThreads ? K2 / kThreads : 1;
  return (c & (L - 1)) * kThreads + (c >> (__ffs(L) - 1));  // c when L = 1
}

// The pairwise tree (§2) of the M values in a, folded in place.
template <class Acc, int M>
__device__ __forceinline__ Acc pairwise_tree(Acc (&a)[M]) {
  static_assert(M > 0 && (M & (M - 1)) == 0, "M is a power of two");
#pragma unroll
  for (int s = 1; s < M; s *= 2)
#pragma unroll
    for (int k = 0; k + s < M; k += 2 * s) a[k] = acc_add(a[k], a[k + s]);
  return a[0];
}

// The pairwise tree of the aligned segment [t L, t L + L) of the K chunk
// partials, zeros past K, in the workspace's transposed slots or in leaf
// order. Every load is issued, unconditionally, before any is used (leaf
// order clamps indices past K; transposed slots stay below K2 <= kMaxChunks).
template <class Acc, int L>
__device__ __forceinline__ Acc partials_tree(const DD* partials, std::int64_t K, int t, bool transposed) {
  const std::int64_t first = static_cast<std::int64_t>(t) * L;
  Acc a[L];
#pragma unroll
  for (int k = 0; k < L; ++k) {
    const std::int64_t i = first + k;
    a[k] = get_partial<Acc>(&partials[transposed ? k * kThreads + t : i < K ? i : K - 1]);
  }
#pragma unroll
  for (int k = 0; k < L; ++k)
    if (first + k >= K) a[k] = acc_zero<Acc>();
  return pairwise_tree(a);
}

// partials_tree over the posted slots, for the block that finishes while the
// last chunks may still be in flight: thread t's segment of L leaves
// [t L, t L + L), from slots k kThreads + t. All L loads (8 bytes each) are
// issued before any is checked, and a slot still empty is loaded again until
// its partial has landed. Then the thread empties the slots it read, for the
// next launch. Leaves past K are zero and never read.
template <int L>
__device__ __forceinline__ double posted_tree(double* slots, std::int64_t K, int t) {
  const std::int64_t first = static_cast<std::int64_t>(t) * L;
  unsigned long long bits[L];
#pragma unroll
  for (int k = 0; k < L; ++k) bits[k] = first + k < K ? peek_posted(&slots[k * kThreads + t]) : 0ull;  // 0: +0.0
  for (;;) {
    bool any = false;
#pragma unroll
    for (int k = 0; k < L; ++k) any |= bits[k] == kEmptySlot;
    if (!any) break;
#pragma unroll
    for (int k = 0; k < L; ++k)
      if (bits[k] == kEmptySlot) bits[k] = peek_posted(&slots[k * kThreads + t]);
  }
  double a[L];
#pragma unroll
  for (int k = 0; k < L; ++k) {
    a[k] = __longlong_as_double(bits[k]);
    if (first + k < K) __stcg(reinterpret_cast<unsigned long long*>(&slots[k * kThreads + t]), kEmptySlot);
  }
  return pairwise_tree(a);
}

// f(std::integral_constant<int, L>{}) for L = K2 / kThreads, the length of
// each thread's segment of the chunk tree (1 when K2 <= kThreads; at most 16,
// as K2 <= kMaxChunks = 4096).
template <class F>
__device__ __forceinline__ auto with_segment_length(std::int64_t K2, F&& f) {
  switch (K2 > kThreads ? K2 / kThreads : 1) {
    case 16: return f(std::integral_constant<int, 16>{});
    case 8: return f(std::integral_constant<int, 8>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 2: return f(std::integral_constant<int, 2>{});
    default: return f(std::integral_constant<int, 1>{});
  }
}

// Resident blocks per SM the contiguous reduction is compiled for (strided
// views are not capped). Uncapped, fp16 took 66 registers, so 3 blocks fit
// where bf16 (64) had 4. 4 blocks = 64 registers for 2- and 4-byte forward
// passes; fp64 (dd accumulators) and the fp32 fused pass fit 80, 3 blocks.
//
// kRing (the 16-bit fused pass): rows arrive through a ring of kRingStages
// slots per thread in shared memory, filled by cp.async. Holding its rows in
// registers, that pass needed 128 of them, so 2 blocks per SM and 64 KiB in
// flight per SM, and it ran at 0.86-0.88 of a copy (H200, 2^25 and 2^26;
// capped at 80 or 64 registers it spilled, and fewer rows in flight did no
// better). With the ring it fits 80 registers and 64 KiB of shared memory
// per block: 3 blocks and 192 KiB in flight per SM (H200, bf16 at 2^26: 0.90
// -> 0.97 of a copy). The forward passes and the fp32 fused pass keep their
// registers: in a trial the ring made the forward slower (0.84 of the read
// probe against 0.97) and gave the fp32 fused pass nothing (docs/
// performance.md, session 14). The ring serves the 16-bit fused pass of
// aligned tensors with up to 3 chunks per SM, and of shards; with more
// chunks, mse_fused_stream_kernel takes it (launch_reduce).
//
// kRows is the number of rows of 16-byte loads a thread has in flight. 4 for
// a persistent grid; 8 (a whole chunk of R = 8 rows in one round, 128
// registers, 2 blocks per SM) when there are no more chunks than SMs, so each
// block reads its one chunk in a single round trip to memory instead of two.
// The ring kernels keep kRingStages rows in flight whatever kRows says; for
// them kRows = 8 marks the single-wave form (no more chunks than SMs), which
// finishes as the 8-row forward kernels do (posted partials, a fixed
// finishing block: see mse_reduce_kernel).
//
// kShifted: contiguous x and y off 16-byte boundaries (a tensor sliced at an
// odd offset), each vector cut from two aligned words: twice the load
// registers, so 2 blocks per SM.
//
// The fused pass (kGrad) deals chunks out from a counter in the workspace
// instead of grid-stride: with 3 blocks per SM (fp32) a static deal gives
// blocks 10 or 11 chunks at 2^25, and the blocks that store gradients while
// others idle leave the last round short of bandwidth (H200: fp32 fused mean
// 0.90 -> 0.96 of a copy at 2^25 and 2^26). The forward pass gained nothing
// from it, and its 64-register cap has no room for the counter. launch_reduce
// turns it on only when there are more chunks than blocks.
constexpr int kRingStages = 8;                               // rows in flight per thread
constexpr int kRingBytes = kRingStages * 2 * kThreads * 16;  // x and y: 64 KiB per block

template <class T, bool kStrided, bool kGrad, int kRows, bool kShifted, bool kRing>
constexpr int kReduceBlocksPerSm = kStrided                      ? 1
                                   : kRing                        ? 3
                                   : kRows > 4 || kShifted        ? 2
                                   : sizeof(T) == 8               ? 3
                                   : !kGrad                       ? 4
                                   : sizeof(T) == 4               ? 3
                                                                  : 1;

template <class T, class OutT, bool kStrided, bool kGrad, int kRows, bool kShifted = false, bool kRing = false>
__global__ void __launch_bounds__(kThreads, (kReduceBlocksPerSm<T, kStrided, kGrad, kRows, kShifted, kRing>))
    mse_reduce_kernel(const KernelParams p) {
  using C = typename Traits<T>::Compute;
  using Acc = typename Traits<T>::Acc;
  constexpr int V = Pack<T>::V;
  constexpr int U = kRows;
  __shared__ Acc warp_part[kBatch][kWarps];
  __shared__ Acc chunk_part[kBatch];  // single-block launches keep every partial here
  __shared__ bool is_last;
  constexpr bool kDealt = kGrad && !kStrided;  // chunks from the workspace's counter (see above)
  __shared__ std::int64_t batch_chunk[kDealt ? kBatch : 1];  // the chunk of each batch entry
  __shared__ std::int64_t next_chunk[2];  // double-buffered: one barrier per chunk
  int parity = 0;
  enter_stream_order();

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const Geometry g = p.geo;
  // One block and few chunks: everything stays in shared memory, no ticket.
  const bool single = p.stage == Stage::whole && gridDim.x == 1 && g.chunks <= kBatch;
  const bool dealt = kDealt && p.deal_chunks && !single;  // single: no ticket, so nothing would reset the counter
  // Partials posted to slots that the finishing block polls, collecting them
  // as they land (see the finish below), so no block needs a fence: fp32 and
  // 16-bit inputs. fp64 inputs take the fenced ticket: their double-double
  // partials do not fit one 8-byte slot. Posting shortened the persistent
  // 16-bit kernels once the chunk index below was 32-bit (H200, forward at
  // 2^25: bf16 36.3 -> 35.2 us, fp16 36.2 -> 35.1); with a 64-bit index, the
  // posted bf16 forward kernel spilled in its row loop under its 64-register
  // cap (ncu at 2^26: 16.8 MB of local loads and stores, 68.3 -> 73.6 us).
  //
  // Which block finishes: in the single-wave forms, the grid's last block,
  // fixed in advance: it folds its chunk and polls the slots, with no ticket
  // to take (H200, graph-replayed at 2^20: fp32 forward 5.12 -> 4.84 us,
  // fused 6.20 -> 5.91; bf16 forward 5.10 -> 4.21, fused 5.61 -> 4.90).
  // Elsewhere, the block that takes the last ticket: a fixed finisher
  // measured slower in the persistent grids (fp32 forward at 2^25: 0.97 ->
  // 0.955 of the read probe). docs/reliability.md says why the fixed
  // finisher's polling cannot wait forever.
  constexpr bool kSingleWave = kRows == 8 && !kStrided && !kShifted;
  constexpr bool kPostable = !std::is_same<T, double>::value;
  const bool posted = kPostable && !single && p.stage == Stage::whole;
  if (tid == 0) is_last = kSingleWave && posted && !dealt && blockIdx.x == gridDim.x - 1;  // else the ticket decides
  C scale = C(0);
  if (kGrad) scale = static_cast<C>(p.host_scale64);
  std::uint64_t policy = 0;
  if constexpr (kRing) policy = evict_first_policy();

  int nb = 0;                   // chunks in the current batch
  int batch_base = 0;          // batch entry j is chunk blockIdx.x + (batch_base + j) * gridDim.x
  auto flush = [&]() {
    __syncthreads();
    if (tid < nb) {
      const Acc* w = warp_part[tid];
      Acc v = acc_add(acc_add(acc_add(w[0], w[1]), acc_add(w[2], w[3])),
                      acc_add(acc_add(w[4], w[5]), acc_add(w[6], w[7])));
      const std::int64_t c = kDealt ? batch_chunk[tid] : blockIdx.x + (batch_base + tid) * gridDim.x;
      if (single) {
        chunk_part[c] = v;
      } else {
        const std::int64_t slot = p.stage == Stage::whole ? partial_slot(static_cast<int>(c), static_cast<int>(g.chunks_pow2))
                                                          : p.chunk_base + c;
        if constexpr (kPostable) {
          if (posted) post_partial(&p.ws->posted[slot], v);
          else put_partial(&p.partials[slot], v);
        } else {
          put_partial(&p.partials[slot], v);
        }
      }
    }
    __syncthreads();
    batch_base += nb;
    nb = 0;
  };

  // The chunks this call walks: all K for Stage::whole, a shard's for
  // Stage::partials (local indices; chunk_base places their partials), none
  // for Stage::finish. Fewer than kMaxChunks: a 32-bit index (see kPostable).
  for (int c = blockIdx.x; c < static_cast<int>(p.local_chunks);) {
    // Every block starts at chunk blockIdx.x; the counter deals chunks from
    // gridDim.x on. Asked now, used after this chunk: its latency is hidden.
    unsigned dealt_next = 0;
    if (kDealt && tid == 0) {
      if (dealt) dealt_next = atomicAdd(&p.ws->next_chunk, 1u);
      batch_chunk[nb] = c;
    }
    Acc acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = acc_zero<Acc>();
    const std::int64_t start = c * g.chunk;
    const std::int64_t end = start + g.chunk < p.n ? start + g.chunk : p.n;
    // A chunk holds fewer than 2^31 elements (N / kMaxChunks rounded up to
    // a power of two), and lanes is a power of two: 32-bit math and a shift,
    // not a 64-bit division, ahead of the first load.
    const int lanes = static_cast<int>(g.lanes), lane_shift = __ffs(lanes) - 1;
    const int rows = (static_cast<int>(end - start) + lanes - 1) >> lane_shift;
    // The (at most V) elements of this thread's row at index i < end, element by element.
    auto row_at_a_time = [&](std::int64_t i) {
      const std::int64_t left = end - i;
      const int cnt = left >= V ? V : static_cast<int>(left);
      C xv[V], yv[V], gv[V];
      load_elems<T, kStrided>(p, p.x, p.xs, i, cnt, xv);
      load_elems<T, kStrided>(p, p.y, p.ys, i, cnt, yv);
#pragma unroll
      for (int v = 0; v < V; ++v) {
        if (v < cnt) {
          const C d = diff(xv[v], yv[v]);
          acc[v] = acc_add_term(acc[v], d);
          if (kGrad) gv[v] = d * scale;
        }
      }
      if (kGrad) {
        store_elems<T, kStrided>(p, p.grad_input, p.gis, i, cnt, gv);
        if (p.grad_target) {
#pragma unroll
          for (int v = 0; v < V; ++v) gv[v] = -gv[v];
          store_elems<T, kStrided>(p, p.grad_target, p.gts, i, cnt, gv);
        }
      }
    };
    if constexpr (kRing) {
      // Contiguous and aligned (launch_reduce): this thread's rows of whole
      // vectors, [0, nwhole), through a kRingStages-deep ring of its own slots
      // in shared memory filled by cp.async, so the bytes in flight cost no
      // registers; then its one partial row, if any, element by element.
      const int e = static_cast<int>(end - start) - tid * V - V;
      const int nwhole = e < 0 ? 0 : min(rows, (e >> lane_shift) + 1);
      const T* xp = static_cast<const T*>(p.x) + start + tid * V;
      const T* yp = static_cast<const T*>(p.y) + start + tid * V;
      extern __shared__ uint4 ring[];  // [kRingStages][2][kThreads]
      auto slot = [&](int s, int a) { return &ring[(2 * s + a) * kThreads + tid]; };
#pragma unroll
      for (int s = 0; s < kRingStages; ++s) {
        if (s < nwhole) {
          cp_async16(slot(s, 0), xp + s * lanes, policy);
          cp_async16(slot(s, 1), yp + s * lanes, policy);
        }
        cp_async_commit();
      }
      int s = 0;
#pragma unroll 1
      for (int r = 0; r < nwhole; ++r) {
        cp_async_wait<kRingStages - 1>();  // row r has landed
        const uint4 xw = *slot(s, 0), yw = *slot(s, 1);
        fold_vector<T, kGrad, true>(acc, xw, yw, scale, p.grad_input, p.grad_target, start + r * lanes + tid * V);
        // Refill the slot with row r + kRingStages. Issued after the fold has
        // used the slot's values, so the copy cannot overwrite them first.
        if (r + kRingStages < nwhole) {
          cp_async16(slot(s, 0), xp + (r + kRingStages) * lanes, policy);
          cp_async16(slot(s, 1), yp + (r + kRingStages) * lanes, policy);
        }
        cp_async_commit();
        s = s + 1 == kRingStages ? 0 : s + 1;
      }
      const std::int64_t i = start + static_cast<std::int64_t>(nwhole) * lanes + tid * V;
      if (nwhole < rows && i < end) row_at_a_time(i);
    } else {  // braced: after an unbraced `else for` here, nvcc dropped the lane-tree loop below from the ring kernels
      for (int r0 = 0; r0 < rows; r0 += U) {
        const std::int64_t i_base = start + r0 * g.lanes + tid * V;
        // One row's whole vector at index i, from its raw 16 bytes (the
        // gradients are 16-byte aligned on both vector paths).
        auto vector_row = [&](const uint4& xw, const uint4& yw, std::int64_t i) {
          fold_vector<T, kGrad, true>(acc, xw, yw, scale, p.grad_input, p.grad_target, i);
        };
        if constexpr (kShifted) {
          // U whole vectors, each from two aligned words. Not the tensor's
          // first vector (its first word would start before x) nor its last
          // (the second word would end past it): those go row by row below.
          const std::int64_t i_last = i_base + (U - 1) * g.lanes;
          if (i_base >= V && i_last + V <= end && i_last + 2 * V <= p.n) {
            uint4 xl[U], xh[U], yl[U], yh[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
              load_words<T>(p.x, i_base + u * g.lanes, p.x_shift, xl[u], xh[u]);
              load_words<T>(p.y, i_base + u * g.lanes, p.y_shift, yl[u], yh[u]);
            }
#pragma unroll
            for (int u = 0; u < U; ++u)
              vector_row(funnel16(xl[u], xh[u], p.x_shift), funnel16(yl[u], yh[u], p.y_shift), i_base + u * g.lanes);
            continue;
          }
        }
        if (!kStrided && p.vec && i_base + (U - 1) * g.lanes + V <= end) {
          // The common case: U whole vectors, 16-byte loads all issued before
          // any use, kept raw (4 registers each) until they are consumed.
          uint4 xr[U], yr[U];
#pragma unroll
          for (int u = 0; u < U; ++u) {
            xr[u] = __ldcs(reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + i_base + u * g.lanes));
            yr[u] = __ldcs(reinterpret_cast<const uint4*>(static_cast<const T*>(p.y) + i_base + u * g.lanes));
          }
#pragma unroll
          for (int u = 0; u < U; ++u) vector_row(xr[u], yr[u], i_base + u * g.lanes);
          continue;
        }
        int u_first = 0;  // rows before it were taken below
        if constexpr (U > 4 && !kStrided && !kShifted) {
          // A partial chunk of one-chunk-per-block launches (small N): its
          // rows of whole vectors with all loads in flight at once, as above.
          // The rest (the tensor's last partial vector) goes row by row below.
          const std::int64_t left = end - i_base;
          const int nu = left >= V ? static_cast<int>((left - V) >> lane_shift) + 1 : 0;  // < U here
          if (p.vec && nu > 1) {  // one row: the row-at-a-time path loads it as fast
            uint4 xr[U - 1], yr[U - 1];
#pragma unroll
            for (int u = 0; u < U - 1; ++u) {  // rows past nu load row nu - 1 again (unused; no branches)
              const std::int64_t i = i_base + (u < nu ? u : nu - 1) * g.lanes;
              xr[u] = __ldcs(reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + i));
              yr[u] = __ldcs(reinterpret_cast<const uint4*>(static_cast<const T*>(p.y) + i));
            }
#pragma unroll
            for (int u = 0; u < U - 1; ++u)
              if (u < nu) vector_row(xr[u], yr[u], i_base + u * g.lanes);
            u_first = nu;
          }
        }
        // Tails, strided views, misaligned pointers: one row at a time (few
        // registers, so the fast path above keeps its occupancy).
#pragma unroll 1
        for (int u = u_first; u < U; ++u) {
          const std::int64_t i = i_base + u * g.lanes;
          if (i >= end) break;  // so are the later rows: a one-row chunk costs one iteration
          row_at_a_time(i);
        }
      }
    }
    // Posted partials: the block takes its ticket once its last chunk's rows
    // are folded, so the block with the last ticket knows that every other
    // block has folded its last rows, and can collect the partials as they
    // land. Taken here, not as the chunk starts: held across the chunk's
    // loads, the ticket's register made the 64-register forward passes spill.
    // Its round trip overlaps the lane tree. Dealt chunks need no ticket: the
    // dealer's K requests are one per chunk, and the block whose request came
    // back K - 1 asked last (below).
    const bool last_strided = !kSingleWave && posted && !dealt && c + gridDim.x >= p.local_chunks;
    unsigned ticket = 0;
    if (last_strided && tid == 0) ticket = atomicAdd(&p.ws->ticket, 1u);
    // §2 lane tree: the thread's V adjacent lanes, then the warp, then (in flush) the warps.
    Acc wv = warp_tree(pairwise_tree(acc));
    if (lane == 0) warp_part[nb][warp] = wv;
    if (posted && tid == 0) {  // read by all after the next flush's barrier
      if (last_strided) is_last = ticket == gridDim.x - 1;
      if (dealt && gridDim.x + dealt_next >= p.local_chunks) is_last = dealt_next == p.local_chunks - 1;
    }
    if (kDealt && dealt) {
      if (tid == 0) next_chunk[parity] = static_cast<std::int64_t>(gridDim.x) + dealt_next;
      __syncthreads();
      c = next_chunk[parity];
      parity ^= 1;
    } else {
      c += gridDim.x;
    }
    if (++nb == kBatch) flush();
  }
  if (nb > 0) flush();
  if (p.stage == Stage::partials) return;  // the caller sums the shards' partials and finishes

  using OC = typename Traits<OutT>::Compute;
  if (single && g.chunks <= 1) {  // the chunk tree of one leaf is that leaf (flush ended with a barrier)
    if (tid == 0)
      *static_cast<OutT*>(p.out) = Traits<OutT>::store(
          static_cast<OC>(finish(g.chunks == 1 ? chunk_part[0] : acc_zero<Acc>(), p.global_n, p.mean)));
    return;
  }
  if (posted) {
    // A block with no chunk (a grid of whole waves per SM can exceed K)
    // takes its ticket now: the finisher is the block with the last of all
    // gridDim.x tickets.
    if (!kSingleWave && tid == 0 && blockIdx.x >= p.local_chunks) is_last = atomicAdd(&p.ws->ticket, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!is_last) return;
  } else if (!single && p.stage == Stage::whole) {
    __threadfence();  // this block's partials are visible before its ticket
    __syncthreads();
    if (tid == 0) is_last = atomicAdd(&p.ws->ticket, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!is_last) return;
    __threadfence();
  }

  // §2 chunk tree over K2 partials (zeros past K): thread t folds the aligned
  // segment [t L, t L + L), then the block folds the 256 segment values.
  const std::int64_t K = g.chunks, K2 = g.chunks_pow2;
  const bool whole = p.stage == Stage::whole;  // the workspace's transposed slots; a shard buffer's leaf order
  Acc v;
  if (single || K == 0) {
    v = tid < K ? chunk_part[tid] : acc_zero<Acc>();  // K <= kBatch: one leaf per thread
  } else if (posted) {
    if constexpr (kPostable) {
      double* slots = p.ws->posted;
      v = with_segment_length(K2, [&](auto L) { return posted_tree<decltype(L)::value>(slots, K, tid); });
    }
  } else {
    v = with_segment_length(K2, [&](auto L) { return partials_tree<Acc, decltype(L)::value>(p.partials, K, tid, whole); });
  }
  v = warp_tree(v);
  if (lane == 0) warp_part[0][warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarps ? warp_part[0][lane] : acc_zero<Acc>();
#pragma unroll
    for (int off = 1; off < kWarps; off *= 2) v = acc_add(v, shfl_down(v, off));
    if (lane == 0) {
      *static_cast<OutT*>(p.out) = Traits<OutT>::store(static_cast<OC>(finish(v, p.global_n, p.mean)));
      if (!single && p.stage == Stage::whole) {
        p.ws->ticket = 0;  // every block has taken its ticket (and its last chunk): reset for the next launch
        p.ws->next_chunk = 0;
      }
    }
  }
}

// The persistent forward pass over a contiguous, 16-byte-aligned tensor of
// fp32 or 16-bit inputs with more chunks than SMs: mse_reduce_kernel<T, OutT,
// false, false, 4>'s walk, trees, posted partials, ticket and finish, without
// the branches of its other forms (strided, shifted, dealt, single-block,
// shard stages, the ring). Whole chunks go as rows of 16-byte vectors, U = 4
// rows of x and y in flight per thread; the tensor's last chunk, if cut
// short, row by row. Same lanes, same order: the same bits.
//
// Why a kernel of its own: a stand-alone kernel of this shape ran 0.2-0.9 us
// faster than mse_reduce_kernel's forward form at 2^25-2^26, in the same
// runs, and this one recovered 0.4-0.6 us of it (H200, event-timed: fp32 2^25
// 64.99 -> 64.61 us, bf16 2^25 35.68-35.87 -> 35.23, fp32 2^26 123.7 ->
// 123.2, bf16 2^26 65.4-65.6 -> 64.8-65.0; docs/performance.md, session 22).
// Its flush and finish are mse_reduce_kernel's, written out again: shared
// through a helper, they changed the machine code of 14 forms of
// mse_reduce_kernel that this kernel does not replace (the single-wave and
// fp64 ones; in one variant the bf16 and fp16 forward forms spilled), where
// now their code is the previous build's, byte for byte. The row loop
// addresses x and y from the parameter bank: with the two row pointers held
// in registers, the bf16 form spilled 8 bytes under its 64-register cap.
template <class T, class OutT>
__global__ void __launch_bounds__(kThreads, (kReduceBlocksPerSm<T, false, false, 4, false, false>))
    mse_stream_kernel(const KernelParams p) {
  using C = typename Traits<T>::Compute;
  using Acc = typename Traits<T>::Acc;
  using OC = typename Traits<OutT>::Compute;
  static_assert(std::is_same<Acc, double>::value, "partials are posted to 8-byte slots");
  constexpr int V = Pack<T>::V;
  constexpr int kLanes = kRowBytes / static_cast<int>(sizeof(T));  // W (§2)
  constexpr int U = 4;
  __shared__ Acc warp_part[kBatch][kWarps];
  __shared__ bool is_last;
  enter_stream_order();

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int K = static_cast<int>(p.local_chunks);
  if (tid == 0) is_last = false;

  int nb = 0, batch_base = 0;  // batch entry j is chunk blockIdx.x + (batch_base + j) * gridDim.x
  auto flush = [&]() {
    __syncthreads();
    if (tid < nb) {
      const Acc* w = warp_part[tid];
      const Acc v = acc_add(acc_add(acc_add(w[0], w[1]), acc_add(w[2], w[3])),
                            acc_add(acc_add(w[4], w[5]), acc_add(w[6], w[7])));
      const int c = blockIdx.x + (batch_base + tid) * gridDim.x;
      post_partial(&p.ws->posted[partial_slot(c, static_cast<int>(p.geo.chunks_pow2))], v);
    }
    __syncthreads();
    batch_base += nb;
    nb = 0;
  };

  for (int c = blockIdx.x; c < K; c += gridDim.x) {
    Acc acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = acc_zero<Acc>();
    const std::int64_t start = static_cast<std::int64_t>(c) * p.geo.chunk;
    if (start + p.geo.chunk <= p.n) {
      for (int r0 = 0; r0 < p.geo.rows; r0 += U) {
        uint4 xr[U], yr[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          xr[u] = __ldcs(reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + start + (r0 + u) * kLanes + tid * V));
          yr[u] = __ldcs(reinterpret_cast<const uint4*>(static_cast<const T*>(p.y) + start + (r0 + u) * kLanes + tid * V));
        }
#pragma unroll
        for (int u = 0; u < U; ++u) fold_vector<T, false, true>(acc, xr[u], yr[u], C(0), nullptr, nullptr, 0);
      }
    } else {
#pragma unroll 1
      for (int r = 0; r < p.geo.rows; ++r) {
        const std::int64_t i = start + static_cast<std::int64_t>(r) * kLanes + tid * V;
        if (i >= p.n) break;  // so are the later rows
        const int cnt = p.n - i >= V ? V : static_cast<int>(p.n - i);
        C xv[V], yv[V];
        load_elems<T, false>(p, p.x, p.xs, i, cnt, xv);
        load_elems<T, false>(p, p.y, p.ys, i, cnt, yv);
#pragma unroll
        for (int v = 0; v < V; ++v)
          if (v < cnt) acc[v] = acc_add_term(acc[v], diff(xv[v], yv[v]));
      }
    }
    // The ticket once the block's last chunk is folded; its round trip
    // overlaps the lane tree (as in mse_reduce_kernel).
    const bool last = c + static_cast<int>(gridDim.x) >= K;
    unsigned ticket = 0;
    if (last && tid == 0) ticket = atomicAdd(&p.ws->ticket, 1u);
    const Acc wv = warp_tree(pairwise_tree(acc));
    if (lane == 0) warp_part[nb][warp] = wv;
    if (last && tid == 0) is_last = ticket == gridDim.x - 1;
    if (++nb == kBatch) flush();
  }
  if (nb > 0) flush();
  if (tid == 0 && static_cast<int>(blockIdx.x) >= K) is_last = atomicAdd(&p.ws->ticket, 1u) == gridDim.x - 1;  // no chunk
  __syncthreads();
  if (!is_last) return;

  Acc v = with_segment_length(p.geo.chunks_pow2, [&](auto L) { return posted_tree<decltype(L)::value>(p.ws->posted, K, tid); });
  v = warp_tree(v);
  if (lane == 0) warp_part[0][warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarps ? warp_part[0][lane] : acc_zero<Acc>();
#pragma unroll
    for (int off = 1; off < kWarps; off *= 2) v = acc_add(v, shfl_down(v, off));
    if (lane == 0) {
      *static_cast<OutT*>(p.out) = Traits<OutT>::store(static_cast<OC>(finish(v, p.global_n, p.mean)));
      p.ws->ticket = 0;  // every block has taken its ticket: reset for the next launch
    }
  }
}

// The fused pass (forward_backward, mean or sum) over a contiguous,
// 16-byte-aligned tensor of fp32 or 16-bit inputs with more chunks than
// blocks (launch_reduce says for which K): chunks dealt from the workspace's
// counter, kFusedRows rows of x and y in flight per thread in registers, the
// gradient stored as each row is folded, kFusedBlocksPerSm blocks per SM.
// Same lanes, rows, trees and posted partials as mse_reduce_kernel's fused
// form: the same bits.
//
// Why a kernel of its own: mse_reduce_kernel's fused form (3 blocks per SM;
// for 16-bit inputs, rows through the shared-memory ring) carries the
// branches of its other forms. Against it (docs/performance.md, session 28),
// where both deal chunks (more chunks than its 3 blocks per SM): fp32 2.5-9 %
// faster at 448-640 chunks (H100) and 1-5 % at 2^22-2^28 (H200: 0.964-0.986
// of a copy of its bytes from 2^24); 16-bit 3-16 % faster at 448-660 chunks.
// From 1024 chunks the 16-bit form was 3-5 % slower than the ring at
// 2^25-2^26 (H200, session 28) while the compiler held half its loads back;
// with every load issued first (issue_loads_first) it is 1.1-5.7 % faster
// than the ring at 2^24-2^28 (H200, session 37; H100 0.8-3.5 %, sessions 30
// and 32), so launch_reduce gives it every chunk count above the reduce
// kernel's grid. With no more chunks than the reduce kernel's blocks, each
// chunk has a block of its own there, and this kernel's 2 blocks per SM were
// 3-10 % slower (H200, fp32 272-296 chunks, bf16 and fp16 396). 4 rows in
// flight and 2 blocks per SM: 8 rows were the same for fp32 and, for 16-bit
// inputs, spill and were slower at 512 chunks (though 2 % faster than the
// ring at 2^25-2^26, 3 % slower at 2^28); 3 blocks per SM were 1-4 % slower
// for fp32, and 2 rows at 3 blocks slower still for 16-bit.
//
// Its walk, flush and finish follow mse_stream_kernel's and are written out
// again for the reason given there: helpers shared with mse_reduce_kernel
// changed the machine code of the forms this kernel does not replace.
constexpr int kFusedRows = 4;
constexpr int kFusedBlocksPerSm = 2;

template <class T, class OutT>
__global__ void __launch_bounds__(kThreads, kFusedBlocksPerSm) mse_fused_stream_kernel(const KernelParams p) {
  using C = typename Traits<T>::Compute;
  using Acc = typename Traits<T>::Acc;
  using OC = typename Traits<OutT>::Compute;
  static_assert(std::is_same<Acc, double>::value, "partials are posted to 8-byte slots");
  constexpr int V = Pack<T>::V;
  constexpr int kLanes = kRowBytes / static_cast<int>(sizeof(T));  // W (§2)
  constexpr int U = kFusedRows;  // divides R: R is a power of two >= kMinRows
  static_assert(U <= kMinRows && (kMinRows % U) == 0, "whole rounds of rows per chunk");
  __shared__ Acc warp_part[kBatch][kWarps];
  __shared__ int batch_chunk[kBatch];  // the chunk of each batch entry
  __shared__ int next_chunk[2];        // double-buffered: one barrier per chunk
  __shared__ bool is_last;
  enter_stream_order();

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int K = static_cast<int>(p.local_chunks);
  const C scale = static_cast<C>(p.host_scale64);
  if (tid == 0) is_last = false;

  int nb = 0, parity = 0;
  auto flush = [&]() {
    __syncthreads();
    if (tid < nb) {
      const Acc* w = warp_part[tid];
      const Acc v = acc_add(acc_add(acc_add(w[0], w[1]), acc_add(w[2], w[3])),
                            acc_add(acc_add(w[4], w[5]), acc_add(w[6], w[7])));
      post_partial(&p.ws->posted[partial_slot(batch_chunk[tid], static_cast<int>(p.geo.chunks_pow2))], v);
    }
    __syncthreads();
    nb = 0;
  };

  // Every block starts at chunk blockIdx.x; the counter deals chunks from
  // gridDim.x on, one request per chunk processed, asked as the chunk starts
  // and used after it (its latency is hidden). The K requests return 0..K-1;
  // the block whose request returned K - 1 asked last, so every chunk has
  // been taken: it finishes, polling the posted slots, and resets the counter.
  for (int c = blockIdx.x; c < K;) {
    unsigned dealt_next = 0;
    if (tid == 0) {
      dealt_next = atomicAdd(&p.ws->next_chunk, 1u);
      batch_chunk[nb] = c;
    }
    Acc acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = acc_zero<Acc>();
    const std::int64_t start = static_cast<std::int64_t>(c) * p.geo.chunk;
    if (start + p.geo.chunk <= p.n) {
      for (int r0 = 0; r0 < p.geo.rows; r0 += U) {
        uint4 xr[U], yr[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const std::int64_t i = start + (r0 + u) * kLanes + tid * V;
          xr[u] = __ldcs(reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + i));
          yr[u] = __ldcs(reinterpret_cast<const uint4*>(static_cast<const T*>(p.y) + i));
        }
        if constexpr (sizeof(T) == 2) issue_loads_first(xr, yr, 0u, p.zero);  // fp32 issues all 8 as it is
#pragma unroll
        for (int u = 0; u < U; ++u)
          fold_vector<T, true, true>(acc, xr[u], yr[u], scale, p.grad_input, p.grad_target,
                                     start + (r0 + u) * kLanes + tid * V);
      }
    } else {  // the tensor's last chunk, cut short: row by row
#pragma unroll 1
      for (int r = 0; r < p.geo.rows; ++r) {
        const std::int64_t i = start + static_cast<std::int64_t>(r) * kLanes + tid * V;
        if (i >= p.n) break;  // so are the later rows
        const int cnt = p.n - i >= V ? V : static_cast<int>(p.n - i);
        C xv[V], yv[V], gv[V];
        load_elems<T, false>(p, p.x, p.xs, i, cnt, xv);
        load_elems<T, false>(p, p.y, p.ys, i, cnt, yv);
#pragma unroll
        for (int v = 0; v < V; ++v) {
          if (v < cnt) {
            const C d = diff(xv[v], yv[v]);
            acc[v] = acc_add_term(acc[v], d);
            gv[v] = d * scale;
          }
        }
        store_elems<T, false>(p, p.grad_input, p.gis, i, cnt, gv);
        if (p.grad_target) {
#pragma unroll
          for (int v = 0; v < V; ++v) gv[v] = -gv[v];
          store_elems<T, false>(p, p.grad_target, p.gts, i, cnt, gv);
        }
      }
    }
    const Acc wv = warp_tree(pairwise_tree(acc));
    if (lane == 0) warp_part[nb][warp] = wv;
    if (tid == 0) {
      if (dealt_next == static_cast<unsigned>(K - 1)) is_last = true;
      next_chunk[parity] = static_cast<int>(gridDim.x + dealt_next);
    }
    __syncthreads();
    c = next_chunk[parity];
    parity ^= 1;
    if (++nb == kBatch) flush();
  }
  if (nb > 0) flush();
  if (!is_last) return;  // set before the last barrier above

  Acc v = with_segment_length(p.geo.chunks_pow2, [&](auto L) { return posted_tree<decltype(L)::value>(p.ws->posted, K, tid); });
  v = warp_tree(v);
  if (lane == 0) warp_part[0][warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarps ? warp_part[0][lane] : acc_zero<Acc>();
#pragma unroll
    for (int off = 1; off < kWarps; off *= 2) v = acc_add(v, shfl_down(v, off));
    if (lane == 0) {
      *static_cast<OutT*>(p.out) = Traits<OutT>::store(static_cast<OC>(finish(v, p.global_n, p.mean)));
      p.ws->next_chunk = 0;  // every request has been made: reset for the next launch
    }
  }
}

// The lane sums (§2) of column `col` (lanes [V col, V col + V)) of the chunk
// at element `start`, for the few-chunk kernels (R = 8 rows; kRows < 8 where the tensor
// has no more rows): the column's whole vectors are all loaded before any is
// folded, then the tensor's last, partial vector is folded if it is the last
// row of this column. The fused pass writes the gradients too.
template <class T, bool kGrad, int kRows>
__device__ __forceinline__ void fold_chunk_column(typename Traits<T>::Acc (&acc)[Pack<T>::V], const KernelParams& p,
                                                  std::int64_t start, int col) {
  using C = typename Traits<T>::Compute;
  using Acc = typename Traits<T>::Acc;
  constexpr int V = Pack<T>::V;
  const int n = static_cast<int>(min(p.geo.chunk, p.n - start));  // this chunk's elements
  const int whole = n / V;  // whole vectors; vector j: row j / kThreads, column j % kThreads
  const uint4* xv = reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + start);
  const uint4* yv = reinterpret_cast<const uint4*>(static_cast<const T*>(p.y) + start);
  C scale = C(0);
  if (kGrad) scale = static_cast<C>(p.host_scale64);
  uint4 xr[kRows], yr[kRows];
#pragma unroll
  for (int u = 0; u < kRows; ++u) {
    const int j = u * kThreads + col;
    if (j < whole) {
      xr[u] = __ldg(xv + j);
      yr[u] = __ldg(yv + j);
    }
  }
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = acc_zero<Acc>();
#pragma unroll
  for (int u = 0; u < kRows; ++u) {
    const int j = u * kThreads + col;
    if (j < whole) fold_vector<T, kGrad, false>(acc, xr[u], yr[u], scale, p.grad_input, p.grad_target, start + j * V);
  }
  const int rest = n - whole * V;
  if (rest > 0 && col == whole % kThreads) {
#pragma unroll
    for (int v = 0; v < V; ++v) {
      if (v < rest) {
        const std::int64_t i = start + whole * V + v;
        const C d = diff(Traits<T>::load(static_cast<const T*>(p.x)[i]), Traits<T>::load(static_cast<const T*>(p.y)[i]));
        acc[v] = acc_add_term(acc[v], d);
        if (kGrad) {
          const C gv = d * scale;
          static_cast<T*>(p.grad_input)[i] = Traits<T>::store(gv);
          if (p.grad_target) static_cast<T*>(p.grad_target)[i] = Traits<T>::store(-gv);
        }
      }
    }
  }
}

// One chunk of any dtype, or up to kMaxClusterChunks chunks of fp64 inputs
// (R = 8 rows each), contiguous and aligned: one block per chunk, every load
// of the chunk in flight at once. Several blocks form one thread-block
// cluster; after a cluster barrier, block 0 reads the chunk partials from
// its peers' shared memory and finishes: no workspace, no global fence and
// no ticket. K = 1 is a single block (no cluster).
//
// kRows = 1, 2, 4 are the forms for one chunk of that many rows (N <= W,
// 2 W, 4 W): the same code with the other rows' loads and folds compiled
// out, so the one block's serial path is shorter (H200, graph-replayed: at
// N = 1024, 1.77 -> 1.59 us fp32, the fused pass 1.85 -> 1.62; at N = 4096,
// 1.58 -> 1.51 fp32, 1.62 -> 1.44 bf16; the 8-row form steps over the absent
// rows by uniform branches).
template <class T, class OutT, bool kGrad, int kRows = kMinRows>
__global__ void __launch_bounds__(kThreads) mse_few_chunks_kernel(const KernelParams p) {
  using Acc = typename Traits<T>::Acc;
  using OC = typename Traits<OutT>::Compute;
  constexpr int V = Pack<T>::V;
  __shared__ Acc warp_part[kWarps];
  __shared__ Acc chunk_partial;
  enter_stream_order();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  Acc acc[V];
  fold_chunk_column<T, kGrad, kRows>(acc, p, static_cast<std::int64_t>(blockIdx.x) * p.geo.chunk, tid);
  // §2: the thread's V lanes, the warp, then the 8 warps: the chunk partial.
  Acc w = warp_tree(pairwise_tree(acc));
  if (lane == 0) warp_part[warp] = w;
  __syncthreads();
  if (warp == 0) {
    w = lane < kWarps ? warp_part[lane] : acc_zero<Acc>();
#pragma unroll
    for (int off = 1; off < kWarps; off *= 2) w = acc_add(w, shfl_down(w, off));
  }
  if (gridDim.x == 1) {  // the chunk tree of one leaf is that leaf
    if (tid == 0) *static_cast<OutT*>(p.out) = Traits<OutT>::store(static_cast<OC>(finish(w, p.global_n, p.mean)));
    return;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  if (tid == 0) chunk_partial = w;
  cluster.sync();  // every chunk partial is written (release/acquire at cluster scope)
  if (blockIdx.x == 0 && warp == 0) {
    // §2 chunk tree over K2 <= 8 leaves (zeros past K), by shuffles in lane order.
    const int K = static_cast<int>(gridDim.x);
    Acc v = lane < K ? *cluster.map_shared_rank(&chunk_partial, lane) : acc_zero<Acc>();
    for (int off = 1; off < static_cast<int>(p.geo.chunks_pow2); off *= 2) v = acc_add(v, shfl_down(v, off));
    if (lane == 0) *static_cast<OutT*>(p.out) = Traits<OutT>::store(static_cast<OC>(finish(v, p.global_n, p.mean)));
  }
  cluster.sync();  // peers keep their shared memory until block 0 has read it
#else
  __trap();  // launched as a cluster only on sm_90 and later (cluster_launchable)
#endif
}

// Few chunks of fp32 or 16-bit inputs (2 <= K <= kMaxSlicedChunks, so R = 8
// rows each), contiguous and aligned: each chunk is read by kSlices blocks of
// kThreads / kSlices threads, block s of a chunk owning its lanes
// [s W / kSlices, (s + 1) W / kSlices) in all 8 rows. An aligned block of
// lanes is a subtree of the chunk's lane tree (§2), so the chunk partial is
// the tree of its kSlices slice partials, and the root the tree of the
// K2 kSlices slice partials in chunk order: the block posts its slice
// partial, and the grid's last block polls the slots and evaluates that tree
// (as the single-wave forms of mse_reduce_kernel finish). One SM per chunk
// was bound by the SM itself: a 16-bit chunk is 16384 elements, each
// converted to fp64 (16 conversions per clock per SM on sm_90), and 64 KiB of
// loads (H200, graph-replayed bf16 forward at 8 chunks: a block per chunk
// 3.34 us, 4 per chunk 2.49).
template <class T, class OutT, bool kGrad, int kSlices>
__global__ void __launch_bounds__(kThreads / kSlices) mse_sliced_chunks_kernel(const KernelParams p) {
  using Acc = typename Traits<T>::Acc;
  using OC = typename Traits<OutT>::Compute;
  static_assert(std::is_same<Acc, double>::value, "slice partials are posted to 8-byte slots");
  constexpr int V = Pack<T>::V;
  constexpr int kBlockThreads = kThreads / kSlices;
  constexpr int kBlockWarps = kBlockThreads / 32;
  static_assert(kMaxSlicedChunks * kSlices <= kBlockThreads, "the finishing block holds a leaf per thread");
  __shared__ Acc warp_part[kBlockWarps];
  enter_stream_order();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  Acc acc[V];
  const int chunk = blockIdx.x / kSlices;
  const int col = (blockIdx.x % kSlices) * kBlockThreads + tid;  // this thread's vector of each row
  fold_chunk_column<T, kGrad, kMinRows>(acc, p, static_cast<std::int64_t>(chunk) * p.geo.chunk, col);
  // §2: the thread's V lanes, the warp, then the block's warps: the slice partial.
  Acc w = warp_tree(pairwise_tree(acc));
  if (lane == 0) warp_part[warp] = w;
  __syncthreads();
  double* slots = p.ws->posted;  // slot b: block b's slice partial (leaf b)
  if (warp == 0) {
    w = lane < kBlockWarps ? warp_part[lane] : acc_zero<Acc>();
#pragma unroll
    for (int off = 1; off < kBlockWarps; off *= 2) w = acc_add(w, shfl_down(w, off));
    if (lane == 0) post_partial(&slots[blockIdx.x], w);
  }
  if (blockIdx.x != gridDim.x - 1) return;
  // The grid's last block: the tree over the K2 kSlices leaves (zeros past
  // the K kSlices posted ones; K2 kSlices <= kBlockThreads), leaf t on thread
  // t. A leaf still empty is loaded again until it lands; each slot read is
  // emptied for the next launch. Every block of this grid is resident (at
  // most kMaxSlicedChunks kSlices small blocks), so the wait ends. Its own
  // loop, not posted_tree<1>: that form was 0.15-0.25 us slower at 16 chunks
  // (H200, graph-replayed; docs/performance.md, session 19).
  Acc v = acc_zero<Acc>();
  if (tid < static_cast<int>(gridDim.x)) {
    unsigned long long bits = peek_posted(&slots[tid]);
    while (bits == kEmptySlot) bits = peek_posted(&slots[tid]);
    __stcg(reinterpret_cast<unsigned long long*>(&slots[tid]), kEmptySlot);
    v = __longlong_as_double(bits);
  }
  v = warp_tree(v);
  __syncthreads();  // every warp has read warp_part above
  if (lane == 0) warp_part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kBlockWarps ? warp_part[lane] : acc_zero<Acc>();
#pragma unroll
    for (int off = 1; off < kBlockWarps; off *= 2) v = acc_add(v, shfl_down(v, off));
    if (lane == 0) *static_cast<OutT*>(p.out) = Traits<OutT>::store(static_cast<OC>(finish(v, p.global_n, p.mean)));
  }
}

// ---- elementwise ------------------------------------------------------------------

enum class Ew { loss_none, grad_device_scalar, grad_each, fused_none };

// mse_elementwise_kernel: vectors per thread in a tile; from kDealFromN
// elements, the tiles are dealt from a counter to kDealBlocksPerSm blocks per
// SM (see the kernel).
constexpr int kTileRows = 4;
constexpr std::int64_t kDealFromN = std::int64_t{1} << 24;
constexpr int kDealBlocksPerSm = 2;

template <class T, class OutT, class G, bool kStrided, Ew kMode, bool kShifted = false, bool kDealt = false>
__global__ void __launch_bounds__(kThreads) mse_elementwise_kernel(const KernelParams p) {
  static_assert(!(kDealt && (kStrided || kShifted)), "dealt tiles are for aligned, contiguous tensors");
  using C = typename Traits<T>::Compute;
  constexpr int V = Pack<T>::V;
  enter_stream_order();
  C scale = C(0);
  if (kMode == Ew::grad_device_scalar)
    scale = static_cast<C>(grad_scale64(load_scalar(p.grad_output, p.grad_output_dtype), p.n, p.mean));
  if (kMode == Ew::fused_none) scale = static_cast<C>(p.host_scale64);
  // Whole tiles of U vectors per thread with 16-byte accesses, the tiles in
  // [head_end, tail_start); the rest (head and tail, strided views,
  // misaligned pointers) in the loop below. Shifted inputs (kShifted) cut
  // each vector from two aligned words: the first tile is left to the loop
  // below (its first word would start before the tensor), and so is the
  // last vector (its second word would end past it).
  //
  // A tile is U rows of kThreads vectors, contiguous, one block's: 16 KiB of
  // each operand. Grid-strided, a block's share is fixed in advance. Dealt
  // (kDealt: aligned contiguous tensors from kDealFromN elements), every
  // block starts at tile blockIdx.x and asks the workspace's counter for its
  // next tile as it starts one, so a block that runs ahead takes more tiles
  // and none idles while others finish their share; kDealBlocksPerSm blocks
  // per SM. A read-2-write-1 kernel walked so reached the copy of its bytes
  // where grid-strided tiles, static chunks or the read probe's walk (a
  // thread's vectors a grid's width apart) stayed 5-7 % short (H200 at 2^25
  // and 2^26, docs/performance.md, session 25). In the library (H100,
  // session 26) dealt tiles made the elementwise modes 1.6-8 % faster from
  // 2^25 (-5 to +1 % at 2^24) and up to 10 % slower at 2^20-2^22, where a
  // block has only a few tiles (2^23: mixed);
  // from 2^25, 2 blocks per SM were up to 1.2 % faster than 3, and 4 slower.
  //
  // The counter needs no reset by a finishing block: each processed tile
  // makes one request, so the requests of a launch are exactly its whole
  // tiles, and the request that returns the last value is the launch's last;
  // its thread sets the counter back to zero.
  constexpr int U = kTileRows;
  constexpr std::int64_t kTile = static_cast<std::int64_t>(kThreads) * V * U;
  std::int64_t head_end = 0, tail_start = 0;
  if (!kStrided && (kShifted || p.vec) && (kMode != Ew::grad_each || std::is_same<G, T>::value)) {
    if (kShifted) {
      const std::int64_t body_end = p.n > V ? (p.n - V) / kTile * kTile : 0;
      if (body_end > kTile) {
        head_end = kTile;
        tail_start = body_end;
      }
    } else {
      tail_start = p.n / kTile * kTile;
    }
    // One tile: this thread's U vectors of the tile at `base`.
    auto tile = [&](std::int64_t base) {
      auto index = [&](int u) -> std::int64_t { return base + (u * kThreads + threadIdx.x) * V; };
      uint4 xr[U], yr[U], gr[U];
      if constexpr (kShifted) {
        uint4 xh[U], yh[U], gh[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const std::int64_t i = index(u);
          load_words<T>(p.x, i, p.x_shift, xr[u], xh[u]);
          load_words<T>(p.y, i, p.y_shift, yr[u], yh[u]);
          if (kMode == Ew::grad_each) load_words<T>(p.grad_output, i, p.g_shift, gr[u], gh[u]);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          xr[u] = funnel16(xr[u], xh[u], p.x_shift);
          yr[u] = funnel16(yr[u], yh[u], p.y_shift);
          if (kMode == Ew::grad_each) gr[u] = funnel16(gr[u], gh[u], p.g_shift);
        }
      } else {
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const std::int64_t i = index(u);
          xr[u] = __ldcs(reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + i));
          yr[u] = __ldcs(reinterpret_cast<const uint4*>(static_cast<const T*>(p.y) + i));
          if (kMode == Ew::grad_each) gr[u] = __ldcs(reinterpret_cast<const uint4*>(static_cast<const T*>(p.grad_output) + i));
        }
      }
      if constexpr (kDealt) {  // below kDealFromN: 1-3 % slower in some modes (H100, session 29)
        unsigned more = 0;
        if (kMode == Ew::grad_each)
#pragma unroll
          for (int u = 0; u < U; ++u) more |= gr[u].x;
        issue_loads_first(xr, yr, more, p.zero);
      }
      // The fp16 backward mean/sum tile spilled 4 bytes when it held the
      // negated vector beside grad_input (session 38); negating grad_input's
      // stored bits instead removes the spill and was 1.5-2 % faster at 2^20,
      // 2^22 and (with grad_target) 2^23 on an H100. In the other forms the
      // same change moved times by -4 to +3 % depending on N (session 41).
      constexpr bool kNegateStored = std::is_same<T, Half>::value && kMode == Ew::grad_device_scalar;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const std::int64_t i = index(u);
        Pack<T> a, b, gp, gi;
        [[maybe_unused]] Pack<T> gt;  // grad_target, unless kNegateStored
        [[maybe_unused]] Pack<T> o;   // the loss vector, where it has the input dtype
        a.u = xr[u];
        b.u = yr[u];
        gp.u = gr[u];
#pragma unroll
        for (int v = 0; v < V; ++v) {
          const C d = diff(Traits<T>::load(a.e[v]), Traits<T>::load(b.e[v]));
          C gr_v = kMode == Ew::grad_each ? d * (C(2) * Traits<T>::load(gp.e[v])) : d * scale;
          if constexpr (std::is_same<OutT, T>::value) o.e[v] = Traits<T>::store(d * d);
          gi.e[v] = Traits<T>::store(gr_v);
          if constexpr (!kNegateStored) gt.e[v] = Traits<T>::store(-gr_v);
          if constexpr (!std::is_same<OutT, T>::value) {
            if (kMode == Ew::loss_none || kMode == Ew::fused_none)
              static_cast<float*>(p.out)[i + v] = canonical(static_cast<float>(d * d));
          }
        }
        if constexpr (std::is_same<OutT, T>::value) {
          if (kMode == Ew::loss_none || kMode == Ew::fused_none)
            __stcs(reinterpret_cast<uint4*>(static_cast<T*>(p.out) + i), o.u);
        }
        if (kMode != Ew::loss_none) {
          __stcs(reinterpret_cast<uint4*>(static_cast<T*>(p.grad_input) + i), gi.u);
          if (p.grad_target) {
            uint4* const to = reinterpret_cast<uint4*>(static_cast<T*>(p.grad_target) + i);
            if constexpr (kNegateStored) __stcs(to, negated_half_vector(gi.u));
            else __stcs(to, gt.u);
          }
        }
      }
    };
    if constexpr (kDealt) {
      __shared__ unsigned dealt[2];  // double-buffered: one barrier per tile
      int parity = 0;
      const std::int64_t tiles = tail_start / kTile;  // < 2^32 (launch_elementwise)
      for (std::int64_t t = blockIdx.x; t < tiles;) {
        if (threadIdx.x == 0) {  // asked now, used after this tile: its latency is hidden
          const unsigned r = atomicAdd(&p.ws->next_tile, 1u);
          if (r == tiles - 1) atomicExch(&p.ws->next_tile, 0u);
          dealt[parity] = r;
        }
        tile(t * kTile);
        __syncthreads();
        t = static_cast<std::int64_t>(gridDim.x) + dealt[parity];
        parity ^= 1;
      }
    } else {
      for (std::int64_t base = head_end + blockIdx.x * kTile; base < tail_start; base += gridDim.x * kTile) tile(base);
    }
  }
  // Element by element: [0, head_end), then [tail_start, N).
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kThreads * V;
  const std::int64_t rest = head_end + (p.n - tail_start);
  for (std::int64_t j = (static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x) * V; j < rest; j += step) {
    const std::int64_t i = j < head_end ? j : tail_start + (j - head_end);
    const int cnt = p.n - i >= V ? V : static_cast<int>(p.n - i);
    C x[V], y[V], out[V], grad[V];
    load_elems<T, kStrided>(p, p.x, p.xs, i, cnt, x);
    load_elems<T, kStrided>(p, p.y, p.ys, i, cnt, y);
    C gs[V];
    if (kMode == Ew::grad_each) {
      if constexpr (std::is_same<G, T>::value) {
        load_elems<G, kStrided>(p, p.grad_output, p.gos, i, cnt, reinterpret_cast<typename Traits<G>::Compute*>(gs));
      } else {  // fp32 upstream for 16-bit inputs: read element by element
        const float* gp = static_cast<const float*>(p.grad_output);
#pragma unroll
        for (int v = 0; v < V; ++v)
          if (v < cnt) gs[v] = gp[kStrided ? offset_of(p, p.gos, i + v) : i + v];
      }
    }
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const C d = diff(x[v], y[v]);
      out[v] = d * d;
      if (kMode == Ew::grad_each) grad[v] = d * (C(2) * gs[v]);
      else grad[v] = d * scale;
    }
    if (kMode == Ew::loss_none || kMode == Ew::fused_none) {
      if constexpr (std::is_same<OutT, T>::value) {
        store_elems<T, kStrided>(p, p.out, p.outs, i, cnt, out);
      } else {  // fp32 loss for 16-bit inputs
        float* op = static_cast<float*>(p.out);
#pragma unroll
        for (int v = 0; v < V; ++v)
          if (v < cnt) op[kStrided ? offset_of(p, p.outs, i + v) : i + v] = canonical(static_cast<float>(out[v]));
      }
    }
    if (kMode != Ew::loss_none) {
      store_elems<T, kStrided>(p, p.grad_input, p.gis, i, cnt, grad);
      if (p.grad_target) {
#pragma unroll
        for (int v = 0; v < V; ++v) grad[v] = -grad[v];
        store_elems<T, kStrided>(p, p.grad_target, p.gts, i, cnt, grad);
      }
    }
  }
}

// ---- scale_gradient (§7) ------------------------------------------------------------

// grad <- grad * g over the grad_input and grad_target operands; when g is 1
// every block returns before touching them.
template <class T, bool kStrided>
__global__ void __launch_bounds__(kThreads) mse_scale_kernel(const KernelParams p) {
  using C = typename Traits<T>::Compute;
  constexpr int V = Pack<T>::V;
  enter_stream_order();
  const C g = static_cast<C>(load_scalar(p.grad_output, p.grad_output_dtype));
  if (g == C(1)) return;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kThreads * V;
  for (std::int64_t i = (static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x) * V; i < p.n; i += step) {
    const int cnt = p.n - i >= V ? V : static_cast<int>(p.n - i);
    C v[V];
    load_elems<T, kStrided>(p, p.grad_input, p.gis, i, cnt, v);
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = v[k] * g;
    store_elems<T, kStrided>(p, p.grad_input, p.gis, i, cnt, v);
    if (p.grad_target) {
      load_elems<T, kStrided>(p, p.grad_target, p.gts, i, cnt, v);
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] = v[k] * g;
      store_elems<T, kStrided>(p, p.grad_target, p.gts, i, cnt, v);
    }
  }
}

// ---- host side ----------------------------------------------------------------------

namespace {

using Kernel = void (*)(KernelParams);  // every kernel here has this type

// compute(kernel, device) once per (kernel, device) and query site (each
// call site's lambda has its own cache): occupancy and cluster queries
// depend on both.
template <class Compute>
auto per_kernel_and_device(Kernel kernel, Compute&& compute) {
  using V = decltype(compute(kernel, 0));
  static std::mutex m;
  static std::map<std::pair<const void*, int>, V> cache;
  int dev;
  MSELOSS_CUDA_CHECK(cudaGetDevice(&dev));
  const auto key = std::make_pair(reinterpret_cast<const void*>(kernel), dev);
  std::lock_guard<std::mutex> lock(m);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  return cache[key] = compute(kernel, dev);
}

// `smem`: the kernel's dynamic shared memory (the same at every launch of
// it). Above 48 KiB a kernel may only launch, and the occupancy query only
// counts it, once its limit is raised: done here, once per kernel and device,
// before the query and so before the kernel's first launch.
int max_resident_blocks(Kernel kernel, int smem = 0) {
  return per_kernel_and_device(kernel, [smem](Kernel k, int) {
    if (smem > 0) MSELOSS_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0;
    MSELOSS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, kThreads, smem));
    return std::max(1, per_sm) * sm_count();
  });
}

bool aligned16(const void* ptr) { return (reinterpret_cast<std::uintptr_t>(ptr) & 15u) == 0; }

// The shifted kernels serve contiguous x and y that are not both 16-byte
// aligned (a tensor sliced at an odd offset), when every output written
// elementwise is aligned (as freshly allocated gradients are). Other
// misaligned cases go element by element.
bool shifted(const KernelParams& kp, const Problem& p) {
  if (!p.contiguous || kp.vec) return false;
  if (p.writes_grad() && !(aligned16(p.grad_input.data) && aligned16(p.grad_target.data))) return false;
  if (!p.reduces() && p.writes_loss() && !aligned16(p.out.data)) return false;
  return true;
}

// Grid for K chunks. The unit of work is a chunk, so the best any grid can do
// is to give every SM floor or ceil of K / SMs chunks: a grid of b blocks per
// SM, with chunks dealt out grid-stride, does exactly that (block j and
// j + SMs land on one SM in the first wave). A grid that is not a multiple of
// the SM count would load some SMs with one block more than others (measured
// on H200: bf16 at 2^25, 342 blocks on 132 SMs, 0.77 of the read probe).
// One chunk takes one block and no ticket. From two chunks on, a block per
// chunk and the ticket beat one block walking them in turn (H200: bf16 at
// 2^16, 4 chunks on one block, 6.9 us graph-replayed, where fp32 at 2^16, 8
// chunks on 8 blocks, took 3.7 us).
int reduce_grid(std::int64_t K, int per_sm, int sms, int forced) {
  if (forced > 0) return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(forced, K)));
  if (K <= 1) return 1;
  if (K <= sms) return static_cast<int>(K);
  const std::int64_t b = std::min<std::int64_t>(per_sm, (K + sms - 1) / sms);
  return static_cast<int>(b * sms);
}

// A launch of `grid` blocks of kThreads threads: as one thread-block cluster
// of `cluster` blocks where cluster > 0, and with programmatic dependent
// launch (see enter_stream_order) where `programmatic` asks for it and the
// device has it (sm_90 and later).
struct Launch {
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attrs[2]{};
  Launch(int grid, int smem, cudaStream_t stream, bool programmatic, int cluster = 0, int threads = kThreads) {
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attrs;
    if (cluster > 0) {
      cudaLaunchAttribute& a = attrs[cfg.numAttrs++];
      a.id = cudaLaunchAttributeClusterDimension;
      a.val.clusterDim.x = cluster;
      a.val.clusterDim.y = 1;
      a.val.clusterDim.z = 1;
    }
    if (programmatic && current_device_attribute(cudaDevAttrComputeCapabilityMajor) >= 9) {
      cudaLaunchAttribute& a = attrs[cfg.numAttrs++];
      a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      a.val.programmaticStreamSerializationAllowed = 1;
    }
  }
  Launch(const Launch&) = delete;  // cfg points at attrs
  void operator()(Kernel kernel, const KernelParams& kp) const {
    MSELOSS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, kp));
  }
};

// Whether `kernel` runs as one cluster of kMaxClusterChunks blocks here
// (clusters need sm_90 or later).
bool cluster_launchable(Kernel kernel) {
  return per_kernel_and_device(kernel, [](Kernel k, int dev) {
    int major = 0;
    MSELOSS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major < 9) return false;
    const Launch launch(kMaxClusterChunks, 0, nullptr, false, kMaxClusterChunks);
    int clusters = 0;
    MSELOSS_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, k, &launch.cfg));
    return clusters > 0;
  });
}

// K <= kMaxClusterChunks chunks, contiguous and aligned: mse_few_chunks_kernel,
// one block per chunk, the K blocks one cluster. False where clusters of that
// size cannot run (before sm_90), and the caller takes the persistent kernel.
template <class T, class OutT, bool kGrad>
bool launch_few_chunks(const KernelParams& kp, const Problem& p, cudaStream_t stream) {
  auto kernel = mse_few_chunks_kernel<T, OutT, kGrad>;
  const int K = static_cast<int>(std::max<std::int64_t>(kp.geo.chunks, 1));
  if (K == 1) {
    // As many rows as the tensor has (N <= 4 W): a shorter serial path.
    if (kp.n <= kp.geo.lanes) kernel = mse_few_chunks_kernel<T, OutT, kGrad, 1>;
    else if (kp.n <= 2 * kp.geo.lanes) kernel = mse_few_chunks_kernel<T, OutT, kGrad, 2>;
    else if (kp.n <= 4 * kp.geo.lanes) kernel = mse_few_chunks_kernel<T, OutT, kGrad, 4>;
    Launch(1, 0, stream, p.programmatic_launch)(kernel, kp);
    return true;
  }
  if (!cluster_launchable(kernel)) return false;
  Launch(K, 0, stream, p.programmatic_launch, K)(kernel, kp);
  return true;
}

template <class T, class OutT, bool kStrided, bool kGrad>
void launch_reduce(KernelParams kp, const Problem& p, cudaStream_t stream) {
  // 2 to 16 chunks of fp32 or 16-bit inputs: a chunk read by 4 blocks of 64
  // threads up to 8 chunks, by 2 blocks of 128 threads from 9, partials
  // posted (see mse_sliced_chunks_kernel). About 32 blocks was the best grid
  // (H200, graph-replayed: fp32 forward at 8 chunks 2.48 us in 16 blocks,
  // 2.11 in 32; at 16 chunks 2.36 in 32, 2.54 in 64). A forced grid (tests)
  // takes the persistent kernel, so its small-K paths stay exercised.
  if constexpr (!kStrided && !std::is_same<T, double>::value)
    if (kp.vec && p.stage == Stage::whole && p.grid_blocks == 0 && kp.geo.chunks >= 2 &&
        kp.geo.chunks <= kMaxSlicedChunks) {
      kp.ws = workspace_for(stream);
      const int K = static_cast<int>(kp.geo.chunks);
      if (K <= 8) {
        Launch(K * 4, 0, stream, p.programmatic_launch, 0, kThreads / 4)(mse_sliced_chunks_kernel<T, OutT, kGrad, 4>, kp);
      } else {
        Launch(K * 2, 0, stream, p.programmatic_launch, 0, kThreads / 2)(mse_sliced_chunks_kernel<T, OutT, kGrad, 2>, kp);
      }
      return;
    }
  // One chunk, or up to 8 of fp64 inputs (N <= 8 C = 2^15): a block per
  // chunk, no ticket and no workspace (a cluster where there are several).
  if constexpr (!kStrided)
    if (kp.vec && p.stage == Stage::whole && p.grid_blocks == 0 && kp.geo.chunks <= kMaxClusterChunks)
      if (launch_few_chunks<T, OutT, kGrad>(kp, p, stream)) return;
  if (p.stage == Stage::whole) {  // the ticket, the chunk dealer and the partials
    kp.ws = workspace_for(stream);
    kp.partials = kp.ws->partials;
  }
  const int sms = sm_count();
  auto kernel = mse_reduce_kernel<T, OutT, kStrided, kGrad, 4>;
  int smem = 0;  // dynamic shared memory: the ring's
  if constexpr (!kStrided && kGrad && sizeof(T) == 2) {
    // The 16-bit fused pass: its rows through the ring (see
    // kReduceBlocksPerSm), which also keeps a one-chunk block's 8 rows in flight.
    if (kp.vec) {
      kernel = kp.local_chunks <= sms ? mse_reduce_kernel<T, OutT, kStrided, kGrad, 8, false, true>
                                      : mse_reduce_kernel<T, OutT, kStrided, kGrad, 4, false, true>;
      smem = kRingBytes;
    }
  } else if constexpr (!kStrided) {
    // One chunk of 8 rows per block: all of it in flight at once.
    if (kp.vec && kp.geo.rows == 8 && kp.local_chunks <= sms) kernel = mse_reduce_kernel<T, OutT, kStrided, kGrad, 8>;
  }
  if constexpr (!kStrided)
    if (shifted(kp, p)) kernel = mse_reduce_kernel<T, OutT, kStrided, kGrad, 4, true>;
  // The fused pass of a contiguous, aligned tensor with more chunks than the
  // reduce kernel's grid: the lean dealt kernel (see mse_fused_stream_kernel).
  // The choice depends on K alone, so a forced grid (tests) tests the kernel
  // the default grid runs.
  if constexpr (!kStrided && kGrad && !std::is_same<T, double>::value)
    if (kp.vec && p.stage == Stage::whole) {
      const std::int64_t K = kp.local_chunks;
      const int reduce_blocks = reduce_grid(K, max_resident_blocks(kernel, smem) / sms, sms, 0);
      const Kernel fused = mse_fused_stream_kernel<T, OutT>;
      const int fused_grid = reduce_grid(K, max_resident_blocks(fused) / sms, sms, p.grid_blocks);
      if (K > reduce_blocks && K > fused_grid) {
        Launch(fused_grid, 0, stream, p.programmatic_launch)(fused, kp);
        return;
      }
    }
  // The forward pass of a contiguous, aligned tensor, more chunks than SMs:
  // the lean persistent kernel (see mse_stream_kernel). A forced grid
  // (tests) takes it too, so its grid independence is tested.
  if constexpr (!kStrided && !kGrad && !std::is_same<T, double>::value)
    if (kernel == mse_reduce_kernel<T, OutT, kStrided, kGrad, 4> && kp.vec && p.stage == Stage::whole &&
        kp.local_chunks > sms)
      kernel = mse_stream_kernel<T, OutT>;
  int grid = reduce_grid(kp.local_chunks, max_resident_blocks(kernel, smem) / sms, sms, p.grid_blocks);
  // The fused pass's chunk dealer (see mse_reduce_kernel). Not for shards
  // (Stage::partials): they take no ticket, and nothing would reset the
  // counter. Not with no more chunks than blocks: each block has its one
  // chunk, and asking the counter would only add its round trip and a
  // barrier (fused fp32 at 2^18, 32 chunks: 4.41 -> 4.63 us graph-replayed).
  kp.deal_chunks = kGrad && !kStrided && p.stage == Stage::whole && kp.local_chunks > grid;
  Launch(grid, smem, stream, p.programmatic_launch)(kernel, kp);
}

template <class T, class OutT, class G, bool kStrided, Ew kMode>
void launch_elementwise(const KernelParams& kp, const Problem& p, cudaStream_t stream) {
  if (kp.n == 0) return;
  auto kernel = mse_elementwise_kernel<T, OutT, G, kStrided, kMode>;
  constexpr std::int64_t kTileElems = static_cast<std::int64_t>(kTileRows) * kThreads * Pack<T>::V;
  const std::int64_t tiles = (kp.n + kTileElems - 1) / kTileElems;
  std::int64_t grid = std::numeric_limits<std::int64_t>::max();
  KernelParams k = kp;
  if constexpr (!kStrided && (kMode != Ew::grad_each || std::is_same<G, T>::value)) {
    if (shifted(kp, p)) {
      kernel = mse_elementwise_kernel<T, OutT, G, kStrided, kMode, true>;
    } else if (kp.vec && kp.n >= kDealFromN && tiles < (std::int64_t{1} << 32)) {  // dealt tiles (see the kernel)
      kernel = mse_elementwise_kernel<T, OutT, G, kStrided, kMode, false, true>;
      grid = static_cast<std::int64_t>(kDealBlocksPerSm) * sm_count();
      k.ws = workspace_for(stream);
    }
  }
  grid = std::min({grid, tiles, static_cast<std::int64_t>(max_resident_blocks(kernel))});
  if (p.grid_blocks > 0) grid = std::min<std::int64_t>(grid, p.grid_blocks);
  Launch(static_cast<int>(grid), 0, stream, p.programmatic_launch)(kernel, k);
}

template <class T, class OutT, class G, bool kStrided>
void dispatch_layout(const Problem& p, const KernelParams& kp, cudaStream_t stream) {
  if (p.op == Op::forward && p.reduces()) return launch_reduce<T, OutT, kStrided, false>(kp, p, stream);
  if (p.op == Op::forward_backward && p.reduces()) return launch_reduce<T, OutT, kStrided, true>(kp, p, stream);
  if (p.op == Op::forward) return launch_elementwise<T, OutT, G, kStrided, Ew::loss_none>(kp, p, stream);
  if (p.op == Op::forward_backward) return launch_elementwise<T, OutT, G, kStrided, Ew::fused_none>(kp, p, stream);
  if (p.reduces()) return launch_elementwise<T, OutT, G, kStrided, Ew::grad_device_scalar>(kp, p, stream);
  return launch_elementwise<T, OutT, G, kStrided, Ew::grad_each>(kp, p, stream);
}

template <class T, class OutT, class G>
void dispatch_typed(const Problem& p, const KernelParams& kp, cudaStream_t stream) {
  if (p.contiguous) dispatch_layout<T, OutT, G, false>(p, kp, stream);
  else dispatch_layout<T, OutT, G, true>(p, kp, stream);
}

template <class T>
void launch_scale(const Problem& p, const KernelParams& kp, cudaStream_t stream) {
  if (kp.n == 0) return;
  auto kernel = p.contiguous ? mse_scale_kernel<T, false> : mse_scale_kernel<T, true>;
  const std::int64_t vecs = (kp.n + Pack<T>::V - 1) / Pack<T>::V;
  std::int64_t grid = std::min<std::int64_t>((vecs + kThreads - 1) / kThreads, max_resident_blocks(kernel));
  if (p.grid_blocks > 0) grid = std::min<std::int64_t>(grid, p.grid_blocks);
  Launch(static_cast<int>(grid), 0, stream, p.programmatic_launch)(kernel, kp);
}

template <class T>
void dispatch_dtype(const Problem& p, const KernelParams& kp, cudaStream_t stream) {
  if (p.op == Op::scale) return launch_scale<T>(p, kp, stream);
  constexpr bool k16 = std::is_same<T, Half>::value || std::is_same<T, BFloat16>::value;
  if constexpr (k16) {
    const bool f32_loss = p.writes_loss() && p.out.dtype == DType::f32;
    const bool f32_grad_out = p.op == Op::backward && p.grad_output.dtype == DType::f32 && !p.reduces();
    if (f32_loss) return dispatch_typed<T, float, T>(p, kp, stream);
    if (f32_grad_out) return dispatch_typed<T, T, float>(p, kp, stream);
  }
  dispatch_typed<T, T, T>(p, kp, stream);
}

// Views on the CUDA device must be device memory of the current device.
void check_device_pointer(const void* ptr, const char* name) {
  if (ptr == nullptr) return;
  cudaPointerAttributes a;
  cudaError_t e = cudaPointerGetAttributes(&a, ptr);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw InvalidArgument(std::string(name) + ": pointer is not known to CUDA (" + cudaGetErrorString(e) + ")");
  }
  int dev;
  MSELOSS_CUDA_CHECK(cudaGetDevice(&dev));
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
    throw InvalidArgument(std::string(name) + ": device is cuda but the pointer is host memory");
  if (a.type == cudaMemoryTypeDevice && a.device != dev)
    throw InvalidArgument(std::string(name) + ": pointer is on CUDA device " + std::to_string(a.device) +
                          " but the current device is " + std::to_string(dev));
}

}  // namespace

void run(const Problem& p) {
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(p.stream);
  if (p.n > 0) {
    check_device_pointer(p.input.data, "input");
    check_device_pointer(p.target.data, "target");
  }
  if (p.writes_loss()) check_device_pointer(p.n > 0 || p.reduces() ? p.out.data : nullptr, "out");
  if (p.writes_grad() && p.n > 0) {
    check_device_pointer(p.grad_input.data, "grad_input");
    check_device_pointer(p.grad_target.data, "grad_target");
  }
  if ((p.op == Op::backward && (p.n > 0 || p.reduces())) || p.op == Op::scale)
    check_device_pointer(p.grad_output.data, "grad_output");
  if (p.stage != Stage::whole) check_device_pointer(p.partials, "partials");

  KernelParams kp{};
  kp.x = p.input.data;
  kp.y = p.target.data;
  kp.out = p.out.data;
  kp.grad_input = p.writes_grad() ? p.grad_input.data : nullptr;
  kp.grad_target = p.writes_grad() ? p.grad_target.data : nullptr;
  kp.grad_output = p.grad_output.data;
  kp.grad_output_dtype = p.grad_output.dtype;
  kp.n = p.n;
  kp.global_n = p.global_n;
  kp.geo = make_geometry(p.global_n, static_cast<int>(dtype_size(p.dtype)));
  kp.local_chunks = (p.n + kp.geo.chunk - 1) / kp.geo.chunk;
  kp.chunk_base = p.chunk_base;
  kp.stage = p.stage;
  kp.rank = std::max(p.rank, 1);
  kp.mean = p.mean();
  kp.zero = 0;  // issue_loads_first XORs it into the data: it must be 0
  for (int d = 0; d < kMaxRank; ++d) {
    kp.shape[d] = p.rank == 0 ? 1 : p.shape[d];
    kp.xs.s[d] = p.input.strides[d];
    kp.ys.s[d] = p.target.strides[d];
    kp.outs.s[d] = p.out.strides[d];
    kp.gis.s[d] = p.grad_input.strides[d];
    kp.gts.s[d] = p.grad_target.strides[d];
    kp.gos.s[d] = p.grad_output.strides[d];
  }
  if (p.op == Op::forward_backward) kp.host_scale64 = grad_scale64(p.grad_scale, p.global_n, p.reduces() && p.mean());
  kp.vec = p.contiguous && aligned16(p.input.data) && aligned16(p.target.data);
  kp.x_shift = static_cast<int>(reinterpret_cast<std::uintptr_t>(p.input.data) & 15u);
  kp.y_shift = static_cast<int>(reinterpret_cast<std::uintptr_t>(p.target.data) & 15u);
  kp.g_shift = static_cast<int>(reinterpret_cast<std::uintptr_t>(p.grad_output.data) & 15u);
  if (!p.reduces() && p.writes_loss()) kp.vec = kp.vec && aligned16(p.out.data);
  if (p.writes_grad()) kp.vec = kp.vec && aligned16(p.grad_input.data) && aligned16(p.grad_target.data);
  if (p.op == Op::backward && !p.reduces()) kp.vec = kp.vec && aligned16(p.grad_output.data);
  // The workspace (ticket and chunk partials) serves only the persistent
  // reduction and the comparison algorithms; it is fetched where they launch,
  // so the other kernels skip its lookup (and a first capture on a stream,
  // its zeroing node).
  kp.ws = nullptr;
  kp.partials = static_cast<DD*>(p.partials);
  // §9: a shard's buffer is zero outside its chunks (and the fp32 family
  // writes only the hi half of its own).
  if (p.stage == Stage::partials && p.reduces())
    MSELOSS_CUDA_CHECK(cudaMemsetAsync(p.partials, 0, sizeof(double) * p.partials_numel, stream));

  if (p.op == Op::forward && p.reduces() && p.algorithm != Algorithm::deterministic) {
    kp.ws = workspace_for(stream);
    return launch_comparison(p, kp, stream);
  }
  switch (p.dtype) {
    case DType::f32: return dispatch_dtype<float>(p, kp, stream);
    case DType::f64: return dispatch_dtype<double>(p, kp, stream);
    case DType::f16: return dispatch_dtype<Half>(p, kp, stream);
    case DType::bf16: return dispatch_dtype<BFloat16>(p, kp, stream);
  }
}

}  // namespace mseloss::detail::cuda
