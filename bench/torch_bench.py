"""The PyTorch operators against their peers on one GPU, in one run.

Modes: forward (mean), backward (the loss's backward alone) and full (a
training step on the loss: forward + backward). Peers: eager F.mse_loss,
torch.compile(F.mse_loss), and the seed's two Triton designs written for this
comparison (baseline: grid = ceil(N / BLOCK), one tl.atomic_add per program;
optimised: grid = SM count, grid-strided loop, the seed's BLOCK_SIZE table,
tl.store of per-program partials, then a sum of the partials). Ceiling: a
device-to-device copy of the same bytes, measured in the same run.

Modes: forward, backward, full (forward + backward, eager dispatch: pays the
host time of each step when it exceeds the GPU time) and full_graph (the same
step captured in a CUDA graph and replayed: device time alone). For N <= 2^20,
forward_graph and forward_graph_l2 replay 16 forward calls captured in one
graph, reading the input sets in turn (DRAM) or one set (L2).

Timing: CUDA events around 10 back-to-back calls (per-call time = elapsed / 10),
warm-up, median with p20/p80 of many samples; inputs rotate over several sets so that every call reads DRAM, not L2.
Each sample starts after a 50 us GPU spin, so the first call's host time is not counted.
host_us: the median host (wall) time per call to queue a sample's calls. Where it is about
the per-call GPU time or more, the row is bound by the host (Python, dispatch, the autograd
engine), not by the GPU.
Host overhead: wall time per call at N = 2^10, calls queued back to back.

    python3 bench/torch_bench.py [--sizes 2^10..2^28] [--csv out.csv] [--plot out.png]
"""
import argparse
import csv
import statistics
import sys
import time

import torch
import torch._functorch.config
import torch.nn.functional as F
import triton
import triton.language as tl

import mseloss


