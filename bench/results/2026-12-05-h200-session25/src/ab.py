"""Session 25, run 1: median us per point over each build's six passes (run1_<build>_<pass>.csv),
each build against the build with the same bench and HEAD 40731de's kernels (< 1: faster):
final/head2, final2/head2 (lazy copy timing), final3/head3 (copies timed first); the two bench
changes on the same kernels: head2/head (session 24's), head3/head2 (this session's); x copy."""
import csv, glob, sys, collections, statistics
d = sys.argv[1]
t = collections.defaultdict(list)
xc = collections.defaultdict(list)
for f in sorted(glob.glob(f"{d}/run1_*_*.csv")):
    b = f.split("/")[-1].split("_")[1]
    for r in csv.DictReader(open(f)):
        k = (r["op"], r["dtype"], r["reduction"], int(r["n"]))
        t[(b,) + k].append(float(r["us"]))
        xc[(b,) + k].append(float(r["vs_copy"]))
keys = sorted({k[1:] for k in t}, key=lambda k: (k[0], k[2], k[1], k[3]))
med = lambda b, k: statistics.median(t[(b,) + k])
cols = [("final", "head2"), ("final2", "head2"), ("final3", "head3"), ("head2", "head"), ("head3", "head2")]
print(f"{'op':9}{'dtype':9}{'red':5}{'N':>6} {'head3 us (min-max)':>20}" + "".join(f"{a + '/' + b:>13}" for a, b in cols)
      + f"{'xcopy head3':>12}{'final3':>7}")
for k in keys:
    h = t[("head3",) + k]
    print(f"{k[0]:9}{k[1]:9}{k[2]:5}{'2^%d' % (k[3].bit_length() - 1):>6} {statistics.median(h):8.2f} ({min(h):.1f}-{max(h):.1f})"
          + "".join(f"{med(a, k) / med(b, k):13.3f}" for a, b in cols)
          + f"{statistics.median(xc[('head3',) + k]):12.3f}{statistics.median(xc[('final3',) + k]):7.3f}")
