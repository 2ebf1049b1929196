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


def main(ds, nd):
    everything = []
    for path in sorted(glob.glob(os.path.join(nd, '*.csv'))):
        k = os.path.basename(path)[:-4]
        t1, t2 = times(os.path.join(ds, k + '.csv')), times(path)
        per_size = {}
        for key in t2:
            if key in t1:
                per_size.setdefault(key[0], []).append(abs(t2[key] - t1[key]) / t1[key])
        for size, d in sorted(per_size.items()):
            everything += d
            print('%-18s %-24s pairs %2d  rel. diff median %5.1f%%  p90 %5.1f%%  max %5.1f%%' % (
                k, size, len(d), 100 * statistics.median(d), 100 * sorted(d)[int(0.9 * (len(d) - 1))],
                100 * max(d)))
    if everything:
        print('all: %d pairs, relative difference median %.1f%%, mean %.1f%%, max %.1f%%' % (
            len(everything), 100 * statistics.median(everything), 100 * statistics.mean(everything),
            100 * max(everything)))


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