@triton.jit
def _seed_atomic(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    d = tl.load(x_ptr + offs, mask=m, other=0).to(tl.float32) - tl.load(y_ptr + offs, mask=m, other=0).to(tl.float32)
    tl.atomic_add(out_ptr, tl.sum(d * d, axis=0))


@triton.jit
def _seed_gridstride_store(x_ptr, y_ptr, part_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(pid * BLOCK, n, tl.num_programs(0) * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        d = tl.load(x_ptr + offs, mask=m, other=0).to(tl.float32) - tl.load(y_ptr + offs, mask=m, other=0).to(tl.float32)
        acc += d * d
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


def seed_block(n, optimised):  # the seed's BLOCK_SIZE table
    for limit, base, opt in ((16 << 10, 256, 1024), (128 << 10, 512, 2048), (4 << 20, 512, 4096)):
        if n <= limit:
            return opt if optimised else base
    return 8192 if optimised else 1024


SMS = None


def triton_baseline(x, y):
    n = x.numel()
    out = torch.zeros((), device=x.device, dtype=torch.float32)
    block = seed_block(n, False)
    _seed_atomic[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    return out / n


def triton_optimised(x, y):
    n = x.numel()
    part = torch.empty(SMS, device=x.device, dtype=torch.float32)
    _seed_gridstride_store[(SMS,)](x, y, part, n, BLOCK=seed_block(n, True))
    return part.sum() / n


REPS = 10  # calls per timed sample: back to back, so the GPU queue stays fed as in a training loop
LEAD_CYCLES = 100_000  # GPU clock cycles spun before each sample: about 50 us at the H200's 1.98 GHz


def stats_us(fn, runs, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times, host = [], []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        # The GPU spins for about 50 us before the first event, so the host
        # has queued the first call when the GPU reaches it: a sample no
        # longer starts with the GPU idle for one call's host time (as in the
        # C++ bench). Later calls still wait for the host if it is slower.
        torch.cuda._sleep(LEAD_CYCLES)
        a.record()
        t0 = time.perf_counter()
        for _ in range(REPS):
            fn()
        host.append((time.perf_counter() - t0) * 1e6 / REPS)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / REPS)
    q = statistics.quantiles(times, n=10)
    return statistics.median(times), q[1], q[7], statistics.median(host)  # median, p20, p80; host


def graph_replay_us(body, calls, runs):
    """Median (p20, p80, host) per-call time of body(), which makes `calls` calls,
    captured once into a CUDA graph (after warm-up on a side stream) and
    replayed: device time alone."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()
    t = stats_us(g.replay, runs)
    return tuple(v / calls for v in t)


def graph_step_us(fn, xg, ys, runs):
    """Per-step time of fn(x, y).backward() over the input sets, graph-replayed."""
    def steps():
        for x, y in zip(xg, ys):
            x.grad = None
            fn(x, y).backward()
    return graph_replay_us(steps, len(xg), runs)


def graph_forward_us(fn, xs, ys, runs, calls=16):
    """Per-call time of `calls` forward calls, graph-replayed. Calls walk the
    input sets in turn: with one set, every call after the first reads inputs
    that L2 holds."""
    def forwards():
        for i in range(calls):
            fn(xs[i % len(xs)], ys[i % len(ys)])
    return graph_replay_us(forwards, calls, runs)


def parse_sizes(text):
    if ".." in text:
        lo, hi = (int(eval(s.replace("^", "**"))) for s in text.split(".."))
        out, n = [], lo
        while n <= hi:
            out.append(n)
            n *= 4
        return out
    return [int(eval(s.replace("^", "**"))) for s in text.split(",")]


def main():
    global SMS
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2^10..2^28")
    ap.add_argument("--dtypes", default="float32,bfloat16,float16")
    ap.add_argument("--full-dtypes", default="float32")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--csv", default="")
    ap.add_argument("--plot", default="")
    args = ap.parse_args()
    SMS = torch.cuda.get_device_properties(0).multi_processor_count
    # The backward mode re-runs one graph's backward (retain_graph), which
    # compiled graphs refuse while they donate buffers.
    torch._functorch.config.donated_buffer = False
    # One specialised graph per shape and dtype, compiled in the warm-up.
    torch._dynamo.config.cache_size_limit = 256
    compiled = torch.compile(F.mse_loss, dynamic=False)
    impls_fwd = {
        "eager": F.mse_loss,
        "compile": compiled,
        "mseloss": mseloss.mse_loss,
        "triton_seed_baseline": triton_baseline,
        "triton_seed_optimised": triton_optimised,
    }
    impls_train = {
        "eager": F.mse_loss,
        "compile": compiled,
        "mseloss": lambda a, b: mseloss.mse_loss(a, b, fused=False),
        "mseloss_fused": lambda a, b: mseloss.mse_loss(a, b, fused=True),
    }
    rows = []
    fields = ["mode", "impl", "dtype", "n", "us", "p20_us", "p80_us", "host_us", "gbps", "copy_us", "vs_copy"]
    out = open(args.csv, "w", newline="") if args.csv else None
    writer = csv.DictWriter(out, fieldnames=fields) if out else None
    if writer:
        writer.writeheader()

    def keep(row):  # rows go to the CSV as they come, so a cut-short run keeps them
        rows.append(row)
        if writer:
            writer.writerow(row)
            out.flush()

    def record(mode, impl, dtype, n, bytes_moved, t, copy_us):
        med, p20, p80, host = t
        keep(dict(mode=mode, impl=impl, dtype=str(dtype).replace("torch.", ""), n=n, us=round(med, 3),
                  p20_us=round(p20, 3), p80_us=round(p80, 3), host_us=round(host, 3),
                  gbps=round(bytes_moved / med / 1e3, 1),
                  copy_us=round(copy_us, 3), vs_copy=round(copy_us / med, 3)))
        r = rows[-1]
        print(f"{mode:9s} {impl:22s} {r['dtype']:9s} {n:>10d} {med:10.2f} us  {r['gbps']:8.1f} GB/s  "
              f"x copy {r['vs_copy']:.3f}  host {host:8.2f} us", flush=True)

    # Host overhead per call at N = 2^10 (calls queued without syncing).
    x, y = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    for name, fn in (("eager", F.mse_loss), ("mseloss", mseloss.mse_loss)):
        for _ in range(200):
            fn(x, y)
        torch.cuda.synchronize()
        per = []
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(1000):
                fn(x, y)
            per.append((time.perf_counter() - t0) * 1e3)  # ms per 1000 calls = us per call
            torch.cuda.synchronize()
        med = statistics.median(per)
        keep(dict(mode="host_overhead", impl=name, dtype="float32", n=1024, us=round(med, 3), p20_us="",
                  p80_us="", host_us=round(med, 3), gbps="", copy_us="", vs_copy=""))
        print(f"host_overhead {name:10s} {med:.2f} us per call", flush=True)

    for dname in args.dtypes.split(","):
        dtype = getattr(torch, dname)
        es = torch.finfo(dtype).bits // 8
        for n in parse_sizes(args.sizes):
            sets = max(1, min(16, (512 << 20) // (2 * n * es)))
            xs = [torch.randn(n, device="cuda", dtype=dtype) for _ in range(sets)]
            ys = [torch.randn(n, device="cuda", dtype=dtype) for _ in range(sets)]
            dst = torch.empty((3 * n) // 2 + 1, device="cuda", dtype=dtype)
            src = torch.randn((3 * n) // 2 + 1, device="cuda", dtype=dtype)
            k = [0]

            def nxt():
                k[0] = (k[0] + 1) % sets
                return k[0]

            # Ceiling for the forward: a copy of N elements moves the 2N it reads.
            copy_fwd = stats_us(lambda: dst[:n].copy_(xs[nxt()]), args.runs)[0]
            for name, fn in impls_fwd.items():
                def call():
                    i = nxt()
                    fn(xs[i], ys[i])
                try:
                    record("forward", name, dtype, n, 2 * n * es, stats_us(call, args.runs), copy_fwd)
                except Exception as e:  # a peer that fails is reported, the others still run
                    print(f"forward {name} {dname} {n}: FAILED {type(e).__name__}: {e}", flush=True)
            # Small N, graph-replayed (launch cost without the host): inputs
            # from DRAM (the sets in turn) and from L2 (one set, as a loss
            # over freshly written activations would find them).
            if n <= (1 << 20):
                for name, fn in impls_fwd.items():
                    if name.startswith("triton_seed"):
                        continue  # the optimised design sums its partials with a second launch; the seed is timed above
                    for mode, sx, sy in (("forward_graph", xs, ys), ("forward_graph_l2", xs[:1], ys[:1])):
                        try:
                            record(mode, name, dtype, n, 2 * n * es, graph_forward_us(fn, sx, sy, args.runs), copy_fwd)
                        except Exception as e:
                            print(f"{mode} {name} {dname} {n}: FAILED {type(e).__name__}: {e}", flush=True)
            if dname not in args.full_dtypes.split(","):
                del xs, ys, dst, src
                continue
            xg = [x.clone().requires_grad_() for x in xs]
            # A training step reads x and y and writes grad x: 3N, as a copy of 1.5N elements.
            copy_train = stats_us(lambda: dst.copy_(src), args.runs)[0]
            for name, fn in impls_train.items():
                def step():
                    i = nxt()
                    xg[i].grad = None
                    fn(xg[i], ys[i]).backward()
                record("full", name, dtype, n, 3 * n * es, stats_us(step, args.runs), copy_train)

                losses = [fn(xg[i], ys[i]) for i in range(sets)] if name != "mseloss_fused" else None
                if losses is not None:
                    def back():
                        i = nxt()
                        torch.autograd.grad(losses[i], xg[i], retain_graph=True)
                    record("backward", name, dtype, n, 3 * n * es, stats_us(back, args.runs), copy_train)
                    del losses

            # The same step captured in a CUDA graph and replayed: device time
            # alone, as in a training loop whose host runs ahead of the GPU
            # (the "full" rows above also pay each step's Python and autograd
            # host time whenever it exceeds the step's GPU time).
            for name, fn in impls_train.items():
                if name == "compile":
                    continue  # its own graphs (mode="reduce-overhead") are another benchmark
                try:
                    record("full_graph", name, dtype, n, 3 * n * es, graph_step_us(fn, xg, ys, args.runs), copy_train)
                except Exception as e:
                    print(f"full_graph {name} {dname} {n}: FAILED {type(e).__name__}: {e}", flush=True)

            def one_pass():
                i = nxt()
                mseloss.mse_loss_and_grad(xs[i], ys[i])
            record("full", "mseloss_and_grad", dtype, n, 3 * n * es, stats_us(one_pass, args.runs), copy_train)
            del xs, ys, xg, dst, src

    if out:
        out.close()
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        panels = [m for m in ("forward", "full", "full_graph") if any(r["mode"] == m for r in rows)]
        fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 5))
        for ax, (mode, dname) in zip(axes, ((m, "float32") for m in panels)):
            for impl in sorted({r["impl"] for r in rows if r["mode"] == mode}):
                pts = sorted((r["n"], r["gbps"]) for r in rows if r["mode"] == mode and r["impl"] == impl and r["dtype"] == dname)
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=impl)
            pts = sorted([(r["n"], r["gbps"] / r["vs_copy"]) for r in rows
                   if r["mode"] == mode and r["impl"] == "eager" and r["dtype"] == dname])
            ax.plot(*zip(*pts), "k--", label="D2D copy (same bytes)")
            ax.set_xscale("log", base=2)
            ax.set_xlabel("N (elements)")
            ax.set_ylabel("GB/s (bytes the op must move / time)")
            ax.set_title(f"{mode} mean, {dname}, {torch.cuda.get_device_name(0)}")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
