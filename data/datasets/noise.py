#!/usr/bin/env python3
"""Label noise: how well two measurements of the same (problem size, config) agree.

usage: python3 noise.py [-v] [--largest N] DATASETS_DIR OTHER_DIR [OTHER_DIR...]

Compares every pair of recordings of a kernel: DATASETS_DIR/<k>.csv (the main recording) and each
OTHER_DIR/<k>.csv (a re-measurement: `record.sh noise` or a PASS=N recording). One line per kernel,
pooled over the pairs of recordings: the relative difference |t2 - t1| / min(t1, t2) of each
(size, config) both measured (median, 90th percentile, max), Spearman's rank correlation of the
configs of one size, and the penalty of trusting one recording's fastest config, judged by the
other (both means over sizes and pairs). -v adds one line per pair of recordings and per size.

A second table (kernels with 4 or more recordings) splits the recordings into two halves in every
way (5 recordings: 2 against 3, 10 splits), merges each half into the median of its times, and
compares the halves the same way: how far apart two medians of a few recordings still are, an
estimate of the floor that a model judged against such medians cannot go below. --largest N keeps
the N largest problem sizes of each kernel only (N = 2: the sizes model eval holds out)."""
import csv
import glob
import math
import itertools
import os
import statistics
import sys


def times(path):
    return {(r['problem'], r['config']): float(r['time_s'])
            for r in csv.DictReader(open(path, newline='')) if r['status'] == 'ok'}


def ranks(x):
    order = sorted(range(len(x)), key=x.__getitem__)
    r = [0] * len(x)
    for pos, i in enumerate(order):
        r[i] = pos
    return r


def spearman(a, b):
    """Rank correlation of two equally long lists (measured times: no ties expected)."""
    ra, rb, n = ranks(a), ranks(b), len(a)
    return 1 - 6 * sum((x - y) ** 2 for x, y in zip(ra, rb)) / (n * (n * n - 1)) if n > 1 else 1.0


def penalty(a, b):
    """Percent by which a's fastest config is slower than the fastest, both judged by b, and back."""
    pa = b[a.index(min(a))] / min(b) - 1
    pb = a[b.index(min(b))] / min(a) - 1
    return 100 * (pa + pb) / 2


def p90(d):
    return sorted(d)[int(0.9 * (len(d) - 1))]


def compare(t1, t2, verbose):
    """Recording t1 against t2: relative differences, and per size Spearman and penalty."""
    sizes = {}
    for key in t1.keys() & t2.keys():
        sizes.setdefault(key[0], []).append((t1[key], t2[key]))
    diffs, rhos, pens = [], [], []
    for size, pairs in sorted(sizes.items()):
        a, b = zip(*pairs)
        d = [abs(x - y) / min(x, y) for x, y in pairs]
        diffs += d
        rhos.append(spearman(a, b))
        pens.append(penalty(a, b))
        if verbose:
            print('    %-28s pairs %3d  diff median %5.1f%%  max %6.1f%%  spearman %.2f  penalty %.1f%%' % (
                size, len(d), 100 * statistics.median(d), 100 * max(d), rhos[-1], pens[-1]))
    return diffs, rhos, pens


def line(kernel, label, diffs, rhos, pens):
    print('| %s | %s | %d | %.1f | %.1f | %.1f | %.2f | %.1f |' % (
        kernel, label, len(diffs), 100 * statistics.median(diffs), 100 * p90(diffs), 100 * max(diffs),
        statistics.mean(rhos), statistics.mean(pens)))


def merged(recordings):
    """One recording from several: the median time of every (size, config) they all measured."""
    keys = set.intersection(*(set(t) for t in recordings))
    return {k: statistics.median(t[k] for t in recordings) for k in keys}


def halves(kernels_recordings):
    """The split-half table: every split of a kernel's recordings into two halves, pooled."""
    print('\n| kernel | recordings | splits | diff median % | diff p90 % | Spearman | penalty % |')
    print('|---|---|---|---|---|---|---|')
    for k, rec in kernels_recordings:
        if len(rec) < 4:
            continue
        tables = [t for _, t in rec]
        pooled, splits = ([], [], []), 0
        for first in itertools.combinations(range(len(tables)), len(tables) // 2):
            rest = [t for i, t in enumerate(tables) if i not in first]
            for acc, part in zip(pooled, compare(merged([tables[i] for i in first]), merged(rest), False)):
                acc += part
            splits += 1
        d, rhos, pens = pooled
        print('| %s | %d | %d | %.1f | %.1f | %.2f | %.1f |' % (
            k, len(rec), splits, 100 * statistics.median(d), 100 * p90(d), statistics.mean(rhos), statistics.mean(pens)))


def work(problem):
    """The product of a problem's sizes ("M=256,N=128" -> 32768)."""
    return math.prod(int(kv.split('=')[1]) for kv in problem.split(','))


def largest(recordings, n):
    """The recordings restricted to the n largest problem sizes of the first one."""
    keep = set(sorted({key[0] for key in recordings[0][1]}, key=work)[-n:])
    return [(name, {k: v for k, v in t.items() if k[0] in keep}) for name, t in recordings]


def main(argv):
    verbose = '-v' in argv
    argv = [a for a in argv if a != '-v']
    n_largest = None
    if '--largest' in argv:
        i = argv.index('--largest')
        n_largest = int(argv[i + 1])
        del argv[i:i + 2]
    dirs = argv
    if len(dirs) < 2:
        sys.exit(__doc__)
    names = ['main'] + [os.path.basename(os.path.normpath(d)) for d in dirs[1:]]
    print('| kernel | recordings | pairs | diff median % | diff p90 % | diff max % | Spearman | penalty % |')
    print('|---|---|---|---|---|---|---|---|')
    everything, kernels_recordings = [], []
    kernels = sorted({os.path.basename(p)[:-4] for d in dirs[1:] for p in glob.glob(os.path.join(d, '*.csv'))})
    for k in kernels:
        rec = [(n, os.path.join(d, k + '.csv')) for n, d in zip(names, dirs)]
        rec = [(n, times(p)) for n, p in rec if os.path.exists(p)]
        if n_largest:
            rec = largest(rec, n_largest)
        kernels_recordings.append((k, rec))
        pooled = ([], [], [])
        for (n1, t1), (n2, t2) in itertools.combinations(rec, 2):
            if verbose:
                print('  %s: %s / %s' % (k, n1, n2))
            for acc, part in zip(pooled, compare(t1, t2, verbose)):
                acc += part
        if pooled[0]:
            line(k, '%d recordings' % len(rec), *pooled)
            everything += pooled[0]
    if everything:
        print('\nall: %d pairs, relative difference median %.1f%%, mean %.1f%%, max %.1f%%' % (
            len(everything), 100 * statistics.median(everything), 100 * statistics.mean(everything),
            100 * max(everything)))
    halves(kernels_recordings)


if __name__ == '__main__':
    main(sys.argv[1:])
