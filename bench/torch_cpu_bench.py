"""The PyTorch operators on CPU tensors against eager PyTorch, in one run.

Modes: forward (the mean loss), step (a training step on the loss: forward +
backward through autograd, the input requiring grad) and one_pass (mseloss's
mse_loss_and_grad: the loss and the gradient in one call; its peer is eager's
step). Both sides run with torch.get_num_threads() threads: the op passes it to
mseloss's Options::num_threads.

Timing: wall time of one call (time.perf_counter), 3 warm-up calls, then the
two sides in turn (mseloss, eager, mseloss, ...) so that a drift of the
machine's bandwidth moves both; the median of each side and the median of the
per-pair ratios eager / mseloss (> 1: mseloss is faster). Every size is larger
than the caches at 2^24, so those rows are bound by memory.

    python3 bench/torch_cpu_bench.py [--sizes 2^20,2^24] [--threads 2] [--csv out.csv]
"""
import argparse
import csv
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import mseloss

DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}


def parse_sizes(text):
    out = []
    for part in text.split(","):
        base, _, exp = part.partition("^")
        out.append(int(base) ** int(exp) if exp else int(base))
    return out


def once(fn):
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e6


def paired(ours, theirs, runs):
    for _ in range(3):
        ours()
        theirs()
    t_ours, t_theirs, ratios = [], [], []
    for _ in range(runs):
        t_ours.append(once(ours))
        t_theirs.append(once(theirs))
        ratios.append(t_theirs[-1] / t_ours[-1])
    return statistics.median(t_ours), statistics.median(t_theirs), statistics.median(ratios)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2^20,2^24")
    ap.add_argument("--dtypes", default="float32,float64,bfloat16,float16")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave torch's default)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--csv", default="")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    print(f"# torch {torch.__version__}, CPU, {threads} threads (torch.get_num_threads; the op passes it to mseloss)")
    print(f"{'mode':9} {'dtype':9} {'N':>10} {'mseloss_us':>11} {'eager_us':>10} {'x_eager':>8}")
    rows = []
    for n in parse_sizes(args.sizes):
        for name in args.dtypes.split(","):
            dt = DTYPES[name]
            x = torch.randn(n, dtype=dt)
            y = torch.randn(n, dtype=dt)
            xg = x.clone().requires_grad_(True)

            def step(loss_fn):
                def run():
                    xg.grad = None
                    loss_fn(xg, y).backward()
                return run

            cases = [
                ("forward", lambda: mseloss.mse_loss(x, y), lambda: F.mse_loss(x, y)),
                ("step", step(mseloss.mse_loss), step(F.mse_loss)),
                ("one_pass", lambda: mseloss.mse_loss_and_grad(x, y), step(F.mse_loss)),
            ]
            for mode, ours, theirs in cases:
                ours_us, theirs_us, ratio = paired(ours, theirs, args.runs)
                rows.append(dict(mode=mode, dtype=name, n=n, threads=threads, mseloss_us=ours_us, eager_us=theirs_us,
                                 x_eager=ratio))
                print(f"{mode:9} {name:9} {n:>10} {ours_us:>11.1f} {theirs_us:>10.1f} {ratio:>8.2f}", flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
