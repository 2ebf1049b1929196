#!/usr/bin/env python3
"""Checks and summarises the recorded datasets: per kernel the sizes, configs per size, rows,
failed evaluations, time range; whether every size has the same config set, duplicates, times > 0.
usage: python3 data/datasets/check.py [-v] [CSV...]   (-v lists the suspect rows)
       python3 data/datasets/check.py --ids CSV   (eval_ids of the suspect rows, comma-separated)   (default: every data/datasets/*.csv)"""
import csv
import glob
import os
import sys
from collections import defaultdict


def work(problem):
    """Product of the size values: the ordering key of problem sizes (FW, FH are fixed)."""
    p = 1
    for kv in problem.split(','):
        k, v = kv.split('=')
        if k not in ('FW', 'FH'):
            p *= int(v)
    return p


def check(path):
    rows = list(csv.DictReader(open(path, newline='')))
    by_size = defaultdict(list)
    for r in rows:
        by_size[r['problem']].append(r)
    sizes = sorted(by_size, key=work)
    problems = []
    seen = set()
    for r in rows:
        key = (r['device_id'], r['problem'], r['config'])
        if key in seen:
            problems.append('duplicate %s %s' % (r['problem'], r['config']))
        seen.add(key)
    ok = [r for r in rows if r['status'] == 'ok']
    bad = [r for r in ok if not float(r['time_s']) > 0]
    if bad:
        problems.append('%d ok rows with time_s <= 0' % len(bad))
    sets = {s: frozenset(r['config'] for r in by_size[s]) for s in sizes}
    largest = max(sets.values(), key=len)
    lines = []
    for s in sizes:
        t = [float(r['time_s']) for r in by_size[s] if r['status'] == 'ok']
        nfail = sum(r['status'] != 'ok' for r in by_size[s])
        note = '' if sets[s] == largest else ' (subset: %d of the %d configs)' % (len(sets[s]), len(largest)) \
            if sets[s] <= largest else ' (DIFFERENT config set)'
        lines.append('  %-28s configs %3d  failed %2d  time %s .. %s%s' % (
            s, len(by_size[s]), nfail, fmt(min(t)) if t else '-', fmt(max(t)) if t else '-', note))
        if note.startswith(' (DIFF'):
            problems.append('size %s has a different config set' % s)
    suspects = find_suspects(ok, sizes)
    t = [float(r['time_s']) for r in ok]
    name = os.path.basename(path)[:-4]
    print('%s: %d rows, %d sizes, %d ok, %d failed, time %s .. %s, size-product ratio %.0fx' % (
        name, len(rows), len(sizes), len(ok), len(rows) - len(ok), fmt(min(t)), fmt(max(t)),
        work(sizes[-1]) / work(sizes[0])))
    print('\n'.join(lines))
    for r in rows:
        if r['status'] != 'ok':
            print('  failed: %s %s %s %s' % (r['problem'], r['config'], r['status'], r['message'][:80]))
    print('  suspect rows (> %.1fx slower than a neighbouring size predicts): %d' % (
        SUSPECT_RATIO, len(suspects)))
    if VERBOSE:
        for r in suspects:
            print('    eval %s %s %s %s' % (r['eval_id'], r['problem'], r['config'], fmt(float(r['time_s']))))
    for p in problems:
        print('  PROBLEM: ' + p)
    return not problems


SUSPECT_RATIO = 1.4
VERBOSE = False


def find_suspects(ok, sizes):
    """Rows much slower than their neighbouring sizes predict. On this shared 2-core machine a
    run whose thread lost its core to another process waits whole scheduler ticks (4 ms steps),
    so its time is an artefact, not the kernel. The prediction from a neighbouring size is the
    config's time there scaled by the median ratio of all configs between the two sizes; a row
    is suspect when it is SUSPECT_RATIO times slower than the lower of its (one or two)
    predictions, i.e. inconsistent with at least one neighbour."""
    t = {(r['config'], r['problem']): float(r['time_s']) for r in ok}
    ratio = []
    for lo, hi in zip(sizes, sizes[1:]):
        q = sorted(t[c, hi] / t[c, lo] for c, p in t if p == lo and (c, hi) in t)
        ratio.append(q[len(q) // 2] if q else None)
    out = []
    for r in ok:
        i, c = sizes.index(r['problem']), r['config']
        pred = []
        if i > 0 and (c, sizes[i - 1]) in t and ratio[i - 1]:
            pred.append(t[c, sizes[i - 1]] * ratio[i - 1])
        if i + 1 < len(sizes) and (c, sizes[i + 1]) in t and ratio[i]:
            pred.append(t[c, sizes[i + 1]] / ratio[i])
        if pred and t[c, r['problem']] > SUSPECT_RATIO * min(pred):
            out.append(r)
    return out


def fmt(s):
    return '%.3g ms' % (s * 1e3) if s >= 1e-3 else '%.3g us' % (s * 1e6)


if __name__ == '__main__':
    args = sys.argv[1:]
    if args and args[0] == '--ids':
        for p in args[1:]:
            rows = [r for r in csv.DictReader(open(p, newline='')) if r['status'] == 'ok']
            sizes = sorted({r['problem'] for r in rows}, key=work)
            print(','.join(r['eval_id'] for r in find_suspects(rows, sizes)))
        sys.exit(0)
    if args and args[0] == '-v':
        VERBOSE = True
        args = args[1:]
    paths = args or sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), '*.csv')))
    good = all([check(p) for p in paths])
    sys.exit(0 if good else 1)
