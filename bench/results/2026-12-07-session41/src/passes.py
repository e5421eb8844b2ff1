"""Session 41: per-pass time ratios of build B over build A for every point of a run's CSVs
(run*_<build>_<pass>.csv), their median, and whether B was slower or faster in every pass.
Usage: python3 passes.py DIR A,B [A,B ...]"""
import csv,glob,statistics,collections,sys
d=sys.argv[1]; pairs=[tuple(x.split(",")) for x in sys.argv[2:]]
t=collections.defaultdict(list)
for f in sorted(glob.glob(d+"/run*_*_*.csv")):
    _,b,i=f.split("/")[-1][:-4].split("_")
    for r in csv.DictReader(open(f)):
        k=(r['op'],r['dtype'],r['reduction'],int(r['n']))
        t[(b,)+k].append((int(i),float(r['us'])))
for a,b in pairs:
  print(f"{b} / {a}: per-pass time ratios (< 1: {b} faster), median")
  for k in sorted(set(x[1:] for x in t)):
    if (a,)+k not in t or (b,)+k not in t: continue
    h=dict(t[(a,)+k]); n=dict(t[(b,)+k])
    rs=[n[i]/h[i] for i in sorted(h)]
    flag = "  slower in every pass" if min(rs)>1.0 else ("  faster in every pass" if max(rs)<1.0 else "")
    print(f"  {k[0]:9}{k[1]:9}{k[2]:5}{k[3]:>9} {statistics.median(h.values()):7.2f} us  "+" ".join(f"{r:.3f}" for r in rs)+f"  med {statistics.median(rs):.3f}"+flag)
