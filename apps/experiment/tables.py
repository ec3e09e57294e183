#!/usr/bin/env python3
"""Markdown tables for docs/experiments.md from meanshift-experiment CSVs (standard library only).

Usage: tables.py KIND FILE.csv [FILE.csv ...]
  blobs    seconds per backend and n (10 fixed iterations), speedup over serial, published numbers
  threads  seconds and speedup over 1 thread / over serial
  error    E_CPU-GPU (eq. 7-8) per backend and n
  preload  seconds per n for preloading off / on per size, and on/off ratio
  fload    seconds per (f_vppu, f_load), measured t/t(f_load=f_vppu) vs the theorems' 1/U
"""

import csv
import sys
from collections import defaultdict

PUBLISHED_000 = {"seq": {100: 0.0232, 1000: 2.0954, 10000: 205.168, 100000: 21266.10},
                 "omp8": {100: 0.0085, 1000: 0.5099, 10000: 50.2230, 100000: 4970.49},
                 "cuda": {100: 0.00060, 1000: 0.00442, 10000: 0.05131, 100000: 4.84162, 500000: 118.647,
                          1000000: 472.190}}
PUBLISHED_002 = {"cuda": {100: 0.000201, 1000: 0.001057, 10000: 0.013681, 20000: 0.020681, 100000: 0.814327,
                          250000: 4.817884, 500000: 19.3792, 1000000: 78.010368, 2000000: 323.810242}}


def rows_of(paths):
    out = []
    for p in paths:
        with open(p, newline="") as f:
            out += list(csv.DictReader(f))
    return out


def f(v, default=0.0):
    try:
        return float(v) if v not in ("", None) else default
    except ValueError:
        return default


def sec(v):
    if v <= 0:
        return "—"
    if v < 1e-3:
        return f"{v * 1e6:.0f} µs"
    if v < 1:
        return f"{v * 1e3:.3g} ms"
    return f"{v:.3g} s"


def blobs(rows):
    backends = []
    for r in rows:
        if r["backend"] not in backends:
            backends.append(r["backend"])
    t = defaultdict(dict)
    notes = {}
    for r in rows:
        t[int(f(r["n"]))][r["backend"]] = f(r["seconds"])
        notes[(int(f(r["n"])), r["backend"])] = r.get("note", "")
    print("| n | " + " | ".join(backends) + " | best speedup vs serial | 000 seq. | 000 OpenMP 8 thr. | 000 CUDA tiled (GTX 980) | 002 CUDA (RTX A2000) |")
    print("|---:|" + "---:|" * (len(backends) + 5))
    for n in sorted(t):
        cells = [sec(t[n].get(b, 0)) for b in backends]
        s = t[n].get("serial", 0)
        best = min((v for b, v in t[n].items() if b != "serial" and v > 0), default=0)
        sp = f"{s / best:.0f}×" if s > 0 and best > 0 else "—"
        pub = [sec(PUBLISHED_000["seq"].get(n, 0)), sec(PUBLISHED_000["omp8"].get(n, 0)),
               sec(PUBLISHED_000["cuda"].get(n, 0)), sec(PUBLISHED_002["cuda"].get(n, 0))]
        print(f"| {n:,} | " + " | ".join(cells) + f" | {sp} | " + " | ".join(pub) + " |")
    print("\nClusters found (grouping ε = 0.5 bandwidths, 3 true centres): " + "; ".join(
        f"n={n:,} {b}: {notes[(n, b)].split('; speedup')[0]}" for (n, b) in sorted(notes)))


def threads(rows):
    by_n = defaultdict(list)
    for r in rows:
        by_n[int(f(r["n"]))].append(r)
    print("| n | backend | threads | seconds | speedup vs 1 thread | speedup vs serial |")
    print("|---:|---|---:|---:|---:|---:|")
    for n, g in sorted(by_n.items()):
        t1 = next((f(r["seconds"]) for r in g if r["backend"] != "serial" and f(r["threads"]) == 1), 0)
        for r in g:
            s = f(r["seconds"])
            vs1 = f"{t1 / s:.2f}" if t1 > 0 and r["backend"] != "serial" else "—"
            sp = f"{f(r['speedup']):.1f}" if f(r["speedup"]) > 0 else "—"
            print(f"| {n:,} | {r['backend']} | {r['threads']} | {sec(s)} | {vs1} | {sp} |")


def error(rows):
    print("| backend | n | iterations (longest mode) | E (eq. 7) | worst mode | clusters (ε = 0) |")
    print("|---|---:|---:|---:|---:|---|")
    for r in sorted(rows, key=lambda r: (r["backend"], f(r["n"]))):
        print(f"| {r['backend']} | {int(f(r['n'])):,} | {r['iterations']} | {f(r['error']):.2e} | "
              f"{f(r['error_max']):.2e} | {r['note']} |")


def preload(rows):
    variants = []
    for r in rows:
        v = (r["backend"], r["f_vppu"], r["preload"], r["preload_size"])
        if v not in variants:
            variants.append(v)
    t = defaultdict(dict)
    for r in rows:
        t[int(f(r["n"]))][(r["backend"], r["f_vppu"], r["preload"], r["preload_size"])] = f(r["seconds"])
    names = [f"{b} f_vppu={fv} " + ("off" if p == "0" else f"on/{s if s != '0' else 'default'}")
             for b, fv, p, s in variants]
    print("| n | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for n in sorted(t):
        base = {}
        for v in variants:
            if v[2] == "0":
                base[(v[0], v[1])] = t[n].get(v, 0)
        cells = []
        for v in variants:
            s = t[n].get(v, 0)
            b = base.get((v[0], v[1]), 0)
            cells.append(sec(s) + (f" ({s / b:.2f}×)" if v[2] == "1" and b > 0 and s > 0 else ""))
        print(f"| {n:,} | " + " | ".join(cells) + " |")
    print("\n(×: time with preloading / time without; > 1 means preloading is slower)")


def fload(rows):
    by = defaultdict(dict)
    for r in rows:
        by[(r["backend"], int(f(r["f_vppu"])))][int(f(r["f_load"]))] = (f(r["seconds"]), f(r["utilisation"]))
    print("| backend | f_vppu | f_load | seconds | t / t(f_load = f_vppu) | 1/U predicted (U ratio) |")
    print("|---|---:|---:|---:|---:|---:|")
    for (b, fv), g in sorted(by.items()):
        ref = g.get(fv)
        for fl in sorted(g):
            s, u = g[fl]
            if not ref or fl not in (1, 2, 3, 4, 8, 16, 32, 63, 64) or fl > fv:
                continue
            print(f"| {b} | {fv} | {fl} | {sec(s)} | {s / ref[0]:.2f} | {ref[1] / u:.2f} |")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    kind, paths = sys.argv[1], sys.argv[2:]
    {"blobs": blobs, "threads": threads, "error": error, "preload": preload, "fload": fload}[kind](rows_of(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
