"""mseloss: mean squared error loss for PyTorch, from the mseloss C++ library.

``mse_loss`` and ``MSELoss`` are drop-in replacements for
``torch.nn.functional.mse_loss`` and ``torch.nn.MSELoss`` on CPU and CUDA
tensors of float32, float64, float16 and bfloat16. Results follow the
library's reduction order (docs/numerics.md): the same bits on every GPU,
launch configuration and on the CPU.
"""
from __future__ import annotations

import os
import warnings
from typing import Optional

import torch

torch.ops.load_library(os.path.join(os.path.dirname(__file__), "libmseloss_torch.so"))

from . import _ops  # noqa: E402  (fake kernels and autograd for the operators above)

__all__ = ["mse_loss", "mse_loss_and_grad", "MSELoss"]
__version__ = "0.1.0"

_REDUCTION_CODES = {"none": 0, "mean": 1, "sum": 2}
_SUPPORTED = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _reduction_code(reduction: str, size_average, reduce) -> int:
    if size_average is not None or reduce is not None:
        reduction = torch.nn._reduction.legacy_get_string(size_average, reduce)
    try:
        return _REDUCTION_CODES[reduction]
    except KeyError:
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def _promote(input: torch.Tensor, target: torch.Tensor):
    if input.dtype != target.dtype:
        common = torch.result_type(input, target)
        input, target = input.to(common), target.to(common)
    if input.dtype not in _SUPPORTED:
        raise NotImplementedError(
            f"mseloss.mse_loss: dtype {input.dtype} is not supported (float32, float64, float16, bfloat16)")
    return input, target


def mse_loss(input: torch.Tensor, target: torch.Tensor, size_average=None, reduce=None, reduction: str = "mean",
             weight: Optional[torch.Tensor] = None, *, fused: Optional[bool] = None) -> torch.Tensor:
    """``torch.nn.functional.mse_loss`` with mseloss's kernels.

    fused: when the loss will be differentiated (grad mode on and input or
    target requires grad), compute the gradient in the same pass as the loss
    and keep it (N values) for backward, which then only scales it by the
    incoming gradient (and skips even that when the incoming gradient is 1,
    as in ``loss.backward()``). Reads the inputs once per training step
    instead of twice. ``None`` takes the default, ``mseloss._ops.FUSED_DEFAULT``
    (on). Used for reduction 'mean' and 'sum', outside torch.compile; costs N
    values of memory from the forward to the backward (the gradient, which
    backward then hands out as it is).
    """
    if weight is not None:
        raise NotImplementedError("mseloss.mse_loss: weight is not supported; use torch.nn.functional.mse_loss")
    if not isinstance(input, torch.Tensor) or not isinstance(target, torch.Tensor):
        raise TypeError("mseloss.mse_loss: input and target must be tensors")
    if target.size() != input.size():
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
            "This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=2,
        )
    code = _reduction_code(reduction, size_average, reduce)
    input, target = _promote(input, target)
    if fused is None:
        fused = _ops.FUSED_DEFAULT
    # Under torch.compile the unfused pair of ops is traced: the fused mode
    # keeps Python state (the saved gradient is handed out once) between its
    # forward and backward, which a compiled graph does not replay.
    if (fused and code != 0 and torch.is_grad_enabled() and (input.requires_grad or target.requires_grad)
            and not torch.compiler.is_compiling()):
        return _ops.fused_loss(input, target, code)
    return torch.ops.mseloss.mse_loss(input, target, code)


def mse_loss_and_grad(input: torch.Tensor, target: torch.Tensor, reduction: str = "mean", grad_scale: float = 1.0,
                      with_target: bool = False):
    """The loss and d(grad_scale * loss)/d(input) in one pass, without autograd.

    Returns ``(loss, grad_input)``, or ``(loss, grad_input, grad_target)`` with
    ``with_target``. Gradients have the broadcast shape of input and target.
    """
    code = _reduction_code(reduction, None, None)
    input, target = _promote(input, target)
    loss, gi, gt = torch.ops.mseloss.mse_loss_and_grad(input, target, code, None, with_target, float(grad_scale))
    return (loss, gi, gt) if with_target else (loss, gi)


class MSELoss(torch.nn.Module):
    """``torch.nn.MSELoss`` with mseloss's kernels (see ``mse_loss`` for ``fused``)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", *, fused: Optional[bool] = None):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = torch.nn._reduction.legacy_get_string(size_average, reduce)
        _reduction_code(reduction, None, None)
        self.reduction = reduction
        self.fused = fused

    def forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return mse_loss(input, target, reduction=self.reduction, fused=self.fused)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}" + ("" if self.fused is None else f", fused={self.fused}")
