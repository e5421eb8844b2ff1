"""Per-call ratios of each build's bench CSVs (DIR/<prefix>_<build>_<pass>.csv): forward mean and
sum x the read probe and x CUB, every `none` op x the copy of its bytes, one column per call in
file order, for N >= 2^24."""
import csv, glob, sys, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + '/*.csv')):
    b = f.split('/')[-1].split('_')[1]
    for r in csv.DictReader(open(f)):
        n = int(r['n'])
        if n < 2**24:
            continue
        if r['op'] == 'forward' and r['reduction'] in ('mean', 'sum'):
            d[(b, 'forward ' + r['reduction'] + ' x probe', r['dtype'], n)].append(float(r['vs_probe']))
            d[(b, 'forward ' + r['reduction'] + ' x CUB', r['dtype'], n)].append(float(r['vs_cub']))
        if r['reduction'] == 'none':
            d[(b, r['op'] + ' none x copy', r['dtype'], n)].append(float(r['vs_copy']))
for k in sorted(d):
    print(f"{k[0]:6} {k[1]:24} {k[2]:9} 2^{k[3].bit_length() - 1:<3}", ' '.join('%.3f' % v for v in d[k]))
