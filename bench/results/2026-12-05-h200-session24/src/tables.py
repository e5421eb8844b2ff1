import csv, glob, sys, collections
d, build, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
xc = collections.defaultdict(list)
for f in sorted(glob.glob(f"{d}/{prefix}_{build}_*.csv")):
    for r in csv.DictReader(open(f)):
        xc[(r["op"], r["reduction"], r["dtype"], int(r["n"]))].append(float(r["vs_copy"]))
cols = [("float32", 25), ("float32", 26), ("float32", 28), ("bfloat16", 25), ("bfloat16", 26), ("bfloat16", 28), ("float16", 25), ("float16", 28)]
for op, red in [("forward", "none"), ("backward", "mean"), ("backward", "none"), ("fused", "mean"), ("fused", "none")]:
    cells = []
    for t, lg in cols:
        v = xc[(op, red, t, 1 << lg)]
        cells.append(f"{min(v):.3f}-{max(v):.3f}" if len(v) > 1 and min(v) != max(v) else f"{v[0]:.3f}")
    print(f"| {op} {red} | " + " | ".join(cells) + " |")
