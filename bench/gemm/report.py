#!/usr/bin/env python3
"""Turns bench/gemm/results_<cpu|opencl|cuda>.tsv (run.sh) into a .md table and an .svg plot beside
it: per-shape GFLOP/s of the tuned kernel, the vendor library (the file's "# vendor:" line; OpenBLAS
in files without one) and the naive kernel, and the ResNet50-v1.5 total time weighted by each GEMM's
uses (the thesis's Table 4.4).

    bench/gemm/report.py [results_cpu.tsv] [--notes FILE]   (results_cpu.md was made with --notes notes_cpu.md)
    bench/gemm/report.py results_*.tsv --svg-only           (redraws the plots alone, the .md kept)
"""
import math
import re
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


# Okabe-Ito colours (colour-blind safe): tuned, vendor, vendor tuned by hetune, naive.
SERIES = (("tuned_gflops", "hetune (tuned)", "#0072B2"), ("vendor_gflops", "{v}", "#D55E00"),
          ("vendor_tuned_gflops", "{v} tuned by hetune", "#009E73"), ("naive_gflops", "naive", "#E69F00"))


def group_names(head):
    """Each shape group's label, with the scale the run used (run.sh writes "resnet m / 64,
    rectangles / 4" in its header; 1 is full size)."""
    text = " ".join(head)
    scale = {k: (re.search(pat, text).group(1) if re.search(pat, text) else None)
             for k, pat in (("resnet", r"resnet m / (\d+)"), ("rect", r"rectangles / (\d+)"))}
    def scaled(name, what, key):
        return name if scale[key] in (None, "1") else f"{name} ({what} / {scale[key]})"
    return {"square": "square", "rect": scaled("rectangular", "sides", "rect"),
            "resnet": scaled("ResNet50-v1.5 GEMMs", "m", "resnet")}


def esc(t):
    return str(t).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def log_axis(lo, hi):
    """The axis range snapped to 1, 2 or 5 x 10^k, and its decade ticks."""
    def snap(v, up):
        d = 10 ** math.floor(math.log10(v))
        steps = [m * d for m in (1, 2, 5, 10)]
        return min(s for s in steps if s >= v * (1 - 1e-9)) if up else max(s for s in steps if s <= v * (1 + 1e-9))
    lo, hi = snap(lo, False), snap(hi, True)
    ks = range(math.floor(math.log10(lo)), math.floor(math.log10(hi) + 1e-9) + 1)
    mult = (1,) if len(ks) > 3 else (1, 2, 5)  # under three decades: 2 and 5 between them too
    ticks = [m * 10.0 ** k for k in ks for m in mult if lo * (1 - 1e-9) <= m * 10.0 ** k <= hi * (1 + 1e-9)]
    return lo, hi, ticks


def header_value(head, key, default=""):
    for h in head:
        if h.startswith(key + ":"):
            return h.split(":", 1)[1].strip()
    return default


