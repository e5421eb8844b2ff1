"""mseloss.distributed against mseloss.mse_loss on the whole tensor: with 1, 2
and 4 CPU processes (gloo) every rank's loss and its piece of the gradient
have the single-process bits; with NCCL on the GPUs that are visible (one
rank per GPU; a 1-rank group where there is one GPU)."""
import os
import tempfile

import pytest

torch = pytest.importorskip("torch")
mseloss = pytest.importorskip("mseloss")
import mseloss.distributed as mdist  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

CASES = [(torch.float32, "mean", 5), (torch.float64, "sum", 3), (torch.bfloat16, "mean", 7), (torch.float16, "sum", 1)]


def _data(dtype, chunks, seed):
    c = mdist.chunk_numel(1, dtype)
    n = chunks * c + 123  # the last piece ends mid-chunk, at the end of the tensor
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g, dtype=torch.float64).to(dtype)
    y = torch.randn(n, generator=g, dtype=torch.float64).to(dtype)
    return x, y


def _pieces(n, c, world):
    k = -(-n // c)  # chunks
    bounds = [min(n, (k * r // world) * c) for r in range(world)] + [n]
    return bounds


def _worker(rank, world, backend, init_file, out_dir):
    if backend == "nccl":
        torch.cuda.set_device(rank)
    dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=world)
    device = f"cuda:{rank}" if backend == "nccl" else "cpu"
    results = []
    for i, (dtype, reduction, chunks) in enumerate(CASES):
        x, y = _data(dtype, chunks, 10 + i)
        b = _pieces(x.numel(), mdist.chunk_numel(x.numel(), dtype), world)
        xs = x[b[rank]:b[rank + 1]].to(device).requires_grad_()
        ys = y[b[rank]:b[rank + 1]].to(device).requires_grad_()
        loss = mdist.mse_loss(xs, ys, reduction=reduction)
        again = torch.autograd.grad(loss * 0.5, xs, retain_graph=True)[0]  # the saved gradient, scaled
        (loss * 0.5).backward()  # a second backward: recomputed from the piece, the same bits
        assert torch.equal(again, xs.grad), (dtype, reduction, world, rank)
        results.append((loss.detach().cpu(), xs.grad.cpu(), ys.grad.cpu()))
    torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


def _run(world, backend):
    with tempfile.TemporaryDirectory() as tmp:
        init_file = os.path.join(tmp, "init")
        mp.spawn(_worker, args=(world, backend, init_file, tmp), nprocs=world, join=True)
        per_rank = [torch.load(os.path.join(tmp, f"rank{r}.pt")) for r in range(world)]
    device = "cuda" if backend == "nccl" else "cpu"
    for i, (dtype, reduction, chunks) in enumerate(CASES):
        x, y = _data(dtype, chunks, 10 + i)
        xw, yw = x.to(device).requires_grad_(), y.to(device).requires_grad_()
        want = mseloss.mse_loss(xw, yw, reduction=reduction, fused=False)
        (want * 0.5).backward()
        b = _pieces(x.numel(), mdist.chunk_numel(x.numel(), dtype), world)
        for r in range(world):
            loss, gx, gy = per_rank[r][i]
            assert torch.equal(loss, want.detach().cpu()), (dtype, reduction, world, r)
            assert torch.equal(gx, xw.grad.cpu()[b[r]:b[r + 1]]), (dtype, reduction, world, r, "grad input")
            assert torch.equal(gy, yw.grad.cpu()[b[r]:b[r + 1]]), (dtype, reduction, world, r, "grad target")


@pytest.mark.parametrize("world", [1, 2, 4])
def test_gloo_ranks_give_the_single_process_bits(world):
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    _run(world, "gloo")


def test_nccl_ranks_give_the_single_gpu_bits():
    if not torch.cuda.is_available() or not dist.is_nccl_available():
        pytest.skip("no CUDA device or no NCCL: the NCCL test skipped")
    _run(torch.cuda.device_count(), "nccl")


def test_bad_pieces_are_refused_by_name():
    x = torch.randn(3 * mdist.chunk_numel(1, torch.float32))
    with pytest.raises(RuntimeError, match="shard.offset"):
        mdist.mse_loss(x[:100], x[:100], layout=(x.numel(), 5))
    with pytest.raises(ValueError, match="none"):
        mdist.mse_loss(x, x, reduction="none", layout=(x.numel(), 0))
