// PyTorch operators over the mseloss C++ library: schemas, CPU and CUDA
// kernels (the library's, on the current CUDA stream, no host sync), the
// autocast kernel and the training-step mode's autograd (C++, because a
// training step is host-bound: see FusedLoss). Fake kernels and the other
// autograd formulas are registered in Python (python/mseloss/_ops.py).
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/Parallel.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/autograd.h>
#include <torch/library.h>
#ifdef MSELOSS_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <optional>
#include <string>

#include "mseloss/mseloss.hpp"

namespace {

// Error messages are built with std::string and std::to_string, never with an
// ostream: on the GPU machine's image (GCC 13 headers, torch's libstdc++ at
// run time) inserting an integer into an ostream inside this library crashed
// in the locale facets. TORCH_CHECK with one std::string formats nothing.
[[noreturn]] void fail(const std::string& msg) { TORCH_CHECK(false, msg); }

std::string type_name(const at::Tensor& t) { return c10::toString(t.scalar_type()); }

mseloss::DType dtype_of(at::ScalarType t, const char* name) {
  switch (t) {
    case at::kFloat: return mseloss::DType::f32;
    case at::kDouble: return mseloss::DType::f64;
    case at::kHalf: return mseloss::DType::f16;
    case at::kBFloat16: return mseloss::DType::bf16;
    default:
      fail(std::string("mseloss: ") + name + " has dtype " + c10::toString(t) +
           "; supported are float32, float64, float16 and bfloat16");
  }
}
mseloss::DType dtype_of(const at::Tensor& t, const char* name) { return dtype_of(t.scalar_type(), name); }

mseloss::TensorView view_of(const at::Tensor& t, const char* name) {
  if (t.dim() > mseloss::kMaxRank)
    fail(std::string("mseloss: ") + name + " has " + std::to_string(t.dim()) + " dimensions; at most " +
         std::to_string(mseloss::kMaxRank) + " are supported");
  if (!t.is_cpu() && !t.is_cuda())
    fail(std::string("mseloss: ") + name + " is on " + t.device().str() + "; only CPU and CUDA are supported");
  mseloss::TensorView v;
  v.data = t.numel() > 0 ? t.data_ptr() : nullptr;
  v.dtype = dtype_of(t, name);
  v.device = t.is_cuda() ? mseloss::Device::cuda : mseloss::Device::cpu;
  v.rank = static_cast<int>(t.dim());
  for (int d = 0; d < v.rank; ++d) {
    v.shape[d] = t.size(d);
    v.strides[d] = t.stride(d);
  }
  return v;
}

mseloss::Reduction reduction_of(int64_t r) {
  switch (r) {
    case at::Reduction::None: return mseloss::Reduction::none;
    case at::Reduction::Mean: return mseloss::Reduction::mean;
    case at::Reduction::Sum: return mseloss::Reduction::sum;
  }
  fail("mseloss: reduction code " + std::to_string(r) + " is not 0 (none), 1 (mean) or 2 (sum)");
}

// The CPU backend's tasks on torch's intra-op pool (mseloss::CpuRunTasks), as
// torch's own operators run theirs: after a torch operator the pool's idle
// threads spin for a while on the cores that std::threads of the library's
// own would need (session 43, one run: with OMP_WAIT_POLICY=PASSIVE, which
// stops the spinning, fp32 and 16-bit calls at 2^20 took 1.6-2.5x less time).
void run_on_torch_pool(int tasks, void (*task)(void* context, int t), void* context) {
  at::parallel_for(0, tasks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) task(context, static_cast<int>(t));
  });
}

mseloss::Options options_for(const at::Tensor& input, int64_t reduction) {
  mseloss::Options o;
  o.reduction = reduction_of(reduction);
  // CPU tensors: as many threads as torch.set_num_threads allows, torch's own.
  if (input.is_cpu()) {
    o.num_threads = at::get_num_threads();
    o.cpu_run_tasks = run_on_torch_pool;
  }
#ifdef MSELOSS_WITH_CUDA
  if (input.is_cuda()) o.stream = at::cuda::getCurrentCUDAStream(input.device().index()).stream();
#endif
  return o;
}

// Library errors become RuntimeErrors that keep the library's message (which
// names the argument).
template <class F>
void call_library(F&& f) {
  try {
    f();
  } catch (const mseloss::Error& e) {
    fail(std::string("mseloss: ") + e.what());
  }
}

