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
    print('%s: %d rows, %d sizes, %d ok, %d failed, time %s .. %s, work ratio %.0fx' % (
        name, len(rows), len(sizes), len(ok), len(rows) - len(ok), fmt(min(t)), fmt(max(t)),
        work(sizes[-1]) / work(sizes[0])))
    print('\n'.join(lines))
    for r in rows:
        if r['status'] != 'ok':
            print('  failed: %s %s %s %s' % (r['problem'], r['config'], r['status'], r['message'][:80]))
    print('  suspect rows (slower than the same config at a size with more work by > %.1fx): %d' % (
        SUSPECT_RATIO, len(suspects)))
    if VERBOSE:
        for r in suspects:
            print('    eval %s %s %s %s' % (r['eval_id'], r['problem'], r['config'], fmt(float(r['time_s']))))
    for p in problems:
        print('  PROBLEM: ' + p)
    return not problems


SUSPECT_RATIO = 1.5
VERBOSE = False


def find_suspects(ok, sizes):
    """Rows slower than the same config at a larger problem: on this shared 2-core machine a
    multi-threaded run whose second thread lost its core to another process waits whole
    scheduler ticks (4 ms steps), so such rows are measurement artefacts, not the kernel."""
    rank = {s: i for i, s in enumerate(sizes)}
    by_cfg = defaultdict(list)
    for r in ok:
        by_cfg[r['config']].append(r)
    out = []
    for rows in by_cfg.values():
        rows.sort(key=lambda r: rank[r['problem']])
        for i, r in enumerate(rows):
            later = [float(x['time_s']) for x in rows[i + 1:] if work(x['problem']) > work(r['problem'])]
            if later and float(r['time_s']) > SUSPECT_RATIO * min(later):
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
