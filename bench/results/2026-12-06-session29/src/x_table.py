"""Run 1's order/buffer check: us and x copy of each point in the eight bench calls of
run1_x_bench.txt (final/swap builds; fb = forward timed first, bf = backward first)."""
import collections, sys
txt = open(sys.argv[1]).read().split('# mseloss bench')[1:]
names = ['final_fb_0', 'final_bf_0', 'swap_fb_0', 'swap_bf_0', 'final_fb_1', 'final_bf_1', 'swap_fb_1', 'swap_bf_1']
d = collections.defaultdict(dict)
for nm, blk in zip(names, txt):
    for l in blk.splitlines():
        f = l.split()
        if len(f) > 8 and f[1] == 'cuda':
            d[(f[0], f[3], f[4], int(f[5]))][nm] = (float(f[6]), float(f[10]))
print('op dtype red N   ' + '  '.join(names) + '   (us/x copy)')
for k in sorted(d):
    print(k[0][:4], k[1][:4], k[2], k[3], '  '.join('%.2f/%.3f' % d[k][nm] for nm in names if nm in d[k]))