void check_pair(const at::Tensor& input, const at::Tensor& target) {
  if (input.device() != target.device())
    fail("mseloss: target is on " + target.device().str() + " but input is on " + input.device().str());
  if (input.scalar_type() != target.scalar_type())
    fail("mseloss: target has dtype " + type_name(target) + " but input has dtype " + type_name(input) +
         " (mseloss.mse_loss promotes them; the op does not)");
}

at::ScalarType loss_type(const at::Tensor& input, std::optional<at::ScalarType> loss_dtype) {
  return loss_dtype.value_or(input.scalar_type());
}

at::Tensor new_loss(const at::Tensor& input, at::IntArrayRef shape, int64_t reduction, at::ScalarType t) {
  auto opts = input.options().dtype(t);
  return reduction == at::Reduction::None ? at::empty(shape, opts) : at::empty({}, opts);
}

// The device guard makes the input's GPU current for the library call.
struct DeviceScope {
#ifdef MSELOSS_WITH_CUDA
  std::optional<c10::cuda::CUDAGuard> guard;
  explicit DeviceScope(const at::Tensor& t) {
    if (t.is_cuda()) guard.emplace(t.device());
  }
#else
  explicit DeviceScope(const at::Tensor&) {}
#endif
};

at::Tensor mse_loss(const at::Tensor& input, const at::Tensor& target, int64_t reduction,
                    std::optional<at::ScalarType> loss_dtype) {
  check_pair(input, target);
  DeviceScope scope(input);
  const auto shape = at::infer_size(input.sizes(), target.sizes());
  at::Tensor out = new_loss(input, shape, reduction, loss_type(input, loss_dtype));
  call_library([&] {
    mseloss::forward(view_of(input, "input"), view_of(target, "target"), view_of(out, "out"),
                     options_for(input, reduction));
  });
  return out;
}

// grad_target is returned empty (shape [0]) when it is not asked for.
std::tuple<at::Tensor, at::Tensor> mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                                     const at::Tensor& target, int64_t reduction, bool with_target) {
  check_pair(input, target);
  DeviceScope scope(input);
  const auto shape = at::infer_size(input.sizes(), target.sizes());
  at::Tensor gi = at::empty(shape, input.options());
  at::Tensor gt = with_target ? at::empty(shape, input.options()) : at::empty({0}, input.options());
  call_library([&] {
    mseloss::backward(view_of(input, "input"), view_of(target, "target"), view_of(grad_output, "grad_output"),
                      view_of(gi, "grad_input"), with_target ? view_of(gt, "grad_target") : mseloss::TensorView{},
                      options_for(input, reduction));
  });
  return {gi, gt};
}

// The loss and its gradient for an upstream g = 1, in one pass.
std::tuple<at::Tensor, at::Tensor, at::Tensor> mse_loss_and_grad(const at::Tensor& input, const at::Tensor& target,
                                                                 int64_t reduction,
                                                                 std::optional<at::ScalarType> loss_dtype,
                                                                 bool with_target, double grad_scale) {
  check_pair(input, target);
  DeviceScope scope(input);
  const auto shape = at::infer_size(input.sizes(), target.sizes());
  at::Tensor out = new_loss(input, shape, reduction, loss_type(input, loss_dtype));
  at::Tensor gi = at::empty(shape, input.options());
  at::Tensor gt = with_target ? at::empty(shape, input.options()) : at::empty({0}, input.options());
  call_library([&] {
    mseloss::forward_backward(view_of(input, "input"), view_of(target, "target"), view_of(out, "out"),
                              view_of(gi, "grad_input"),
                              with_target ? view_of(gt, "grad_target") : mseloss::TensorView{}, grad_scale,
                              options_for(input, reduction));
  });
  return {out, gi, gt};
}

// grad_input (and grad_target, unless it is empty) *= grad_output, in place;
// nothing is written when grad_output is 1.
void scale_gradient_(const at::Tensor& grad_input, const at::Tensor& grad_target, const at::Tensor& grad_output) {
  DeviceScope scope(grad_input);
  const bool with_target = grad_target.numel() > 0 || grad_input.numel() == 0;
  call_library([&] {
    mseloss::scale_gradient(view_of(grad_input, "grad_input"), view_of(grad_output, "grad_output"),
                            with_target && grad_target.numel() > 0 ? view_of(grad_target, "grad_target")
                                                                   : mseloss::TensorView{},
                            options_for(grad_input, at::Reduction::Sum));
  });
}

