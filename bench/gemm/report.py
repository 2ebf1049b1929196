#!/usr/bin/env python3
"""Turns bench/gemm/results_<cpu|opencl|cuda>.tsv (run.sh) into a .md table and an .svg plot beside
it: per-shape GFLOP/s of the tuned kernel, the vendor library (the file's "# vendor:" line; OpenBLAS
in files without one) and the naive kernel, and the ResNet50-v1.5 total time weighted by each GEMM's
uses (the thesis's Table 4.4).

    bench/gemm/report.py [results_cpu.tsv] [--notes FILE]   (results_cpu.md was made with --notes notes_cpu.md)
"""
import math
import os
import sys


def load(path):
    head, rows = [], []
    with open(path) as f:
        cols = None
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                head.append(line[1:].strip())
            elif cols is None:
                cols = line.split("\t")
            elif line:
                rows.append(dict(zip(cols, line.split("\t"))))
    for r in rows:
        for c in ("uses", "m", "n", "k"):
            r[c] = int(r[c])
        if "openblas_gflops" in r:  # files written before run.sh measured other vendors
            r["vendor_gflops"] = r.pop("openblas_gflops")
        for c in ("tuned_gflops", "vendor_gflops", "naive_gflops", "tune_s", "vendor_tuned_gflops"):
            v = float(r.get(c) or "nan")  # vendor_tuned_gflops: only with TUNE_VENDOR
            r[c] = v if math.isfinite(v) and v > 0 else None
    return head, rows


def fmt(v, d=1):
    return "-" if v is None else f"{v:.{d}f}"


def ratio(a, b):
    return None if a is None or b is None else a / b


def vendor_name(head):
    for h in head:
        if h.startswith("vendor:"):
            return h.split(":", 1)[1].split("(")[0].strip()
    return "OpenBLAS"


def has_tuned_vendor(rows):
    return any(r["vendor_tuned_gflops"] is not None for r in rows)


def table(rows, title, vendor, tuned_vendor):
    """tuned_vendor: also the columns of the vendor's own kernel tuned by hetune (TUNE_VENDOR)."""
    extra = f" {vendor} tuned GFLOP/s | tuned / {vendor} tuned |" if tuned_vendor else ""
    out = [f"### {title}", "",
           f"| shape | m x n x k | tuned GFLOP/s | {vendor} GFLOP/s | naive GFLOP/s | tuned / {vendor} |{extra} "
           "tuning s | best config |",
           "|---|---|---|---|---|---|" + ("---|---|" if tuned_vendor else "") + "---|---|"]
    for r in rows:
        cells = (f" {fmt(r['vendor_tuned_gflops'])} | {fmt(ratio(r['tuned_gflops'], r['vendor_tuned_gflops']), 2)} |"
                 if tuned_vendor else "")
        out.append(f"| {r['group']} {r['id']} | {r['m']} x {r['n']} x {r['k']} | {fmt(r['tuned_gflops'])} | "
                   f"{fmt(r['vendor_gflops'])} | {fmt(r['naive_gflops'], 2)} | "
                   f"{fmt(ratio(r['tuned_gflops'], r['vendor_gflops']), 2)} |{cells} {fmt(r['tune_s'], 0)} | "
                   f"`{r['best']}` |")
    return out + [""]


def weighted(rows, col):
    total = 0.0
    for r in rows:
        if r[col] is None:
            return None
        total += r["uses"] * 2.0 * r["m"] * r["n"] * r["k"] / (r[col] * 1e9)
    return total


