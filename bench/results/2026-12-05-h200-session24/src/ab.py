"""Session 24: HEAD against the spread-tile build, two passes each (run 1 CSVs): us, and x copy of the final build."""
import csv, sys, collections
d = sys.argv[1]
t = collections.defaultdict(list)
xc = collections.defaultdict(list)
for b in ("head", "final"):
    for i in (1, 2):
        for r in csv.DictReader(open(f"{d}/run1_{b}_{i}.csv")):
            k = (r["op"], r["dtype"], r["reduction"], int(r["n"]))
            t[k + (b,)].append(float(r["us"]))
            if b == "final": xc[k].append(float(r["vs_copy"]))
keys = sorted({k[:4] for k in t}, key=lambda k: (k[0], k[2], k[1], k[3]))
print(f"{'op':9}{'dtype':9}{'red':5}{'N':>6} {'head us':>16} {'final us':>16} {'final/head':>11} {'x copy (final)':>15}")
for k in keys:
    h, f = t[k + ("head",)], t[k + ("final",)]
    ratio = (sum(f) / len(f)) / (sum(h) / len(h))
    print(f"{k[0]:9}{k[1]:9}{k[2]:5}{'2^%d' % (k[3].bit_length() - 1):>6} {h[0]:7.2f} {h[1]:7.2f}  {f[0]:7.2f} {f[1]:7.2f}  {ratio:10.3f}  {xc[k][0]:6.3f} {xc[k][1]:6.3f}")
