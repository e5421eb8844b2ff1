"""Tabulates a run of src/run.sh: base against head, medians over the rounds.

    python3 src/tabulate.py RUNDIR [small]
For each op, dtype, reduction and N: the median time of each binary over the
rounds, head's speed-up, and head's ratios to the ceilings of its own runs
(range over the rounds; paired: the probe timed in turn with the call).
"""
import collections
import csv
import glob
import os
import statistics as st
import sys

run = sys.argv[1]
small = len(sys.argv) > 2 and sys.argv[2] == "small"
rows = collections.defaultdict(list)
for path in glob.glob(os.path.join(run, "r*_*.csv")):
    _, binary, op = os.path.basename(path)[:-4].split("_")
    if (op == "small") != small:
        continue
    for r in csv.DictReader(open(path)):
        rows[(r["op"], r["dtype"], r["reduction"], int(r["n"]), binary)].append(r)


def rng(v):
    return f"{min(v):.2f}-{max(v):.2f}"


print("| op | dtype | red | N | base µs | head µs | speed-up | head × probe | head × probe paired | head × copy |")
print("|---|---|---|---|---|---|---|---|---|---|")
for key in sorted({k[:4] for k in rows}, key=lambda k: (k[0], k[3], k[1], k[2])):
    base, head = rows[key + ("base",)], rows[key + ("head",)]
    bu = st.median(float(r["us"]) for r in base)
    hu = st.median(float(r["us"]) for r in head)
    paired = [float(r["vs_probe_paired"]) for r in head]
    print(f"| {key[0]} | {key[1]} | {key[2]} | 2^{key[3].bit_length() - 1} | {bu:.0f} | {hu:.0f} | {bu / hu:.2f}× | "
          f"{rng([float(r['vs_probe']) for r in head])} | {rng(paired) if paired[0] > 0 else '-'} | "
          f"{rng([float(r['vs_copy']) for r in head])} |")