def svg(rows, path, vendor, head=()):
    """Grouped bars of GFLOP/s per shape (named M x N x K), on a log axis: the naive kernel runs
    100x slower than the others. Shape groups are bracketed under the axis."""
    series = [(c, n.format(v=vendor), col) for c, n, col in SERIES if any(r[c] is not None for r in rows)]
    vals = [r[c] for r in rows for c, _, _ in series if r[c] is not None]
    lo, hi, ticks = log_axis(min(vals) / 1.6, max(vals) * 1.3)  # the smallest bar stays visible
    bw, gap, left, top, right = 11, 12, 72, 44, 230
    slot = bw * len(series) + gap
    pw, ph, rp = slot * len(rows), 300, 110  # rp: the ratio panel under the bars
    label_h = 14 + 0.64 * 6.6 * max(len(shape_name(r)) for r in rows)
    base = top + ph + 14 + rp  # the bottom of the ratio panel, where the shape names hang
    dev = header_value(head, "device", "").split("(")[-1].rstrip(")") or vendor
    title = f"GEMM GFLOP/s per shape: hetune's tuned kernel and " + ", ".join(n for c, n, _ in series[1:])
    sub = f"{dev}, {header_value(head, 'cpu', '').split(';')[-1].strip()}"
    width, height = max(left + pw + right, left + 8.6 * len(title) + 10, left + 6.9 * len(sub) + 10), base + label_h + 90
    y = lambda v: top + ph - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * ph

    s = [f"<?xml version='1.0' encoding='UTF-8'?>",
         f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
         f"viewBox='0 0 {width:.0f} {height:.0f}' font-family='DejaVu Sans, Helvetica, Arial, sans-serif'>",
         f"<rect width='100%' height='100%' fill='white'/>",
         f"<text x='{left}' y='18' font-size='15'>{title}</text>",
         f"<text x='{left}' y='35' font-size='12' fill='#444'>{esc(sub)}</text>"]
    for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in range(2, 10):
            v = m * 10.0 ** k
            if lo < v < hi:
                s.append(f"<line x1='{left}' x2='{left + 3}' y1='{y(v):.1f}' y2='{y(v):.1f}' stroke='#555'/>")
    for t in ticks:
        lab = f"{t:g}" if 1e-3 <= t < 1e6 else f"{t:.0e}".replace("e+0", "e").replace("e-0", "e-")
        s.append(f"<line x1='{left}' x2='{left + pw}' y1='{y(t):.1f}' y2='{y(t):.1f}' stroke='#e4e4e4'/>"
                 f"<line x1='{left - 4}' x2='{left}' y1='{y(t):.1f}' y2='{y(t):.1f}' stroke='#555'/>"
                 f"<text x='{left - 6}' y='{y(t) + 4:.1f}' font-size='11' text-anchor='end'>{lab}</text>")
    for i, r in enumerate(rows):
        x0 = left + gap / 2 + slot * i
        for j, (c, _, col) in enumerate(series):
            if r[c] is not None:
                s.append(f"<rect x='{x0 + bw * j:.1f}' y='{y(r[c]):.1f}' width='{bw}' height='{top + ph - y(r[c]):.1f}' "
                         f"fill='{col}' stroke='white' stroke-width='0.5'/>")
        cx = x0 + bw * len(series) / 2
        s.append(f"<text x='{cx + 3:.1f}' y='{base + 12}' font-size='11' text-anchor='end' "
                 f"transform='rotate(-40 {cx + 3:.1f} {base + 12})'>{esc(shape_name(r))}</text>")
    s += ratio_panel(rows, series, left, top + ph + 14, pw, rp, slot, vendor)
    i, level = 0, 0
    while i < len(rows):  # brackets naming the groups, dashed lines between them
        j = i
        while j < len(rows) and rows[j]["group"] == rows[i]["group"]:
            j += 1
        a, b, by = left + slot * i + 4, left + slot * j - 4, base + label_h + 4
        name = group_names(head).get(rows[i]["group"], rows[i]["group"])
        level = 1 if level == 0 and 7 * len(name) > b - a else 0  # a name wider than its bracket: a row lower
        s.append(f"<path d='M{a:.1f} {by - 4:.1f}v4H{b:.1f}v-4' fill='none' stroke='#555'/>"
                 f"<text x='{(a + b) / 2:.1f}' y='{by + 14 + 15 * level:.1f}' font-size='12' text-anchor='middle'>"
                 f"{esc(name)}</text>")
        if i:
            s.append(f"<line x1='{left + slot * i}' x2='{left + slot * i}' y1='{top}' y2='{base}' stroke='#999' "
                     "stroke-dasharray='3 3'/>")
        i = j
    s.append(f"<rect x='{left}' y='{top}' width='{pw}' height='{ph}' fill='none' stroke='#333'/>")
    s.append(f"<text x='18' y='{top + ph / 2}' font-size='13' text-anchor='middle' "
             f"transform='rotate(-90 18 {top + ph / 2})'>GFLOP/s (log scale)</text>")
    s.append(f"<text x='{left + pw / 2}' y='{base + label_h + 56:.0f}' font-size='13' text-anchor='middle'>"
             "shape (M×N×K)</text>")
    for j, (_, name, col) in enumerate(series):
        ly = top + 10 + 18 * j
        s.append(f"<rect x='{left + pw + 14}' y='{ly - 5.5}' width='26' height='11' fill='{col}'/>"
                 f"<text x='{left + pw + 48}' y='{ly + 4}' font-size='12'>{esc(name)}</text>")
    note = "Bars missing: not measured (the naive kernel is skipped above 2·M·N·K = 1e10)."
    if any(r[c] is None for r in rows for c, _, _ in series):
        s.append(f"<text x='10' y='{height - 10:.0f}' font-size='11'>{note}</text>")
    s.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(s) + "\n")


