"""Fake (meta) kernels and autograd for the mseloss operators.

The kernels themselves are C++ (python/csrc/torch_ops.cpp, over the mseloss
library); nothing here computes a loss.
"""
from __future__ import annotations

import torch

# Whether mse_loss(fused=None) uses the training-step mode. Decided by
# bench/torch_bench.py: on the H200 a training step (forward + backward) took
# 134 us fused against 200 us unfused at N = 2^25 fp32, 914 against 1394 us
# at 2^28, and was faster at 2^10 and 2^20 too (docs/performance.md, "PyTorch").
FUSED_DEFAULT = True

_ops = torch.ops.mseloss


def _loss_shape(input, target, reduction):
    return torch.broadcast_shapes(input.shape, target.shape) if reduction == 0 else ()


@torch.library.register_fake("mseloss::mse_loss")
def _mse_loss_fake(input, target, reduction=1, loss_dtype=None):
    torch._check(input.dtype == target.dtype, lambda: "mseloss: input and target dtypes differ")
    return input.new_empty(_loss_shape(input, target, reduction), dtype=loss_dtype or input.dtype)


@torch.library.register_fake("mseloss::mse_loss_fused")
def _mse_loss_fused_fake(input, target, reduction=1, loss_dtype=None):
    return _mse_loss_fake(input, target, reduction, loss_dtype)


@torch.library.register_fake("mseloss::mse_loss_backward")
def _mse_loss_backward_fake(grad_output, input, target, reduction, with_target):
    shape = torch.broadcast_shapes(input.shape, target.shape)
    return input.new_empty(shape), input.new_empty(shape if with_target else (0,))


@torch.library.register_fake("mseloss::mse_loss_and_grad")
def _mse_loss_and_grad_fake(input, target, reduction=1, loss_dtype=None, with_target=False, grad_scale=1.0):
    shape = torch.broadcast_shapes(input.shape, target.shape)
    loss = input.new_empty(_loss_shape(input, target, reduction), dtype=loss_dtype or input.dtype)
    return loss, input.new_empty(shape), input.new_empty(shape if with_target else (0,))


# A shard's partials buffer has room for the most chunks any N has
# (mseloss::kMaxPartialsNumel): its shape does not depend on N.
MAX_PARTIALS = 2 * 4096


@torch.library.register_fake("mseloss::shard_partials")
def _shard_partials_fake(input, target, global_numel, offset, reduction=1, with_grad=False, grad_scale=1.0):
    shape = torch.broadcast_shapes(input.shape, target.shape)
    return input.new_empty((MAX_PARTIALS,), dtype=torch.float64), input.new_empty(shape if with_grad else (0,))


@torch.library.register_fake("mseloss::finish_partials")
def _finish_partials_fake(partials, global_numel, dtype, reduction=1, loss_dtype=None):
    return partials.new_empty((), dtype=loss_dtype or dtype)


@torch.library.register_fake("mseloss::scale_gradient_")
def _scale_gradient_fake(grad_input, grad_target, grad_output):
    return None


def _sum_to(grad, like):
    # Gradients come in the broadcast shape; a broadcast operand gets their sum.
    return grad if grad.shape == like.shape else grad.sum_to_size(like.shape)


def _setup_context(ctx, inputs, output):
    input, target, reduction = inputs[0], inputs[1], inputs[2]
    ctx.save_for_backward(input, target)
    ctx.reduction = reduction


def _backward(ctx, grad):
    input, target = ctx.saved_tensors
    need_input, need_target = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    gi, gt = _ops.mse_loss_backward(grad, input, target, ctx.reduction, need_target)
    return (_sum_to(gi, input) if need_input else None, _sum_to(gt, target) if need_target else None, None, None)


torch.library.register_autograd("mseloss::mse_loss", _backward, setup_context=_setup_context)


def _no_double_backward(ctx, *grads):
    raise RuntimeError("mseloss: double backward (a gradient of the MSE gradient) is not supported; "
                       "use torch.nn.functional.mse_loss where higher-order gradients are needed")


torch.library.register_autograd("mseloss::mse_loss_backward", _no_double_backward,
                                setup_context=lambda ctx, inputs, output: None)


def _autocast_loss_dtype(input):
    if input.dtype in (torch.float16, torch.bfloat16) and torch.is_autocast_enabled(input.device.type):
        return torch.float32  # as the autocast kernel of mse_loss does
    return None


def fused_loss(input, target, reduction):
    """The training-step mode: mseloss::mse_loss_fused, whose autograd is C++
    (FusedLoss in python/csrc/torch_ops.cpp): the gradient is computed with
    the loss and scaled in place by the real upstream in backward."""
    return _ops.mse_loss_fused(input, target, reduction, _autocast_loss_dtype(input))
