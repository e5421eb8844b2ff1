"""The PyTorch operators against torch.nn.functional.mse_loss and a float64
reference, on CPU and (where present) CUDA. Skips cleanly without torch or
without the built package."""
import math
import warnings

import pytest

torch = pytest.importorskip("torch")
mseloss = pytest.importorskip("mseloss")
F = torch.nn.functional

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
REDUCTIONS = ["mean", "sum", "none"]
SHAPES = [(1,), (7,), (1001,), (3, 5, 7), (64, 257), (0,), ()]


def devices():
    out = ["cpu"]
    if torch.cuda.is_available():
        out.append("cuda")
    return out


DEVICES = pytest.mark.parametrize("device", devices())
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: GPU tests skipped")

# Tolerances for a result rounded once to the dtype (the library is within one
# ulp of the exact value) against a float64 reference.
RTOL = {torch.float32: 3e-7, torch.float64: 1e-15, torch.float16: 1.5e-3, torch.bfloat16: 1e-2}


def rand(shape, dtype, device, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype).to(device)


def reference(x, y, reduction):
    d = x.double() - y.double()
    sq = d * d
    return {"mean": sq.mean() if sq.numel() else torch.tensor(math.nan, dtype=torch.float64),
            "sum": sq.sum(), "none": sq}[reduction]


@DEVICES
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_matches_float64_reference(device, dtype, reduction, shape):
    x, y = rand(shape, dtype, device, 1), rand(shape, dtype, device, 2)
    out = mseloss.mse_loss(x, y, reduction=reduction)
    want = F.mse_loss(x, y, reduction=reduction)
    assert out.dtype == want.dtype and out.shape == want.shape and out.device == want.device
    ref = reference(x, y, reduction).to(device)
    if reduction == "none":
        # d = fl(x - y), fl(d * d) in the compute type (fp32 for 16-bit inputs),
        # rounded once to the dtype: equal bits to that formula in torch ops.
        c = torch.float64 if dtype == torch.float64 else torch.float32
        d = x.to(c) - y.to(c)
        assert torch.equal(out, (d * d).to(dtype))
        # PyTorch's CPU kernel squares 16-bit values in 16 bits: close, not equal.
        torch.testing.assert_close(out, want, rtol=2 * RTOL[dtype], atol=1e-5)
    elif x.numel() == 0:
        assert math.isnan(out.item()) if reduction == "mean" else out.item() == 0.0
    else:
        # float16/bfloat16 inputs: d is rounded to fp32 before squaring, so the
        # fp64 reference of the exact inputs is exact up to that rounding.
        torch.testing.assert_close(out.double(), ref, rtol=RTOL[dtype], atol=0)


@DEVICES
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gradients_for_input_and_target(device, dtype, reduction):
    x = rand((33, 65), dtype, device, 3).requires_grad_()
    y = rand((33, 65), dtype, device, 4).requires_grad_()
    g = rand((33, 65), dtype, device, 5) if reduction == "none" else torch.tensor(0.75, dtype=dtype, device=device)
    gx, gy = torch.autograd.grad(mseloss.mse_loss(x, y, reduction=reduction), (x, y), g)
    rx, ry = torch.autograd.grad(F.mse_loss(x, y, reduction=reduction), (x, y), g)
    assert gx.dtype == dtype and gx.shape == x.shape
    tol = dict(rtol=2 * RTOL[dtype], atol=1e-30 if dtype == torch.float64 else 1e-6)
    torch.testing.assert_close(gx, rx, **tol)
    torch.testing.assert_close(gy, ry, **tol)
    assert torch.equal(gy, -gx)


