#!/usr/bin/env python3
"""Throughput of each config at every shape of a GEMM CSV, against the same config at the
smallest shape: separates a cliff of some shapes (row strides of 4 KiB alias in L1) from growth
in size. usage: strides.py CSV (hetune export --format csv of a GEMM kernel)"""
import collections
import csv
import statistics
import sys

from check import work  # product of the sizes: M * N * K here


def gflops(row):
    return 2 * work(row["problem"]) / float(row["time_s"]) / 1e9


def main(path):
    by_shape = collections.defaultdict(dict)
    for row in csv.DictReader(open(path)):
        if row["status"] == "ok":
            by_shape[row["problem"]][row["config"]] = gflops(row)

    shapes = sorted(by_shape, key=work)
    base = by_shape[shapes[0]]
    print(f"| shape | configs | median GFLOP/s | best GFLOP/s | median ratio to {shapes[0]} | lowest ratio |")
    print("|---|---|---|---|---|---|")
    for shape in shapes:
        g = by_shape[shape]
        ratios = [g[c] / base[c] for c in g if c in base]
        print(f"| {shape} | {len(g)} | {statistics.median(g.values()):.1f} | {max(g.values()):.1f} | "
              f"{statistics.median(ratios):.2f} | {min(ratios):.2f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: strides.py CSV")
    main(sys.argv[1])
