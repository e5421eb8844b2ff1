"""Session 24, run 3: mean us per point over each build's passes (run3_<build>_<pass>.csv), the
ratio of each build to head2 (< 1: faster), and head2's and final2's x copy."""
import csv, glob, sys, collections, statistics
d = sys.argv[1]
t = collections.defaultdict(list)
xc = collections.defaultdict(list)
for f in sorted(glob.glob(f"{d}/run3_*_*.csv")):
    b = f.split("/")[-1].split("_")[1]
    for r in csv.DictReader(open(f)):
        k = (r["op"], r["dtype"], r["reduction"], int(r["n"]))
        t[(b,) + k].append(float(r["us"]))
        xc[(b,) + k].append(float(r["vs_copy"]))
keys = sorted({k[1:] for k in t}, key=lambda k: (k[0], k[2], k[1], k[3]))
print(f"{'op':9}{'dtype':9}{'red':5}{'N':>6} {'head2 us (min-max)':>20} {'final/head2':>12} {'final2/head2':>13} {'head/head2':>11} {'x copy head2':>13} {'final2':>7}")
for k in keys:
    h2 = t[("head2",) + k]
    m = lambda b: statistics.median(t[(b,) + k]) / statistics.median(h2)
    print(f"{k[0]:9}{k[1]:9}{k[2]:5}{'2^%d' % (k[3].bit_length() - 1):>6} {statistics.median(h2):8.2f} ({min(h2):.1f}-{max(h2):.1f}) {m('final'):11.3f} {m('final2'):12.3f} {m('head'):11.3f} {statistics.median(xc[('head2',)+k]):12.3f} {statistics.median(xc[('final2',)+k]):7.3f}")
