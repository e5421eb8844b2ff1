#!/usr/bin/env python3
"""Session 31: `final` against `head` from a run's bench CSVs (three passes each).

Usage: analyze.py DIR  (DIR holds run*_bench_{head,final}_{0,1,2}.csv)
Prints, per op/dtype/reduction/N: head's median time (min-max over the passes), final/head of
the medians, and each build's median ratio to the copy of the same bytes (min-max).
"""
import csv, glob, statistics, sys
from collections import defaultdict

d = sys.argv[1]
rows = defaultdict(lambda: defaultdict(list))  # key -> build -> [(us, vs_copy)]
for build in ("head", "final"):
    for path in sorted(glob.glob(f"{d}/run*_bench_{build}_[0-9].csv")):
        for r in csv.DictReader(open(path)):
            key = (r["op"], r["dtype"], r["reduction"], int(r["n"]))
            rows[key][build].append((float(r["us"]), float(r["vs_copy"])))

def log2(n):
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)

print(f"{'op':8} {'dtype':8} {'red':5} {'N':>5} {'head us (min-max)':>22} {'final/head':>10}"
      f" {'xcopy head (min-max)':>22} {'xcopy final (min-max)':>22}")
for key in sorted(rows):
    h, f = rows[key]["head"], rows[key]["final"]
    if not h or not f:
        continue
    hus = [x[0] for x in h]; fus = [x[0] for x in f]
    hc = [x[1] for x in h]; fc = [x[1] for x in f]
    med = statistics.median
    print(f"{key[0]:8} {key[1]:8} {key[2]:5} {log2(key[3]):>5}"
          f" {med(hus):8.2f} ({min(hus):.2f}-{max(hus):.2f})"
          f" {med(fus) / med(hus):10.3f}"
          f" {med(hc):8.3f} ({min(hc):.3f}-{max(hc):.3f})"
          f" {med(fc):8.3f} ({min(fc):.3f}-{max(fc):.3f})")
