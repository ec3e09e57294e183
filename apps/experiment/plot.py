#!/usr/bin/env python3
"""Turns meanshift-experiment CSVs into PNG figures (docs/experiments.md).

Usage: plot.py [--out docs/figures] [--period 32] FILE.csv [FILE.csv ...]

One figure per CSV, named after the file (results/n_cpu.csv -> docs/figures/n_cpu.png); its kind
follows the CSV's `sweep` column:
  n        one-step time vs n per backend (log-log) and pairs/s; vertical lines every --period
           points (default 32: a warp, two AVX-512 registers of modes) when the sweep has step 1
           (paper 001, Fig. 3: steps every 64 on its GPU)
  fload    one-step time vs f_load, one line per f_vppu (Fig. 2), with the model's utilisation
  preload  one-step time vs n, preloading off / on per preload size (Fig. 1)
  error    E_CPU-GPU (eq. 7-8) vs n per backend (Fig. 4)
  blobs    cluster() time vs n per backend (papers 000/002 tables), with their published numbers
  threads  speedup vs threads per n
  model    one-step time vs m·n per topology
A CSV written by `fit --predictions` (non-zero `predicted`) gives a measured-vs-predicted plot.
Only the Python standard library and matplotlib (Agg) are needed (Debian: python3-matplotlib).
"""

import argparse
import csv
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Published numbers, seconds for 10 fixed iterations of make_blobs data (3-D, bandwidth 2).
# 000 = Del Lungo & Petrone (i7-860, GTX 980; Tables 5, 6); 002 = Meoni & Corsinovi (Ryzen 5 3500U,
# RTX A2000; Table 2.6 CUDA, Tables 2.1-2.4 sequential; 5 centres, std 1).
PUBLISHED = {
    "000 sequential (i7-860)": {100: 0.0232, 1000: 2.0954, 10000: 205.168, 100000: 21266.10},
    "000 CUDA tiled (GTX 980)": {100: 0.00060, 1000: 0.00442, 10000: 0.05131, 100000: 4.84162,
                                 500000: 118.647, 1000000: 472.190},
    "002 sequential (Ryzen 5 3500U)": {100: 0.0357650, 1000: 4.0584600, 10000: 350.297, 20000: 1451.12},
    "002 CUDA (RTX A2000)": {100: 0.000201, 1000: 0.001057, 10000: 0.013681, 20000: 0.020681,
                             100000: 0.814327, 250000: 4.817884, 500000: 19.3792, 1000000: 78.010368,
                             2000000: 323.810242},
}


def num(row, key, default=0.0):
    v = row.get(key, "")
    try:
        return float(v) if v != "" else default
    except ValueError:
        return default


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def label_of(row):
    lab = row["backend"]
    if row.get("preload") == "1":
        lab += " preload" + (f" {row['preload_size']}" if row.get("preload_size", "0") != "0" else "")
    return lab


def finish(fig, out, title, source):
    fig.suptitle(title, fontsize=10)
    fig.text(0.01, 0.005, f"data: {source}", fontsize=6, color="grey")
    fig.tight_layout(rect=(0, 0.02, 1, 0.97))
    fig.savefig(out, dpi=120)
    plt.close(fig)
    print(f"wrote {out}")


def device_of(rows):
    devs = sorted({r.get("device", "") for r in rows if r.get("device")})
    return "; ".join(devs)


PERIOD = 32


def plot_n(rows, out, source):
    groups = defaultdict(list)
    for r in rows:
        groups[(label_of(r), r.get("threads", "0"))].append(r)
    ns = sorted({int(num(r, "n")) for r in rows})
    step1 = len(ns) > 8 and all(b - a == 1 for a, b in zip(ns, ns[1:]))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for (lab, thr), g in sorted(groups.items()):
        g.sort(key=lambda r: num(r, "n"))
        x = [num(r, "n") for r in g]
        name = lab + (f" ({thr} thr)" if thr not in ("0", "") else "")
        line, = ax1.plot(x, [num(r, "seconds") for r in g], ".-" if not step1 else "-", ms=3, lw=1, label=name)
        if any(num(r, "predicted") > 0 for r in g):
            ax1.plot(x, [num(r, "predicted") for r in g], "--", color="black", lw=0.8,
                     label=f"{name}: fitted model")
        ax2.plot(x, [num(r, "pairs_per_second") for r in g], ".-" if not step1 else "-", ms=3, lw=1, label=name)
    if step1:
        for v in range(PERIOD, ns[-1] + 1, PERIOD):
            ax1.axvline(v, color="grey", lw=0.4, alpha=0.5)
            ax2.axvline(v, color="grey", lw=0.4, alpha=0.5)
    else:
        ax1.set_xscale("log")
        ax1.set_yscale("log")
        ax2.set_xscale("log")
    ax1.set_xlabel("n (points = modes)")
    ax1.set_ylabel("seconds per iteration (median)")
    ax2.set_xlabel("n")
    ax2.set_ylabel("pair interactions / s")
    ax1.legend(fontsize=7)
    ax1.grid(alpha=0.3)
    ax2.grid(alpha=0.3)
    finish(fig, out, "One iteration of Alg. 3 over all modes vs n" + (f" (step 1; grey: multiples of {PERIOD})" if step1 else "")
           + f"\n{device_of(rows)}", source)


