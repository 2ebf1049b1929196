#!/usr/bin/env python3
"""Would removing each recording's drift help? An experiment on data/datasets (docs/prediction.md,
"Ten recordings, and drift between hours").

usage: bench/prediction/rescale.py [WORK_DIR]     (default /tmp/hetune_rescale; HETUNE = binary)

For every kernel with several recordings, each recording is divided by its drift ratio (the median
over its rows of time / the row's median over all recordings: what `hetune model eval` prints per
file) and written to WORK_DIR; then `hetune model eval --kinds auto` scores `auto` and the labels'
floor on the hold-out of the two largest sizes, on the recordings as measured and as rescaled.
Rescaling removes a drift that slows or speeds a whole recording alike; it cannot remove one that
changes configs by different factors. Prints one markdown line per kernel and the means."""
import csv
import glob
import os
import statistics
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
HETUNE = os.environ.get('HETUNE', os.path.join(ROOT, 'build', 'hetune'))
DATA = os.path.join(ROOT, 'data', 'datasets')
SPECS = {'gemm_c': 'gemm', 'gemm_opencl': 'gemm', 'nbody_c': 'nbody', 'convolution_opencl': 'convolution',
         'vadd_c': 'vadd', 'vadd_opencl': 'vadd', 'stencil_c': 'stencil', 'stencil_opencl': 'stencil',
         'transpose_opencl': 'transpose', 'reduction_opencl': 'reduction', 'blackscholes_c': 'blackscholes',
         'blackscholes_opencl': 'blackscholes', 'matvec_c': 'matvec', 'histogram_opencl': 'histogram'}


def recordings(kernel):
    return [os.path.join(DATA, kernel + '.csv')] + sorted(glob.glob(os.path.join(DATA, 'pass*', kernel + '.csv')))


def rescaled(kernel, work_dir):
    """Each recording divided by its drift ratio, written under work_dir; the new paths."""
    rows = [list(csv.DictReader(open(f, newline=''))) for f in recordings(kernel)]
    times = [{(r['problem'], r['config']): float(r['time_s']) for r in rec if r['status'] == 'ok'} for rec in rows]
    shared = set.intersection(*map(set, times))
    median = {key: statistics.median(t[key] for t in times) for key in shared}
    paths = []
    for i, (rec, t) in enumerate(zip(rows, times)):
        ratio = statistics.median(t[key] / median[key] for key in shared)
        path = os.path.join(work_dir, '%s.%d.csv' % (kernel, i))
        with open(path, 'w', newline='') as fp:
            w = csv.DictWriter(fp, fieldnames=rec[0].keys())
            w.writeheader()
            for r in rec:
                w.writerow(dict(r, time_s=repr(float(r['time_s']) / ratio)) if r['status'] == 'ok' else r)
        paths.append(path)
    return paths


def holdout(kernel, paths):
    """(auto, floor) hold-out lines of model eval --tsv: mean %, Spearman, penalty %."""
    args = [HETUNE, 'model', 'eval', os.path.join(ROOT, 'examples', SPECS[kernel], kernel + '.json'),
            '--kinds', 'auto', '--folds', '0', '--test', '0', '--tsv']
    for p in paths:
        args += ['--data', p]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    lines = {f[1]: f for f in (l.split('\t') for l in out.splitlines()) if f[2] == 'holdout'}
    return [(float(lines[m][4]), float(lines[m][7]), float(lines[m][9])) for m in ('auto', 'floor')]


def main(argv):
    work_dir = argv[1] if len(argv) > 1 else '/tmp/hetune_rescale'
    os.makedirs(work_dir, exist_ok=True)
    print('| kernel | `auto` mean % | `auto` Spearman | `auto` penalty % | floor penalty % |')
    print('|---|---|---|---|---|')
    sums = []
    for kernel in SPECS:
        if len(recordings(kernel)) < 2:
            continue
        print('rescale: %s' % kernel, file=sys.stderr)
        (a0, f0), (a1, f1) = holdout(kernel, recordings(kernel)), holdout(kernel, rescaled(kernel, work_dir))
        print('| %s | %.1f / %.1f | %.2f / %.2f | %.1f / %.1f | %.1f / %.1f |' % (
            kernel, a0[0], a1[0], a0[1], a1[1], a0[2], a1[2], f0[2], f1[2]))
        sums.append((a0, a1, f0, f1))
    if sums:
        mean = lambda pick: statistics.mean(pick(s) for s in sums)
        print('| **mean** | %.2f / %.2f | %.3f / %.3f | %.2f / %.2f | %.2f / %.2f |' % (
            mean(lambda s: s[0][0]), mean(lambda s: s[1][0]), mean(lambda s: s[0][1]), mean(lambda s: s[1][1]),
            mean(lambda s: s[0][2]), mean(lambda s: s[1][2]), mean(lambda s: s[2][2]), mean(lambda s: s[3][2])))
    print('\n(each cell: as measured / each recording rescaled by its drift ratio)')


if __name__ == '__main__':
    main(sys.argv)
