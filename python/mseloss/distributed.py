"""The MSE loss of a tensor sharded over the ranks of a torch.distributed group.

Each rank holds a piece of the whole tensor (pieces are consecutive ranges of
its row-major order, in rank order) and gets the loss of the whole tensor,
bit for bit what ``mseloss.mse_loss`` gives on it on one device, for any
number of ranks (docs/numerics.md §9). Each rank reduces its piece's chunks
to partials, one ``all_reduce`` sums the partial buffers (64 KiB of float64;
every slot is non-zero on one rank at most, so the sum is exact in any
order), and each rank finishes them. Works with the NCCL backend (CUDA
tensors) and gloo (CPU tensors).
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch
import torch.distributed as dist

from . import _ops  # noqa: F401  (registers the operators' fake kernels)
from . import _promote, _reduction_code

_ops_ns = torch.ops.mseloss


def shard_layout(local_numel: int, group=None, device=None) -> tuple:
    """(global_numel, offset) of this rank's piece when the ranks hold
    consecutive pieces in rank order: all-gathers the element counts (one host
    synchronisation; compute it once when shapes do not change)."""
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    mine = torch.tensor([local_numel], dtype=torch.int64, device=device)
    sizes = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(sizes, mine, group=group)
    sizes = [int(s.item()) for s in sizes]
    return sum(sizes), sum(sizes[:rank])


class _ShardLoss(torch.autograd.Function):
    """The piece's gradient is computed with its partials (for an upstream 1,
    the whole tensor's N) and scaled in place by the incoming gradient in
    backward, as the training-step mode of mseloss.mse_loss does; a second
    backward through the graph (retain_graph) recomputes it from the piece."""

    @staticmethod
    def forward(ctx, input, target, global_numel, offset, reduction, group):
        with_grad = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        partials, grad = _ops_ns.shard_partials(input, target, global_numel, offset, reduction, with_grad, 1.0)
        dist.all_reduce(partials, op=dist.ReduceOp.SUM, group=group)
        ctx.save_for_backward(input, target, grad)
        ctx.layout = (global_numel, offset, reduction)
        ctx.consumed = False
        return _ops_ns.finish_partials(partials, global_numel, input.dtype, reduction)

    @staticmethod
    def backward(ctx, grad_loss):
        input, target, grad = ctx.saved_tensors
        if ctx.consumed:  # the saved gradient was handed out: the piece's alone, no communication
            _, grad = _ops_ns.shard_partials(input, target, *ctx.layout, True, 1.0)
        ctx.consumed = True
        _ops_ns.scale_gradient_(grad, grad.new_empty((0,)), grad_loss)  # nothing is done for an upstream 1
        gi = _ops._sum_to(grad, input) if ctx.needs_input_grad[0] else None
        gt = _ops._sum_to(-grad, target) if ctx.needs_input_grad[1] else None
        return gi, gt, None, None, None, None


def mse_loss(input: torch.Tensor, target: torch.Tensor, reduction: str = "mean", group=None,
             layout: Optional[Sequence[int]] = None) -> torch.Tensor:
    """The whole tensor's loss from this rank's piece of input and target.

    layout: ``(global_numel, offset)`` of this piece; by default it is
    all-gathered from the pieces' sizes (``shard_layout``). Pieces must start
    at multiples of the chunk size of the whole tensor (``mseloss.chunk_numel``)
    and end on one or at the end; otherwise an error says which. reduction:
    'mean' or 'sum' ('none' needs no communication: use ``mseloss.mse_loss``
    on each piece). Gradients reach each rank's piece.
    """
    code = _reduction_code(reduction, None, None)
    if code == 0:
        raise ValueError("mseloss.distributed.mse_loss: reduction 'none' needs no communication; "
                         "use mseloss.mse_loss on each piece")
    input, target = _promote(input, target)
    if layout is None:
        n = torch.broadcast_shapes(input.shape, target.shape).numel()
        layout = shard_layout(n, group, input.device if input.is_cuda else None)
    global_numel, offset = layout
    return _ShardLoss.apply(input, target, int(global_numel), int(offset), code, group)


def chunk_numel(global_numel: int, dtype: torch.dtype) -> int:
    """Elements per chunk of a whole tensor of ``global_numel`` elements of
    ``dtype``: the pieces' boundaries must be multiples of it."""
    return _ops_ns.chunk_numel(global_numel, dtype)