// One shard's chunk partials (docs/numerics.md §9) as a float64 tensor, and
// with_grad, the shard's gradient of grad_scale * loss (the whole tensor's N
// for mean); grad is returned empty (shape [0]) otherwise.
std::tuple<at::Tensor, at::Tensor> shard_partials(const at::Tensor& input, const at::Tensor& target,
                                                  int64_t global_numel, int64_t offset, int64_t reduction,
                                                  bool with_grad, double grad_scale) {
  check_pair(input, target);
  DeviceScope scope(input);
  const auto shape = at::infer_size(input.sizes(), target.sizes());
  // Room for any N (the library zeroes what this shard's chunks leave), so
  // the shape is static for torch.compile and the same on every rank.
  at::Tensor partials = at::empty({mseloss::kMaxPartialsNumel}, input.options().dtype(at::kDouble));
  at::Tensor gi = with_grad ? at::empty(shape, input.options()) : at::empty({0}, input.options());
  call_library([&] {
    mseloss::shard_partials(view_of(input, "input"), view_of(target, "target"), mseloss::Shard{global_numel, offset},
                            view_of(partials, "partials"),
                            with_grad ? view_of(gi, "grad_input") : mseloss::TensorView{}, {}, grad_scale,
                            options_for(input, reduction));
  });
  return {partials, gi};
}

int64_t chunk_numel(int64_t global_numel, at::ScalarType dtype) {
  int64_t c = 0;
  call_library([&] { c = mseloss::chunk_numel(global_numel, dtype_of(dtype, "dtype")); });
  return c;
}

// The whole tensor's loss from the summed partials of its shards.
at::Tensor finish_partials(const at::Tensor& partials, int64_t global_numel, at::ScalarType dtype, int64_t reduction,
                           std::optional<at::ScalarType> loss_dtype) {
  DeviceScope scope(partials);
  at::Tensor out = at::empty({}, partials.options().dtype(loss_dtype.value_or(dtype)));
  call_library([&] {
    mseloss::finish_partials(view_of(partials, "partials"), global_numel, dtype_of(dtype, "dtype"),
                             view_of(out, "out"), options_for(partials, reduction));
  });
  return out;
}

// Autocast: PyTorch runs mse_loss in fp32, paying for two cast kernels. Here
// two 16-bit tensors of one dtype go to the kernel as they are and the loss
// comes back in fp32; anything else follows PyTorch's fp32 policy.
template <c10::DispatchKey kAutocastKey, c10::DeviceType kDevice>
at::Tensor autocast_mse_loss(const at::Tensor& input, const at::Tensor& target, int64_t reduction,
                             std::optional<at::ScalarType> loss_dtype) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(kAutocastKey);
  static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("mseloss::mse_loss", "").typed<decltype(mse_loss)>();
  const bool eligible = input.device().type() == kDevice && target.device().type() == kDevice;
  const auto t = input.scalar_type();
  if (eligible && t == target.scalar_type() && (t == at::kHalf || t == at::kBFloat16))
    return op.call(input, target, reduction, loss_dtype.value_or(at::kFloat));
  if (!eligible) return op.call(input, target, reduction, loss_dtype);
  return op.call(input.to(at::kFloat), target.to(at::kFloat), reduction, loss_dtype);
}

template <class Fn>
c10::TypedOperatorHandle<Fn> op_named(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Fn>();
}

