"""Nsight Compute CSVs (session 28's run5.sh metrics; argv[2], the file prefix): the chosen metrics of each profiled
kernel launch, one line per launch."""
import csv, glob, sys
keys = ['gpu__time_duration.sum', 'dram__bytes_read.sum', 'dram__bytes_write.sum',
        'dram__throughput.avg.pct_of_peak_sustained_elapsed', 'lts__t_sector_hit_rate.pct',
        'launch__registers_per_thread', 'sm__warps_active.avg.pct_of_peak_sustained_active',
        'smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio',
        'smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio']
print('file | kernel | ' + ' | '.join(keys))
for f in sorted(glob.glob(sys.argv[1] + '/' + sys.argv[2] + '*.csv')):
    rows = list(csv.reader(l for l in open(f) if l.startswith('"')))
    hdr = rows[0]
    for r in rows[2:]:
        print(f.split('/')[-1], '|', r[hdr.index('Kernel Name')].replace('void mse_elementwise_kernel', ''), '|',
              ' | '.join(r[hdr.index(k)] for k in keys))