@DEVICES
def test_broadcasting_warns_like_pytorch_and_reduces_gradients(device):
    x = rand((4, 1, 5), torch.float32, device, 6).requires_grad_()
    y = rand((3, 5), torch.float32, device, 7).requires_grad_()
    with pytest.warns(UserWarning, match="different to the input size"):
        out = mseloss.mse_loss(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = F.mse_loss(x, y)
    torch.testing.assert_close(out, want)
    gx, gy = torch.autograd.grad(out, (x, y))
    rx, ry = torch.autograd.grad(want, (x, y))
    assert gx.shape == x.shape and gy.shape == y.shape
    torch.testing.assert_close(gx, rx)
    torch.testing.assert_close(gy, ry)


@DEVICES
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_non_contiguous_inputs(device, dtype):
    base = rand((200, 301), dtype, device, 8)
    other = rand((301, 200), dtype, device, 9)
    x, y = base[:, ::2], other.t()[:, ::2]  # a strided slice and a transposed one
    assert not x.is_contiguous() and not y.is_contiguous()
    for r in REDUCTIONS:
        out = mseloss.mse_loss(x, y, reduction=r)
        # The same bits as on contiguous copies: the order depends on the data alone.
        assert torch.equal(out, mseloss.mse_loss(x.contiguous(), y.contiguous(), reduction=r))


@DEVICES
def test_nan_and_inf_propagate_as_in_pytorch(device):
    x = torch.tensor([1.0, math.nan, math.inf, 2.0, -math.inf], device=device)
    y = torch.tensor([0.5, 1.0, math.inf, math.inf, 3.0], device=device)
    torch.testing.assert_close(mseloss.mse_loss(x, y, reduction="none"), F.mse_loss(x, y, reduction="none"),
                               equal_nan=True)
    assert math.isnan(mseloss.mse_loss(x, y).item())
    big = torch.full((10,), 3e38, device=device)
    assert mseloss.mse_loss(big, -big).item() == math.inf  # squares overflow fp32: inf, as PyTorch


@DEVICES
def test_bad_input_gives_pytorch_like_errors(device):
    x = torch.randn(4, device=device)
    with pytest.raises(RuntimeError, match="must match the size"):
        mseloss.mse_loss(x, torch.randn(3, device=device))
    with pytest.raises(NotImplementedError):
        mseloss.mse_loss(x.int(), x.int())
    with pytest.raises(ValueError, match="reduction"):
        mseloss.mse_loss(x, x, reduction="avg")
    with pytest.raises(NotImplementedError, match="weight"):
        mseloss.mse_loss(x, x, weight=x)
    with pytest.raises(RuntimeError, match="at most 8"):
        mseloss.mse_loss(torch.randn([1] * 9, device=device), torch.randn([1] * 9, device=device))


@CUDA
def test_input_and_target_on_different_devices_are_refused():
    with pytest.raises(RuntimeError, match="target"):
        mseloss.mse_loss(torch.randn(4), torch.randn(4, device="cuda"))


@DEVICES
def test_mixed_dtypes_promote_like_pytorch(device):
    x, y = torch.randn(100, device=device), torch.randn(100, device=device).half()
    out = mseloss.mse_loss(x, y)
    assert out.dtype == F.mse_loss(x, y).dtype == torch.float32
    torch.testing.assert_close(out, F.mse_loss(x, y))


@DEVICES
@pytest.mark.parametrize("fused", [True, False])
def test_double_backward_is_refused_clearly(device, fused):
    x = rand((10,), torch.float64, device, 10).requires_grad_()
    y = rand((10,), torch.float64, device, 11)
    (gx,) = torch.autograd.grad(mseloss.mse_loss(x, y, fused=fused), x, create_graph=True)
    (want,) = torch.autograd.grad(F.mse_loss(x, y), x)
    torch.testing.assert_close(gx, want, rtol=1e-15, atol=0)
    with pytest.raises(RuntimeError, match="double backward"):
        gx.sum().backward()


@DEVICES
def test_training_step_mode_is_the_default(device):
    x = rand((1000,), torch.float32, device, 23).requires_grad_()
    y = rand((1000,), torch.float32, device, 24)
    loss = mseloss.mse_loss(x, y)
    assert "FusedLoss" in loss.grad_fn.name()
    assert "FusedLoss" not in mseloss.mse_loss(x, y, fused=False).grad_fn.name()
    assert mseloss.mse_loss(x.detach(), y).grad_fn is None  # nothing to differentiate: the plain forward
    loss.backward()
    (want,) = torch.autograd.grad(mseloss.mse_loss(x, y, fused=False), x)
    assert torch.equal(x.grad, want)


@DEVICES
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gradcheck_fp64(device, reduction):
    x = rand((5, 7), torch.float64, device, 12).requires_grad_()
    y = rand((7,), torch.float64, device, 13).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.autograd.gradcheck(lambda a, b: mseloss.mse_loss(a, b, reduction=reduction), (x, y))
        assert torch.autograd.gradcheck(lambda a, b: mseloss.mse_loss(a, b, reduction=reduction, fused=True), (x, y))


@DEVICES
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_opcheck_every_operator(device, dtype):
    x, y = rand((3, 17), dtype, device, 14), rand((3, 17), dtype, device, 15)
    ops = torch.ops.mseloss
    for r in (0, 1, 2):
        torch.library.opcheck(ops.mse_loss.default, (x, y, r))
        torch.library.opcheck(ops.mse_loss.default, (x.requires_grad_(), y, r))
        x = x.detach()
        g = torch.randn((3, 17) if r == 0 else (), dtype=dtype, device=device)
        torch.library.opcheck(ops.mse_loss_backward.default, (g, x, y, r, True))
        torch.library.opcheck(ops.mse_loss_and_grad.default, (x, y, r, None, True, 0.5))
        if r != 0:
            torch.library.opcheck(ops.mse_loss_fused.default, (x.requires_grad_(), y.requires_grad_(), r))
            x, y = x.detach(), y.detach()
    torch.library.opcheck(ops.scale_gradient_.default, (x.clone(), y.clone(), torch.tensor(0.5, dtype=dtype, device=device)))


@DEVICES
def test_fused_mode_gives_the_unfused_bits(device):
    x = rand((1000, 33), torch.float32, device, 16).requires_grad_()
    y = rand((1000, 33), torch.float32, device, 17).requires_grad_()
    for r in ("mean", "sum"):
        a = mseloss.mse_loss(x, y, reduction=r, fused=True)
        b = mseloss.mse_loss(x, y, reduction=r, fused=False)
        assert torch.equal(a, b), "the fused loss has the forward's bits"
        ga = torch.autograd.grad(a, (x, y))
        gb = torch.autograd.grad(b, (x, y))
        assert torch.equal(ga[0], gb[0]) and torch.equal(ga[1], gb[1]), "upstream 1: the same gradient bits"
        a = mseloss.mse_loss(x, y, reduction=r, fused=True)
        ga = torch.autograd.grad(a * 0.3, x)  # a real upstream: scaled in place, within an ulp
        gb = torch.autograd.grad(mseloss.mse_loss(x, y, reduction=r) * 0.3, x)
        torch.testing.assert_close(ga[0], gb[0], rtol=3e-7, atol=0)


def test_cpu_threads_come_from_torch_and_never_change_the_bits():
    # CPU tensors: the op runs its tasks on torch's intra-op pool, as many as
    # torch.get_num_threads() (one per 2^19 elements at most). Three threads and
    # one must give the same bits, as must the library's own threads (the C++
    # test CpuThreads checks those against a caller's task runner).
    n = 3 * 2**19 + 7
    x = rand((n,), torch.float32, "cpu", 31).requires_grad_()
    y = rand((n,), torch.float32, "cpu", 32)
    before = torch.get_num_threads()
    results = []
    try:
        for threads in (1, 3):
            torch.set_num_threads(threads)
            loss, grad = mseloss.mse_loss_and_grad(x.detach(), y)
            x.grad = None
            mseloss.mse_loss(x, y).backward()
            results.append((loss, grad, x.grad.clone()))
    finally:
        torch.set_num_threads(before)
    (l1, g1, a1), (l3, g3, a3) = results
    assert torch.equal(l1, l3) and torch.equal(g1, g3) and torch.equal(a1, a3)
    assert torch.equal(g1, a1), "the one-pass gradient is autograd's"
    torch.testing.assert_close(l1.double(), reference(x.detach().double(), y.double(), "mean"), rtol=3e-7, atol=0)


@DEVICES
def test_fused_mode_hands_out_its_gradient_without_a_copy(device):
    # The saved gradient goes to x.grad as it is: no backward kernel, no
    # scaling for an upstream 1, and no copy by AccumulateGrad (which copies
    # when anything else still holds the tensor).
    x = rand((4096,), torch.float32, device, 25).requires_grad_()
    y = rand((4096,), torch.float32, device, 26)
    loss = mseloss.mse_loss(x, y, fused=True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        loss.backward()
    names = {e.name for e in prof.events()}
    assert "mseloss::scale_gradient_" in names, names  # the profiler did see the backward
    assert not any(n in names for n in ("aten::clone", "aten::copy_", "mseloss::mse_loss_backward")), names
    (want,) = torch.autograd.grad(mseloss.mse_loss(x, y, fused=False), x)
    assert torch.equal(x.grad, want)


@DEVICES
def test_fused_mode_backpropagates_twice_with_retain_graph(device):
    x = rand((100,), torch.float32, device, 18).requires_grad_()
    loss = mseloss.mse_loss(x, torch.zeros_like(x), fused=True)
    loss.backward(retain_graph=True)
    first = x.grad.clone()
    loss.backward()  # recomputed from the saved inputs: the same bits
    assert torch.equal(x.grad, 2 * first)


def test_cpu_and_cuda_give_identical_bits():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: GPU tests skipped")
    for dtype in DTYPES:
        x, y = rand((1 << 20) + 3, dtype, "cpu", 19), rand((1 << 20) + 3, dtype, "cpu", 20)
        for r in REDUCTIONS:
            assert torch.equal(mseloss.mse_loss(x, y, reduction=r).cuda(), mseloss.mse_loss(x.cuda(), y.cuda(), reduction=r))


@CUDA
def test_runs_on_the_current_stream_without_host_sync():
    x, y = torch.randn(1 << 22, device="cuda"), torch.randn(1 << 22, device="cuda")
    want = mseloss.mse_loss(x, y)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        out = mseloss.mse_loss(x, y)
    s.synchronize()
    assert torch.equal(out, want)
    g = torch.cuda.CUDAGraph()  # capturable: no sync, no allocation outside the graph pool
    with torch.cuda.graph(g):
        captured = mseloss.mse_loss(x, y)
    x.add_(1.0)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, mseloss.mse_loss(x, y))


@CUDA
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_autocast_takes_16_bit_inputs_without_casts(dtype):
    x, y = torch.randn(4096, device="cuda", dtype=dtype), torch.randn(4096, device="cuda", dtype=dtype)
    with torch.autocast("cuda", dtype=dtype):
        want = F.mse_loss(x, y)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            out = mseloss.mse_loss(x, y)
    names = {e.name for e in prof.events()}
    assert not any(n in names for n in ("aten::to", "aten::_to_copy", "aten::copy_")), names
    assert out.dtype == torch.float32 == want.dtype
    torch.testing.assert_close(out, want, rtol=1e-5, atol=0)
    xr = x.clone().requires_grad_()
    with torch.autocast("cuda", dtype=dtype):
        loss = mseloss.mse_loss(xr, y)
    assert "FusedLoss" in loss.grad_fn.name() and loss.dtype == torch.float32
    loss.backward()
    assert xr.grad.dtype == dtype


def test_autocast_cpu_bfloat16():
    x, y = torch.randn(1000, dtype=torch.bfloat16), torch.randn(1000, dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = mseloss.mse_loss(x, y)
        want = F.mse_loss(x, y)
    assert out.dtype == want.dtype == torch.float32
    torch.testing.assert_close(out, want, rtol=1e-5, atol=0)


@DEVICES
def test_torch_compile_fullgraph_dynamic(device):
    torch._dynamo.reset()

    def step(a, b):
        return mseloss.mse_loss(a, b) * 2.0

    compiled = torch.compile(step, fullgraph=True, dynamic=True)
    for n in (1000, 4097, 65536):
        x = rand((n,), torch.float32, device, n).requires_grad_()
        y = rand((n,), torch.float32, device, n + 1)
        out = compiled(x, y)
        assert torch.equal(out, step(x, y))
        (g,) = torch.autograd.grad(out, x)
        (w,) = torch.autograd.grad(step(x, y), x)
        assert torch.equal(g, w)


def test_module_matches_nn_mseloss():
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    for r in REDUCTIONS:
        torch.testing.assert_close(mseloss.MSELoss(reduction=r)(x, y), torch.nn.MSELoss(reduction=r)(x, y))
    with pytest.raises(ValueError):
        mseloss.MSELoss(reduction="bad")


@DEVICES
def test_mse_loss_and_grad_is_one_pass_of_loss_and_gradient(device):
    x, y = rand((5000,), torch.float32, device, 21), rand((5000,), torch.float32, device, 22)
    loss, gx, gy = mseloss.mse_loss_and_grad(x, y, grad_scale=0.5, with_target=True)
    xr = x.clone().requires_grad_()
    (w,) = torch.autograd.grad(mseloss.mse_loss(xr, y), xr, torch.tensor(0.5, device=device))
    assert torch.equal(loss, mseloss.mse_loss(x, y))
    assert torch.equal(gx, w) and torch.equal(gy, -w)
