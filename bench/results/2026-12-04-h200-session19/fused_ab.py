"""Session 19 A/B: the training-step mode's autograd as a Python
autograd.Function (sessions 12-18, re-created here over the same operators)
against the C++ FusedLoss (mseloss.mse_loss(fused=True) since session 19),
timed as torch_bench's "full" and "full_graph" modes, interleaved, in one
process. Eager F.mse_loss and mse_loss_and_grad (no autograd) are the peers."""
import statistics, sys, time
import torch
import torch.nn.functional as F
import mseloss
from mseloss import _ops as O

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "bench")
import torch_bench as tb  # stats_us, graph_step_us


class PyFused(torch.autograd.Function):  # the session 18 code, verbatim in effect
    @staticmethod
    def forward(ctx, input, target, reduction):
        with_target = ctx.needs_input_grad[1]
        loss, gi, gt = O._ops.mse_loss_and_grad(input, target, reduction, O._autocast_loss_dtype(input), with_target, 1.0)
        ctx.save_for_backward(input, target, gi, gt)
        ctx.reduction = reduction
        ctx.consumed = False
        return loss

    @staticmethod
    def backward(ctx, grad):
        input, target, gi, gt = ctx.saved_tensors
        need_input, need_target = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        if ctx.consumed or torch.is_grad_enabled():
            gi, gt = O._ops.mse_loss_backward(grad, input, target, ctx.reduction, need_target)
        else:
            ctx.consumed = True
            O._ops.scale_gradient_(gi, gt, grad)
        return (O._sum_to(gi, input) if need_input else None, O._sum_to(gt, target) if need_target else None, None)


cpp_fused_loss = O.fused_loss


def through_mse_loss(fused_loss):
    # Both go through mseloss.mse_loss (its checks and dispatch), which calls
    # _ops.fused_loss: swapped here for the variant under test.
    def call(a, b):
        O.fused_loss = fused_loss
        return mseloss.mse_loss(a, b, fused=True)
    return call


impls = {"eager": F.mse_loss, "python_fused": through_mse_loss(PyFused.apply), "cpp_fused": through_mse_loss(cpp_fused_loss)}
for n in (1 << 10, 1 << 20, 1 << 25):
    sets = max(1, min(16, (512 << 20) // (2 * n * 4)))
    xg = [torch.randn(n, device="cuda").requires_grad_() for _ in range(sets)]
    ys = [torch.randn(n, device="cuda") for _ in range(sets)]
    k = [0]
    for rep in range(3):
        for name, fn in impls.items():
            def step():
                k[0] = (k[0] + 1) % sets
                xg[k[0]].grad = None
                fn(xg[k[0]], ys[k[0]]).backward()
            med, p20, p80 = tb.stats_us(step, 30)
            print(f"full       {name:13s} n={n:>9d} rep{rep} {med:8.2f} us (p20 {p20:.2f}, p80 {p80:.2f})", flush=True)
        if rep == 0:
            for name, fn in impls.items():
                med, p20, p80 = tb.graph_step_us(fn, xg, ys, 30)
                print(f"full_graph {name:13s} n={n:>9d}      {med:8.2f} us (p20 {p20:.2f}, p80 {p80:.2f})", flush=True)

            def one_pass():
                k[0] = (k[0] + 1) % sets
                mseloss.mse_loss_and_grad(xg[k[0]].detach(), ys[k[0]])
            med, p20, p80 = tb.stats_us(one_pass, 30)
            print(f"full       {'and_grad':13s} n={n:>9d}      {med:8.2f} us (p20 {p20:.2f}, p80 {p80:.2f})", flush=True)
    # Host time per step, calls queued without syncing (the step's wall time).
    for name, fn in impls.items():
        per = []
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(200):
                xg[0].grad = None
                fn(xg[0], ys[0]).backward()
            per.append((time.perf_counter() - t0) / 200 * 1e6)
        torch.cuda.synchronize()
        print(f"wall/step  {name:13s} n={n:>9d}      {statistics.median(per):8.2f} us", flush=True)
    del xg, ys
