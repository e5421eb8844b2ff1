"""GB/s against N for each forward algorithm of `mseloss bench`, with the read
probe and CUB TransformReduce of the same run as references.

    python3 bench/plot_algorithms.py BENCH.csv OUT.png [--dtype float32] [--reduction mean]
"""
import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--reduction", default="mean")
    ap.add_argument("--title", default="")
    args = ap.parse_args()
    lines, probe, cub = defaultdict(dict), {}, {}
    with open(args.csv) as f:
        for r in csv.DictReader(f):
            if r["op"] != "forward" or r["device"] != "cuda" or r["dtype"] != args.dtype or r["reduction"] != args.reduction:
                continue
            n, nbytes = int(r["n"]), float(r["bytes"])
            lines[r["algorithm"]][n] = float(r["gbps"])
            probe[n] = nbytes / float(r["probe_us"]) / 1e3
            if float(r["cub_us"]) > 0:
                cub[n] = nbytes / float(r["cub_us"]) / 1e3
    fig, ax = plt.subplots(figsize=(8, 5))
    for algo, pts in sorted(lines.items()):
        ax.plot(sorted(pts), [pts[n] for n in sorted(pts)], marker="o", label=algo)
    ax.plot(sorted(probe), [probe[n] for n in sorted(probe)], "k--", label="read probe (same run)")
    ax.plot(sorted(cub), [cub[n] for n in sorted(cub)], "k:", label="CUB TransformReduce (same run)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N (elements)")
    ax.set_ylabel("GB/s (2N elements read / time)")
    ax.set_title(args.title or f"forward {args.reduction}, {args.dtype}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