def ratio_panel(rows, series, left, top, pw, ph, slot, vendor):
    """tuned / vendor (and tuned / vendor tuned) per shape, on a linear axis with 1 marked: the
    comparison the log axis above compresses."""
    pairs = [(c, col, m) for c, _, col in series for cc, m in (("vendor_gflops", "circle"),
                                                               ("vendor_tuned_gflops", "diamond")) if c == cc]
    vals = [r["tuned_gflops"] / r[c] for r in rows for c, _, _ in pairs if r[c] and r["tuned_gflops"]]
    if not vals:
        return []
    step = 0.5 if max(vals) - min(min(vals), 1) <= 3 else 1 if max(vals) <= 8 else 5
    lo, hi = math.floor(min(min(vals), 0.5) / step) * step, max(1.5, math.ceil(max(vals) * 1.06 / step) * step)
    y = lambda v: top + ph - (v - lo) / (hi - lo) * ph
    s = []
    t = lo
    while t <= hi + 1e-9:
        s.append(f"<line x1='{left}' x2='{left + pw}' y1='{y(t):.1f}' y2='{y(t):.1f}' stroke='#e4e4e4'/>"
                 f"<line x1='{left - 4}' x2='{left}' y1='{y(t):.1f}' y2='{y(t):.1f}' stroke='#555'/>"
                 f"<text x='{left - 6}' y='{y(t) + 4:.1f}' font-size='11' text-anchor='end'>{t:g}</text>")
        t += step
    s.append(f"<line x1='{left}' x2='{left + pw}' y1='{y(1):.1f}' y2='{y(1):.1f}' stroke='#333' stroke-dasharray='5 3'/>")
    for i, r in enumerate(rows):
        cx = left + slot * (i + 0.5)
        for c, col, m in pairs:
            if not (r[c] and r["tuned_gflops"]):
                continue
            v = y(r["tuned_gflops"] / r[c])
            if m == "circle":
                s.append(f"<circle cx='{cx:.1f}' cy='{v:.1f}' r='3.5' fill='{col}'/>")
            else:
                s.append(f"<path d='M{cx:.1f} {v - 4.5:.1f}l4 4.5l-4 4.5l-4 -4.5z' fill='{col}'/>")
    s.append(f"<rect x='{left}' y='{top}' width='{pw}' height='{ph}' fill='none' stroke='#333'/>")
    s.append(f"<text x='18' y='{top + ph / 2}' font-size='13' text-anchor='middle' "
             f"transform='rotate(-90 18 {top + ph / 2})'>speedup</text>")
    for j, (c, col, m) in enumerate(pairs):  # the markers' legend, beside the panel
        lx, ly = left + pw + 27, top + 10 + 18 * j
        name = f"tuned / {vendor}" + (" tuned" if c == "vendor_tuned_gflops" else "")
        s.append(f"<circle cx='{lx}' cy='{ly}' r='3.5' fill='{col}'/>" if m == "circle" else
                 f"<path d='M{lx} {ly - 4.5}l4 4.5l-4 4.5l-4 -4.5z' fill='{col}'/>")
        s.append(f"<text x='{lx + 21}' y='{ly + 4}' font-size='12'>{esc(name)}</text>")
    s.append(f"<text x='{left + pw + 14}' y='{top + 16 + 18 * len(pairs)}' font-size='11' fill='#444'>"
             "dashed: 1 (parity)</text>")
    return s


def shape_name(r):
    return f"{r['m']}×{r['n']}×{r['k']}"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    here = os.path.dirname(os.path.abspath(__file__))
    if "--svg-only" in sys.argv:
        for path in args or [os.path.join(here, "results_cpu.tsv")]:
            head, rows = load(path)
            svg(rows, os.path.splitext(path)[0] + ".svg", vendor_name(head), head)
            print("wrote", os.path.splitext(path)[0] + ".svg")
        return
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
    svg(rows, base + ".svg", vendor, head)
    md += [f"![GFLOP/s per shape]({os.path.basename(base)}.svg)", ""]
    with open(base + ".md", "w") as f:
        f.write("\n".join(md))
    print("wrote", base + ".md", "and", base + ".svg")


if __name__ == "__main__":
    main()
