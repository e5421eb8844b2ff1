"""Tabulates torch_cpu_bench.py runs of several builds of the op, in turn.

    python3 src/tabulate_torch.py RUNDIR VARIANT [VARIANT ...]
RUNDIR holds r{round}_{variant}.csv; per mode, dtype and N: each variant's
median µs over the rounds and the range of its paired ratio to eager.
"""
import collections
import csv
import glob
import os
import statistics as st
import sys

run, variants = sys.argv[1], sys.argv[2:]
d = collections.defaultdict(list)
for path in glob.glob(os.path.join(run, "r*_*.csv")):
    v = os.path.basename(path)[:-4].split("_", 1)[1]
    for row in csv.DictReader(open(path)):
        d[(row["mode"], row["dtype"], int(row["n"]), v)].append(row)
print("| mode | dtype | N | " + " | ".join(f"{v} µs | {v} × eager" for v in variants) + " |")
print("|---|---|---|" + "---|---|" * len(variants))
for k in sorted({k[:3] for k in d}, key=lambda k: (k[2], k[1], k[0])):
    cells = []
    for v in variants:
        rows = d[k + (v,)]
        x = [float(r["x_eager"]) for r in rows]
        cells.append(f"{st.median(float(r['mseloss_us']) for r in rows):.0f} | {min(x):.2f}-{max(x):.2f}")
    print(f"| {k[0]} | {k[1]} | 2^{k[2].bit_length() - 1} | " + " | ".join(cells) + " |")
