#!/usr/bin/env python3
"""Label noise: relative difference |t2 - t1| / t1 between the main recording (t1, DATASETS/<k>.csv)
and the separate re-measurement (t2, NOISE_DIR/<k>.csv) of the same (size, config).
usage: python3 noise.py DATASETS_DIR NOISE_DIR"""
import csv
import glob
import os
import statistics
import sys


def times(path):
    return {(r['problem'], r['config']): float(r['time_s'])
            for r in csv.DictReader(open(path, newline='')) if r['status'] == 'ok'}


def spearman(a, b):
    """Rank correlation of two equally long lists (no ties expected in measured times)."""
    ra = {i: r for r, i in enumerate(sorted(range(len(a)), key=a.__getitem__))}
    rb = {i: r for r, i in enumerate(sorted(range(len(b)), key=b.__getitem__))}
    n = len(a)
    return 1 - 6 * sum((ra[i] - rb[i]) ** 2 for i in range(n)) / (n * (n * n - 1))


def main(ds, nd):
    everything = []
    for path in sorted(glob.glob(os.path.join(nd, '*.csv'))):
        k = os.path.basename(path)[:-4]
        t1, t2 = times(os.path.join(ds, k + '.csv')), times(path)
        per_size, pairs = {}, {}
        for key in t2:
            if key in t1:
                per_size.setdefault(key[0], []).append(abs(t2[key] - t1[key]) / t1[key])
                pairs.setdefault(key[0], []).append((t1[key], t2[key]))
        for size, d in sorted(per_size.items()):
            everything += d
            a, b = zip(*pairs[size])
            print('%-18s %-24s pairs %2d  rel. diff median %5.1f%%  p90 %5.1f%%  max %5.1f%%  spearman %.2f'
                  '  best of 2nd within %.0f%% of best of 1st' % (
                      k, size, len(d), 100 * statistics.median(d), 100 * sorted(d)[int(0.9 * (len(d) - 1))],
                      100 * max(d), spearman(a, b), 100 * (a[b.index(min(b))] / min(a) - 1)))
    if everything:
        print('all: %d pairs, relative difference median %.1f%%, mean %.1f%%, max %.1f%%' % (
            len(everything), 100 * statistics.median(everything), 100 * statistics.mean(everything),
            100 * max(everything)))


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
