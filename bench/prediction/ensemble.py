#!/usr/bin/env python3
"""Would averaging model kinds beat `auto`? For each dataset: train every kind on all sizes but the
two largest (every recording, merged by the loader), predict each held-out row with each kind
through `hetune model predict`, then score single kinds and geometric-mean ensembles of them: mean
error per class (compute / memory), largest error, mean best-config penalty; and, per kernel, the
kind with the lowest penalty chosen with hindsight (an oracle: the ceiling of choosing one kind).

usage: bench/prediction/ensemble.py [WORK_DIR]     (default /tmp/hetune_ensemble; HETUNE = binary)
Takes about two minutes (some 4,000 short hetune calls)."""
import csv
import glob
import math
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
HETUNE = os.environ.get('HETUNE', os.path.join(ROOT, 'build', 'hetune'))
DATA = os.path.join(ROOT, 'data', 'datasets')
KERNELS = [('gemm_c', 'gemm', 'compute'), ('gemm_opencl', 'gemm', 'compute'), ('nbody_c', 'nbody', 'compute'),
           ('convolution_opencl', 'convolution', 'compute'), ('vadd_c', 'vadd', 'memory'),
           ('vadd_opencl', 'vadd', 'memory'), ('stencil_c', 'stencil', 'memory'),
           ('stencil_opencl', 'stencil', 'memory'), ('transpose_opencl', 'transpose', 'memory'),
           ('reduction_opencl', 'reduction', 'memory')]
KINDS = ['gbt', 'ranking', 'mlp', 'starpu', 'knn', 'linear', 'auto']
COMBOS = [(k,) for k in KINDS] + [('gbt', 'ranking'), ('gbt', 'mlp'), ('gbt', 'starpu'), ('ranking', 'mlp'),
                                  ('gbt', 'ranking', 'mlp'), ('gbt', 'ranking', 'starpu'),
                                  ('gbt', 'ranking', 'mlp', 'starpu'), ('auto', 'ranking'), ('auto', 'gbt')]
UNIT = {'ns': 1e-9, 'us': 1e-6, 'ms': 1e-3, 's': 1.0}


def run(args):
    out = subprocess.run([HETUNE] + args, capture_output=True, text=True)
    if out.returncode:
        sys.exit('hetune %s: %s' % (' '.join(args), out.stderr.strip()))
    return out.stdout


def work(problem):
    return math.prod(int(kv.split('=')[1]) for kv in problem.split(','))


def predictions(kernel, folder, work_dir):
    """Measured median time and each kind's prediction of every held-out (problem, config)."""
    files = [os.path.join(DATA, kernel + '.csv')] + sorted(glob.glob(os.path.join(DATA, 'pass*', kernel + '.csv')))
    rows, times = [], {}
    for f in files:
        for r in csv.DictReader(open(f, newline='')):
            rows.append(r)
            if r['status'] == 'ok':
                times.setdefault((r['problem'], r['config']), []).append(float(r['time_s']))
    hold = set(sorted({p for p, _ in times}, key=work)[-2:])
    train = os.path.join(work_dir, kernel + '_train.csv')
    with open(train, 'w', newline='') as fp:
        w = csv.DictWriter(fp, fieldnames=rows[0].keys())
        w.writeheader()
        w.writerows(r for r in rows if r['problem'] not in hold)
    db = os.path.join(work_dir, kernel + '.db')
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    spec = os.path.join(ROOT, 'examples', folder, kernel + '.json')
    for kind in KINDS:
        run(['model', 'train', spec, '--data', train, '--kind', kind, '--db', db, '--name', kernel + '.' + kind])
    measured, pred = {}, {}
    for (p, c), v in times.items():
        if p not in hold:
            continue
        measured[(p, c)] = statistics.median(v)
        sizes = [a for kv in p.split(',') for a in ('--size', kv)]
        for kind in KINDS:
            out = run(['model', 'predict', kernel + '.' + kind, '--db', db, '--config', c] + sizes)
            m = re.search(r'([0-9.e+-]+) (ns|us|ms|s)\b', out)
            pred[(p, c, kind)] = float(m.group(1)) * UNIT[m.group(2)]
    return measured, pred


def score(measured, pred, combo):
    """Mean and max error %, mean penalty % of the geometric mean of the combo's predictions."""
    errs, groups = [], {}
    for (p, c), t in measured.items():
        y = math.exp(sum(math.log(pred[(p, c, k)]) for k in combo) / len(combo))
        errs.append(abs(y - t) / t)
        groups.setdefault(p, []).append((y, t))
    pens = [min(g)[1] / min(t for _, t in g) - 1 for g in groups.values()]
    return 100 * statistics.mean(errs), 100 * max(errs), 100 * statistics.mean(pens)


def main():
    work_dir = sys.argv[1] if len(sys.argv) > 1 else '/tmp/hetune_ensemble'
    os.makedirs(work_dir, exist_ok=True)
    data = {}
    for kernel, folder, cls in KERNELS:
        print('ensemble: %s' % kernel, file=sys.stderr)
        data[kernel] = (cls,) + predictions(kernel, folder, work_dir)
    print('| kinds (geometric mean) | compute mean % | memory mean % | max % | penalty mean % |')
    print('|---|---|---|---|---|')
    for combo in COMBOS:
        s = {k: score(m, p, combo) for k, (cls, m, p) in data.items()}
        comp = [s[k][0] for k, (cls, _, _) in data.items() if cls == 'compute']
        mem = [s[k][0] for k, (cls, _, _) in data.items() if cls == 'memory']
        print('| %s | %.1f | %.1f | %.1f | %.1f |' % ('+'.join(combo), statistics.mean(comp), statistics.mean(mem),
                                                    max(v[1] for v in s.values()),
                                                    statistics.mean(v[2] for v in s.values())))
    oracle = []
    print('\n| kernel | auto penalty % | lowest penalty % (kind, chosen with hindsight) |')
    print('|---|---|---|')
    for k, (cls, m, p) in data.items():
        pen = {kind: score(m, p, (kind,))[2] for kind in KINDS}
        best = min(pen, key=pen.get)
        oracle.append(pen[best])
        print('| %s | %.1f | %.1f (%s) |' % (k, pen['auto'], pen[best], best))
    print('\noracle: mean penalty %.1f%%' % statistics.mean(oracle))


if __name__ == '__main__':
    main()