// The training-step mode (mseloss.mse_loss(fused=True)): the forward computes
// the gradient for an upstream 1 in the same pass and saves it; backward
// scales it in place by the real upstream (nothing is launched to read or
// write when that is 1) and hands it out, so AccumulateGrad can take it
// without a copy (the engine releases the saved tensors first). A second
// backward through a retained graph, or a backward with create_graph,
// recomputes the gradient from the saved inputs with the unfused backward
// op, which refuses a double backward.
//
// Written in C++ rather than as a Python autograd.Function because a
// dispatched training step at N = 2^25 fp32 was host-bound on the H200's
// machine (Python forward and backward on the autograd engine's device
// thread): the step's GPU time is one pass, about 100 us.
struct FusedLoss : torch::autograd::Function<FusedLoss> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& target,
                            int64_t reduction, std::optional<at::ScalarType> loss_dtype) {
    static auto and_grad = op_named<decltype(mse_loss_and_grad)>("mseloss::mse_loss_and_grad");
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [loss, gi, gt] = and_grad.call(input, target, reduction, loss_dtype, ctx->needs_input_grad(1), 1.0);
    ctx->save_for_backward({input, target, gi, gt});
    ctx->saved_data["reduction"] = reduction;
    ctx->saved_data["consumed"] = false;
    return loss;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto unfused = op_named<decltype(mse_loss_backward)>("mseloss::mse_loss_backward");
    static auto scale = op_named<decltype(scale_gradient_)>("mseloss::scale_gradient_");
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &input = saved[0], &target = saved[1];
    at::Tensor gi = saved[2], gt = saved[3];
    const bool need_input = ctx->needs_input_grad(0), need_target = ctx->needs_input_grad(1);
    const at::Tensor& grad = grads[0];
    if (ctx->saved_data["consumed"].toBool() || at::GradMode::is_enabled()) {
      // Through the dispatcher's autograd: with create_graph, the result's
      // backward is the unfused op's refusal of a double backward.
      std::tie(gi, gt) = unfused.call(grad, input, target, ctx->saved_data["reduction"].toInt(), need_target);
    } else {
      ctx->saved_data["consumed"] = true;
      // Below autograd: the saved gradient's version is not bumped, so a
      // retained graph can still unpack it (and then recomputes).
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      scale.call(gi, gt, grad);
    }
    // Gradients come in the broadcast shape; a broadcast operand gets their sum.
    return {need_input ? at::sum_to(gi, input.sizes()) : at::Tensor(),
            need_target ? at::sum_to(gt, target.sizes()) : at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// mse_loss_fused at the Autograd key: the fused pass only when the loss will
// be differentiated, the plain forward otherwise.
at::Tensor mse_loss_fused_autograd(const at::Tensor& input, const at::Tensor& target, int64_t reduction,
                                   std::optional<at::ScalarType> loss_dtype) {
  if (at::GradMode::is_enabled() && (input.requires_grad() || target.requires_grad()))
    return FusedLoss::apply(input, target, reduction, loss_dtype);
  static auto plain = op_named<decltype(mse_loss)>("mseloss::mse_loss_fused");
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  return plain.call(input, target, reduction, loss_dtype);
}

}  // namespace

TORCH_LIBRARY(mseloss, m) {
  m.def("mse_loss(Tensor input, Tensor target, int reduction=1, ScalarType? loss_dtype=None) -> Tensor");
  // mse_loss with the training-step mode as its autograd (FusedLoss).
  m.def("mse_loss_fused(Tensor input, Tensor target, int reduction=1, ScalarType? loss_dtype=None) -> Tensor");
  m.def("mse_loss_backward(Tensor grad_output, Tensor input, Tensor target, int reduction, bool with_target) -> "
        "(Tensor, Tensor)");
  m.def("mse_loss_and_grad(Tensor input, Tensor target, int reduction=1, ScalarType? loss_dtype=None, "
        "bool with_target=False, float grad_scale=1.0) -> (Tensor, Tensor, Tensor)");
  m.def("scale_gradient_(Tensor(a!) grad_input, Tensor(b!) grad_target, Tensor grad_output) -> ()");
  m.def("shard_partials(Tensor input, Tensor target, int global_numel, int offset, int reduction=1, "
        "bool with_grad=False, float grad_scale=1.0) -> (Tensor, Tensor)");
  m.def("finish_partials(Tensor partials, int global_numel, ScalarType dtype, int reduction=1, "
        "ScalarType? loss_dtype=None) -> Tensor");
  m.def("chunk_numel(int global_numel, ScalarType dtype) -> int", &chunk_numel);
}

namespace {
// The same functions serve CPU and CUDA tensors: the library picks the backend.
void impl_kernels(torch::Library& m) {
  m.impl("mse_loss", &mse_loss);
  m.impl("mse_loss_fused", &mse_loss);
  m.impl("mse_loss_backward", &mse_loss_backward);
  m.impl("mse_loss_and_grad", &mse_loss_and_grad);
  m.impl("scale_gradient_", &scale_gradient_);
  m.impl("shard_partials", &shard_partials);
  m.impl("finish_partials", &finish_partials);
}
}  // namespace

TORCH_LIBRARY_IMPL(mseloss, CPU, m) { impl_kernels(m); }

TORCH_LIBRARY_IMPL(mseloss, Autograd, m) { m.impl("mse_loss_fused", &mse_loss_fused_autograd); }

#ifdef MSELOSS_WITH_CUDA
TORCH_LIBRARY_IMPL(mseloss, CUDA, m) { impl_kernels(m); }

TORCH_LIBRARY_IMPL(mseloss, AutocastCUDA, m) {
  m.impl("mse_loss", &autocast_mse_loss<c10::DispatchKey::AutocastCUDA, c10::DeviceType::CUDA>);
}
#endif

TORCH_LIBRARY_IMPL(mseloss, AutocastCPU, m) {
  m.impl("mse_loss", &autocast_mse_loss<c10::DispatchKey::AutocastCPU, c10::DeviceType::CPU>);
}
