#!/usr/bin/env python3
"""Does `hetune tune --confirm` pick better configs on a noisy device?

For each seed: tune the same kernel and size twice with the same strategy, seed and budget (so
the same configs are asked), once plainly and once with --confirm K; then measure each run's chosen
config REF more times, each in its own process (a one-config copy of the spec), and take the median
as its reference time. Prints per seed the two choices' reference times and, over the seeds, the
median and mean ratio confirmed / plain (below 1: confirmation chose faster configs) and how often
each choice was the faster one.

usage: bench/confirm/confirm_bench.py [--spec S] [--device D] [--size K=V ...] [--budget N]
           [--confirm K] [--seeds N] [--ref N] [--work DIR]
defaults: examples/transpose/transpose_opencl.json on opencl, W=1024 H=1024, budget 20,
confirm 3, seeds 1..10, ref 5. HETUNE picks the binary (default build/hetune)."""
import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
HETUNE = os.environ.get('HETUNE', os.path.join(ROOT, 'build', 'hetune'))


def hetune(*args):
    out = subprocess.run([HETUNE] + list(args), capture_output=True, text=True)
    if out.returncode:
        sys.exit('hetune %s: %s' % (' '.join(args), out.stderr.strip()))
    return out.stdout


def best_config(stdout):
    for line in stdout.splitlines():
        if line.strip().startswith('best: '):
            return line.strip()[len('best: '):]
    sys.exit('no best config in:\n' + stdout)


def one_config_spec(spec_path, config, out_path):
    """A copy of the spec whose space is the one config (paths made absolute)."""
    spec = json.load(open(spec_path))
    here = os.path.dirname(os.path.abspath(spec_path))
    spec['source'] = os.path.join(here, spec['source'])
    if 'reference' in spec and 'source' in spec['reference']:
        spec['reference']['source'] = os.path.join(here, spec['reference']['source'])
    values = dict(kv.split('=') for kv in config.split(','))
    spec['parameters'] = {k: [int(v) if v.lstrip('-').isdigit() else v] for k, v in values.items()}
    json.dump(spec, open(out_path, 'w'))


def reference_times(args, configs, tag):
    """Median of args.ref measurements of each config, each a separate hetune process and database,
    the configs interleaved round by round so that a slow spell of the machine hits both."""
    paths = []
    for j, config in enumerate(configs):
        paths.append(os.path.join(args.work, '%s_%d.json' % (tag, j)))
        one_config_spec(args.spec, config, paths[-1])
    times = [[] for _ in configs]
    for i in range(args.ref):
        for j, path in enumerate(paths):
            db = os.path.join(args.work, '%s_%d_%d.db' % (tag, j, i))
            for suffix in ('', '-wal', '-shm'):
                if os.path.exists(db + suffix):
                    os.remove(db + suffix)
            hetune('tune', path, '--device', args.device, '--budget', '1', '--db', db, '--quiet', *args.size_args)
            rows = list(csv.DictReader(io.StringIO(hetune('export', '--format', 'csv', '--db', db))))
            times[j].append(float(rows[0]['time_s']))
    return [statistics.median(t) for t in times]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--spec', default=os.path.join(ROOT, 'examples', 'transpose', 'transpose_opencl.json'))
    ap.add_argument('--device', default='opencl')
    ap.add_argument('--size', action='append', default=None)
    ap.add_argument('--budget', type=int, default=20)
    ap.add_argument('--confirm', type=int, default=3)
    ap.add_argument('--seeds', type=int, default=10)
    ap.add_argument('--ref', type=int, default=5)
    ap.add_argument('--work', default='/tmp/hetune_confirm_bench')
    args = ap.parse_args()
    args.size_args = [a for kv in (args.size or ['W=1024', 'H=1024']) for a in ('--size', kv)]
    os.makedirs(args.work, exist_ok=True)
    ratios, wins = [], [0, 0, 0]
    print('| seed | plain choice | ref time | confirmed choice | ref time | ratio |')
    print('|---|---|---|---|---|---|')
    for seed in range(1, args.seeds + 1):
        chosen = []
        for mode, extra in (('plain', []), ('confirm', ['--confirm', str(args.confirm)])):
            db = os.path.join(args.work, '%s_%d.db' % (mode, seed))
            for suffix in ('', '-wal', '-shm'):
                if os.path.exists(db + suffix):
                    os.remove(db + suffix)
            out = hetune('tune', args.spec, '--device', args.device, '--strategy', 'random', '--seed', str(seed),
                         '--budget', str(args.budget), '--db', db, '--quiet', *args.size_args, *extra)
            chosen.append(best_config(out))
        if chosen[0] == chosen[1]:
            ref = reference_times(args, chosen[:1], 'ref_%d' % seed) * 2
        else:
            ref = reference_times(args, chosen, 'ref_%d' % seed)
        ratio = ref[1] / ref[0]
        ratios.append(ratio)
        wins[0 if ratio > 1 else 1 if ratio < 1 else 2] += 1
        print('| %d | %s | %.1f us | %s | %.1f us | %.3f |' % (seed, chosen[0], ref[0] * 1e6, chosen[1], ref[1] * 1e6,
                                                          ratio), flush=True)
    print('\nconfirmed / plain reference time: median %.3f, mean %.3f; confirmed faster in %d seeds, plain '
          'faster in %d, same config in %d' % (statistics.median(ratios), statistics.mean(ratios), wins[1], wins[0],
                                               wins[2]))


if __name__ == '__main__':
    main()