def plot_fload(rows, out, source):
    backends = sorted({r["backend"] for r in rows})
    fig, axes = plt.subplots(1, len(backends) + 1, figsize=(5.5 * (len(backends) + 1), 4.2), squeeze=False)
    axes = axes[0]
    colours = {}
    for ax, b in zip(axes, backends):
        by_fv = defaultdict(list)
        for r in rows:
            if r["backend"] == b:
                by_fv[int(num(r, "f_vppu"))].append(r)
        for fv, g in sorted(by_fv.items()):
            g.sort(key=lambda r: num(r, "f_load"))
            x = [num(r, "f_load") for r in g]
            line, = ax.plot(x, [num(r, "seconds") for r in g], "o-", ms=3, label=f"f_vppu={fv}",
                            color=colours.get(fv))
            colours[fv] = line.get_color()
            if any(num(r, "predicted") > 0 for r in g):
                ax.plot(x, [num(r, "predicted") for r in g], "--", color=line.get_color(), lw=0.8)
        ax.set_yscale("log")
        ax.set_xlabel("f_load (PUs of a vPPU sharing the n-loop)")
        ax.set_ylabel("seconds per iteration (median; dashed: model)")
        ax.set_title(f"{b}: {device_of([r for r in rows if r['backend'] == b])}", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    ax2 = axes[-1]
    by_fv = defaultdict(dict)
    for r in rows:
        by_fv[(r["backend"], int(num(r, "f_vppu")))][num(r, "f_load")] = num(r, "utilisation")
    styles = {b: s for b, s in zip(backends, ["o-", "s--", "^:"])}
    for (b, fv), g in sorted(by_fv.items()):
        xs = sorted(g)
        ax2.plot(xs, [g[x] for x in xs], styles.get(b, "o-"), ms=3, color=colours.get(fv),
                 label=f"{b} f_vppu={fv}" if len(backends) > 1 else f"f_vppu={fv}")
    ax2.set_xlabel("f_load")
    ax2.set_ylabel("utilisation of the PU-slots predicted by Thm. 1-2")
    ax2.set_ylim(0, 1.05)
    ax2.grid(alpha=0.3)
    ax2.legend(fontsize=7)
    n = sorted({int(num(r, "n")) for r in rows})
    finish(fig, out, f"Load factor sweep (paper 001, Fig. 2), n = m = {', '.join(map(str, n))}", source)


def plot_preload(rows, out, source):
    groups = defaultdict(list)
    for r in rows:
        groups[label_of(r)].append(r)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for lab, g in sorted(groups.items()):
        g.sort(key=lambda r: num(r, "n"))
        ax.plot([num(r, "n") for r in g], [num(r, "seconds") for r in g], "o-", ms=3, label=lab)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (points = modes)")
    ax.set_ylabel("seconds per iteration (median)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    finish(fig, out, f"Preloading (Alg. 7) on / off (paper 001, Fig. 1)\n{device_of(rows)}", source)


def plot_error(rows, out, source):
    groups = defaultdict(list)
    for r in rows:
        groups[r["backend"]].append(r)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for lab, g in sorted(groups.items()):
        g.sort(key=lambda r: num(r, "n"))
        x = [num(r, "n") for r in g]
        ax.plot(x, [max(num(r, "error"), 1e-12) for r in g], "o-", ms=3, label=f"{lab}: E (eq. 7)")
        ax.plot(x, [max(num(r, "error_max"), 1e-12) for r in g], "x:", ms=3, label=f"{lab}: worst mode")
    ax.axhline(0.7, color="red", lw=0.8, ls="--", label="paper 001 Fig. 4 maximum (0.7)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (integer 3-D tuples)")
    ax.set_ylabel("mean L1 distance to the float64 serial modes")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    finish(fig, out, "E_CPU-GPU of eq. 7-8: backend vs serial oracle (paper 001, Fig. 4)", source)


def plot_blobs(rows, out, source):
    groups = defaultdict(list)
    for r in rows:
        groups[r["backend"]].append(r)
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for lab, g in sorted(groups.items()):
        g.sort(key=lambda r: num(r, "n"))
        ax.plot([num(r, "n") for r in g], [num(r, "seconds") for r in g], "o-", ms=4, lw=1.5,
                label=f"ours: {lab}")
    for lab, pts in PUBLISHED.items():
        xs = sorted(pts)
        ax.plot(xs, [pts[x] for x in xs], "s--", ms=3, lw=0.8, alpha=0.6, label=f"published {lab}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (make_blobs, 3-D)")
    ax.set_ylabel("seconds, 10 fixed iterations")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, loc="upper left")
    finish(fig, out, f"make_blobs benchmark of papers 000/002 (bandwidth 2, 10 iterations)\n{device_of(rows)}", source)


def plot_threads(rows, out, source):
    by_n = defaultdict(list)
    for r in rows:
        if r["backend"] != "serial":
            by_n[int(num(r, "n"))].append(r)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    tmax = 1
    for n, g in sorted(by_n.items()):
        g.sort(key=lambda r: num(r, "threads"))
        t1 = next((num(r, "seconds") for r in g if num(r, "threads") == 1), None)
        if not t1:
            continue
        xs = [num(r, "threads") for r in g]
        tmax = max(tmax, max(xs))
        ax.plot(xs, [t1 / num(r, "seconds") for r in g], "o-", ms=3, label=f"n={n}")
    ax.plot([1, tmax], [1, tmax], "k:", lw=0.8, label="linear")
    ax.set_xlabel("OpenMP threads")
    ax.set_ylabel("speedup over 1 thread")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    finish(fig, out, f"OpenMP thread scaling (make_blobs, 10 iterations)\n{device_of(rows)}", source)


def plot_model(rows, out, source):
    groups = defaultdict(list)
    for r in rows:
        groups[(r["backend"], r["f_vppu"], r["f_load"])].append(r)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for (b, fv, fl), g in sorted(groups.items()):
        g.sort(key=lambda r: num(r, "m") * num(r, "n"))
        ax.plot([num(r, "m") * num(r, "n") for r in g], [num(r, "seconds") for r in g], ".", ms=4,
                label=f"{b} f_vppu={fv} f_load={fl}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("m · n (pair interactions per iteration)")
    ax.set_ylabel("seconds per iteration")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    finish(fig, out, f"Cost-model sweep\n{device_of(rows)}", source)


def plot_fit(rows, out, source):
    groups = defaultdict(list)
    for r in rows:
        groups[(r["backend"], r["sweep"])].append(r)
    fig, ax = plt.subplots(figsize=(5.5, 5))
    lo, hi = math.inf, 0
    for (b, sw), g in sorted(groups.items()):
        t = [num(r, "seconds") for r in g]
        p = [num(r, "predicted") for r in g]
        lo, hi = min(lo, min(t), min(p)), max(hi, max(t), max(p))
        ax.plot(t, p, ".", ms=4, label=f"{b} ({sw})")
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.6, label="predicted = measured")
    ax.plot([lo, hi], [lo * 1.35, hi * 1.35], "k:", lw=0.5, label="±35 %")
    ax.plot([lo, hi], [lo / 1.35, hi / 1.35], "k:", lw=0.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured seconds")
    ax.set_ylabel("predicted by the fitted model (Thm. 1-3)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    finish(fig, out, f"Cost-model fit\n{device_of(rows)}", source)


PLOTTERS = {"n": plot_n, "fload": plot_fload, "preload": plot_preload, "error": plot_error,
            "blobs": plot_blobs, "threads": plot_threads, "model": plot_model}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="docs/figures", help="folder for the PNG files")
    ap.add_argument("--period", type=int, default=32, help="grid lines of step-1 n sweeps")
    ap.add_argument("csv", nargs="+")
    args = ap.parse_args()
    global PERIOD
    PERIOD = max(1, args.period)
    os.makedirs(args.out, exist_ok=True)
    status = 0
    for path in args.csv:
        rows = [r for r in read(path) if num(r, "seconds") > 0 or num(r, "error", -1) >= 0]
        if not rows:
            print(f"{path}: no rows", file=sys.stderr)
            status = 1
            continue
        stem = os.path.splitext(os.path.basename(path))[0]
        out = os.path.join(args.out, stem + ".png")
        if any(num(r, "predicted") > 0 for r in rows) and rows[0]["sweep"] not in ("fload", "n"):
            plot_fit(rows, out, os.path.basename(path))
            continue
        sweep = rows[0]["sweep"]
        if sweep not in PLOTTERS:
            print(f"{path}: unknown sweep '{sweep}'", file=sys.stderr)
            status = 1
            continue
        PLOTTERS[sweep](rows, out, os.path.basename(path))
    return status


if __name__ == "__main__":
    sys.exit(main())
