#!/usr/bin/env python3
"""Session 38: the two bench passes of run 1, side by side (pass 0, pass 1) per point.
Usage: python3 src/table.py run1 > run1_table.txt"""
import csv
import sys

d = sys.argv[1] if len(sys.argv) > 1 else "run1"
rows = {}
for i in (0, 1):
    for r in csv.DictReader(open(f"{d}/run1_bench_{i}.csv")):
        rows.setdefault((r["op"], r["dtype"], r["reduction"], int(r["n"])), []).append(r)
print("op red dtype n: us | x_probe | x_copy | x_probe_paired (pass 0, pass 1)")
for k in sorted(rows, key=lambda k: (k[0], k[2], k[1], k[3])):
    rs = rows[k]
    f = lambda c: ", ".join(f"{float(r[c]):.3f}" for r in rs)
    print(k[0], k[2], k[1], k[3], ":", f("us"), "|", f("vs_probe"), "|", f("vs_copy"), "|",
          f("vs_probe_paired") if k[0] == "forward" else "-")
