"""Session 28 (from session 26's): median us per point over each build's passes
(run*_<build>_*.csv), each build against the first (< 1: faster), each build's median ratio to
the device copy of the same bytes (vs_copy), and the first build's to the read probe (vs_probe),
as the bench printed them. N is printed as 2^k where it is a power of two."""
import csv, glob, sys, collections, statistics
d = sys.argv[1]
builds = sys.argv[2].split(",")  # the first is the reference
t, xc, xp = (collections.defaultdict(list) for _ in range(3))
for f in sorted(glob.glob(f"{d}/run*_*_*.csv")):
    b = f.split("/")[-1].split("_")[1]
    for r in csv.DictReader(open(f)):
        k = (b, r["op"], r["dtype"], r["reduction"], int(r["n"]))
        t[k].append(float(r["us"]))
        xc[k].append(float(r["vs_copy"]))
        xp[k].append(float(r.get("vs_probe") or "nan"))
keys = sorted({k[1:] for k in t}, key=lambda k: (k[0], k[2], k[1], k[3]))
med = lambda m, b, k: statistics.median(m[(b,) + k])
print(f"{'op':9}{'dtype':9}{'red':5}{'N':>9} {'ref us (min-max)':>20}" + "".join(f"{b + '/' + builds[0]:>13}" for b in builds[1:])
      + "".join(f"{'xcopy ' + b:>13}" for b in builds) + f"{'xprobe ' + builds[0]:>14}")
nname = lambda n: '2^%d' % (n.bit_length() - 1) if n & (n - 1) == 0 else str(n)
for k in keys:
    h = t[(builds[0],) + k]
    print(f"{k[0]:9}{k[1]:9}{k[2]:5}{nname(k[3]):>9} {statistics.median(h):8.2f} ({min(h):.1f}-{max(h):.1f})"
          + "".join(f"{med(t, b, k) / med(t, builds[0], k):13.3f}" for b in builds[1:])
          + "".join(f"{med(xc, b, k):13.3f}" for b in builds) + f"{med(xp, builds[0], k):14.3f}")
