"""PyTorch eager F.mse_loss on the same GPU, timed like `mseloss bench`
(CUDA events, warm-up, median of many runs, rotating input sets so that every
call reads DRAM): the peer numbers for docs/performance.md.

    python3 bench/torch_eager.py [--sizes 2^20,2^25] [--csv out.csv]
"""
import argparse
import statistics

import torch
import torch.nn.functional as F


def median_us(fn, runs=30, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2^20,2^25,2^28")
    ap.add_argument("--csv", default="")
    args = ap.parse_args()
    sizes = [eval(s.replace("^", "**")) for s in args.sizes.split(",")]
    rows = []
    for n in sizes:
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            es = torch.finfo(dtype).bits // 8
            sets = max(1, min(16, (512 << 20) // (2 * n * es)))
            xs = [torch.randn(n, device="cuda", dtype=dtype) for _ in range(sets)]
            ys = [torch.randn(n, device="cuda", dtype=dtype) for _ in range(sets)]
            xg = [x.clone().requires_grad_(True) for x in xs]
            k = [0]

            def nxt():
                k[0] = (k[0] + 1) % sets
                return k[0]

            def fwd():
                i = nxt()
                F.mse_loss(xs[i], ys[i])

            def step():
                i = nxt()
                xg[i].grad = None
                F.mse_loss(xg[i], ys[i]).backward()

            for name, fn in (("forward_mean", fwd), ("forward_backward_mean", step)):
                us = median_us(fn)
                rows.append((name, str(dtype).replace("torch.", ""), n, us))
                print(f"torch-eager {name:22s} {str(dtype):15s} N={n:>10d} {us:10.2f} us", flush=True)
            del xs, ys, xg
            torch.cuda.empty_cache()
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("op,dtype,n,us\n")
            for r in rows:
                f.write(",".join(map(str, r)) + "\n")


if __name__ == "__main__":
    main()