def svg(rows, path, vendor):
    bars = [("tuned_gflops", "#1f77b4"), ("vendor_gflops", "#ff7f0e")]
    title = f"GEMM GFLOP/s: tuned (blue) vs {vendor} (orange)"
    if has_tuned_vendor(rows):
        bars.append(("vendor_tuned_gflops", "#2ca02c"))
        title += f" vs {vendor} tuned by hetune (green)"
    w, h, left, top, bottom = 60 + 34 * len(rows), 340, 50, 30, 70
    peak = max([r[c] or 0 for r in rows for c, _ in bars] + [1])
    scale = (h - top - bottom) / peak
    bw = 24 // len(bars)
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{max(w, 420)}" height="{h}" font-family="sans-serif" '
         'font-size="10">', f'<text x="{left}" y="16" font-size="12">{title}</text>']
    for g in range(0, int(peak) + 1, max(1, int(peak / 5 / 10 + 1) * 10)):
        y = h - bottom - g * scale
        s.append(f'<line x1="{left}" x2="{w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                 f'<text x="{left - 4}" y="{y + 3:.1f}" text-anchor="end">{g}</text>')
    for i, r in enumerate(rows):
        x = left + 6 + 34 * i
        for j, (c, col) in enumerate(bars):
            v = r[c] or 0
            s.append(f'<rect x="{x + (bw + 1) * j}" y="{h - bottom - v * scale:.1f}" width="{bw}" '
                     f'height="{v * scale:.1f}" fill="{col}"/>')
        label = {"square": "s", "rect": "rect", "resnet": "L"}.get(r['group'], r['group']) + r['id']
        s.append(f'<text transform="translate({x + 14},{h - bottom + 8}) rotate(60)">{label}</text>')
    s.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(s) + "\n")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    here = os.path.dirname(os.path.abspath(__file__))
    path = args[0] if args else os.path.join(here, "results_cpu.tsv")
    notes = None
    if "--notes" in sys.argv:
        notes = open(sys.argv[sys.argv.index("--notes") + 1]).read()
    head, rows = load(path)
    vendor = vendor_name(head)
    base = os.path.splitext(path)[0]
    md = [f"# GEMM benchmark: hetune's tuned kernel vs {vendor} vs naive", ""]
    md += [f"- {h}" for h in head] + [""]
    if notes:
        md += [notes.rstrip(), ""]
    for group, title in (("square", "Square"), ("rect", "Rectangular (thesis shapes, sides scaled)"),
                         ("resnet", "ResNet50-v1.5 GEMMs (m scaled)")):
        sel = [r for r in rows if r["group"] == group]
        if sel:
            md += table(sel, title, vendor, has_tuned_vendor(rows))
    res = [r for r in rows if r["group"] == "resnet"]
    if res:
        t, o, n, ot = (weighted(res, c) for c in ("tuned_gflops", "vendor_gflops", "naive_gflops",
                                                     "vendor_tuned_gflops"))
        tv = has_tuned_vendor(rows)
        md += ["### Weighted total time over the ResNet50 GEMMs (Table 4.4 style, uses x time per call)", "",
               f"| | {vendor} |" + (f" {vendor} tuned |" if tv else "") + " tuned (hetune) | naive |",
               "|---|---|---|---|" + ("---|" if tv else ""),
               f"| total s ({len(res)} shapes, {sum(r['uses'] for r in res)} calls) | {fmt(o, 4)} |"
               + (f" {fmt(ot, 4)} |" if tv else "") + f" {fmt(t, 4)} | {fmt(n, 4)} |",
               ""]
        if t and o:
            md += [f"Tuned / {vendor} total time: {t / o:.3f} ({'faster' if t < o else 'slower'} than {vendor} by "
                   f"{abs(1 - t / o) * 100:.1f}%).", ""]
        if t and ot:
            md += [f"Tuned / {vendor} tuned total time: {t / ot:.3f}.", ""]
        tot = sum(r["tune_s"] or 0 for r in rows)
        md += [f"Tuning time, all shapes: {tot:.0f} s.", ""]
    svg(rows, base + ".svg", vendor)
    md += [f"![GFLOP/s per shape]({os.path.basename(base)}.svg)", ""]
    with open(base + ".md", "w") as f:
        f.write("\n".join(md))
    print("wrote", base + ".md", "and", base + ".svg")


if __name__ == "__main__":
    main()
