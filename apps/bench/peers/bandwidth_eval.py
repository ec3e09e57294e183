#!/usr/bin/python3
"""Bandwidth selection evaluation (docs/bandwidth-selection.md).

For data whose clusters differ in scale (synthetic multi-scale blobs) and three real sets
(iris, wine, digits from scikit-learn, standardised per feature): the adjusted Rand index
against the true classes of our `meanshift cluster` with
  - the best of a grid of fixed isotropic bandwidths (an oracle: it looks at the truth),
  - each rule: auto (= quantile:0.3), scott, silverman, adaptive (k-NN, defaults), abramson
    (Abramson's pilot-density law, defaults),
and of scikit-learn's MeanShift with its own estimate_bandwidth, all in the same run.

Usage: /usr/bin/python3 apps/bench/peers/bandwidth_eval.py [--cli build/bin/meanshift]
           [--rules auto,scott,silverman,adaptive,abramson] [--grid 16] [--no-sklearn]
(--rules abramson:0.5,abramson:1,abramson:2 sweeps a rule's factor; --grid 0 skips the oracle;
 sets marked * are held out: they played no part in choosing the adaptive rule's constants)
Needs numpy and scikit-learn (Debian: python3-sklearn).
"""
import argparse
import os
import subprocess
import tempfile
import time

import numpy as np
from sklearn import datasets
from sklearn.cluster import MeanShift
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler


def mixture(spec, seed):
    """Gaussian clusters from (centre, standard deviation, count) triples, labels in spec order."""
    r = np.random.RandomState(seed)
    X = np.vstack([r.normal(c, s, (n, len(c))) for c, s, n in spec])
    y = np.repeat(np.arange(len(spec)), [n for _, _, n in spec])
    return X, y


def multiscale_blobs(seed=0):
    """Five Gaussian clusters in 2-D with standard deviations 0.05 to 5 (100x): two small tight
    clusters 0.6 apart, next to wide ones. A fixed bandwidth that separates the tight pair splits
    the wide clusters; one that keeps the wide clusters whole merges the pair."""
    return mixture([((0.0, 0.0), 0.05, 100), ((0.6, 0.0), 0.05, 100), ((12.0, 12.0), 2.0, 300),
                    ((-14.0, 10.0), 5.0, 400), ((15.0, -10.0), 0.5, 150)], seed)


def held_out_sets():
    """Sets that played no part in choosing the adaptive rule's constants (drawn once, before the
    rule was run on them): 3-D multi-scale blobs (σ 0.05 to 4, a tight pair 0.5 apart), Gaussian
    blobs in 16, 64 and 256 dimensions, a 600-point subsample of digits, and 2-D clusters of very
    unequal sizes (1,000 / 100 / 30 points: the smallest below the default K = 34)."""
    yield "multiscale-3d*", *mixture([((0, 0, 0), 0.05, 100), ((0.5, 0, 0), 0.05, 100), ((10, 0, 5), 1.0, 300),
                                      ((-12, 8, 0), 4.0, 400), ((6, -12, -6), 0.4, 150), ((0, 10, -10), 2.0, 250)], 7)
    for k, n, stds, seed in ((16, 1500, [0.5, 1, 1.5, 2, 3, 4], 11), (64, 1200, [1, 2, 3, 4, 5], 5),
                             (256, 2000, list(np.linspace(1, 5, 10)), 7)):
        X, y = datasets.make_blobs(n_samples=n, n_features=k, centers=len(stds), cluster_std=stds,
                                   center_box=(-20, 20), random_state=seed)
        yield f"blobs-{k}d*", X, y
    X, y = datasets.load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    i = np.random.RandomState(0).choice(len(X), 600, replace=False)
    yield "digits-600*", X[i], y[i]
    yield "unequal-2d*", *mixture([((0, 0), 1.0, 1000), ((5, 0), 0.3, 100), ((0, 4), 0.1, 30)], 3)


def sets(held_out=True):
    """The issue's sets (2-D multi-scale blobs, iris, wine, digits), then breast cancer (30-D, 2
    classes) and 8 Gaussian blobs of standard deviations 0.5 to 4 in 8, 32 and 128 dimensions: the
    eight sets the adaptive rule's constants were fitted to; then (held_out) held_out_sets()."""
    yield "blobs-multiscale", *multiscale_blobs()
    for name, loader in (("iris", datasets.load_iris), ("wine", datasets.load_wine),
                         ("digits", datasets.load_digits), ("breast-cancer", datasets.load_breast_cancer)):
        X, y = loader(return_X_y=True)
        yield name, StandardScaler().fit_transform(X), y
    for k in (8, 32, 128):
        X, y = datasets.make_blobs(n_samples=2000, n_features=k, centers=8, center_box=(-20, 20), random_state=3,
                                   cluster_std=[0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4])
        yield f"blobs-{k}d", X, y
    if held_out:
        yield from held_out_sets()


def run_cli(cli, path, bandwidth, tmp):
    out = os.path.join(tmp, "labels.csv")
    t = time.perf_counter()
    p = subprocess.run([cli, "cluster", path, "--bandwidth", str(bandwidth), "-o", out, "-q"],
                       capture_output=True, text=True)
    dt = time.perf_counter() - t
    if p.returncode:
        raise RuntimeError(p.stderr)
    line = next((l for l in p.stdout.splitlines() if l.startswith("bandwidth")), "")
    return np.loadtxt(out, dtype=np.int64, ndmin=1), dt, line[len("bandwidth"):].strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build/bin/meanshift")
    ap.add_argument("--grid", type=int, default=16, help="fixed bandwidths tried (geometric grid); 0 = none")
    ap.add_argument("--rules", default="auto,scott,silverman,adaptive,abramson",
                    help="comma-separated --bandwidth values to run")
    ap.add_argument("--no-sklearn", action="store_true", help="skip scikit-learn's MeanShift")
    ap.add_argument("--no-held-out", action="store_true", help="only the eight sets the adaptive rule was fitted to")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, X, y in sets(not args.no_held_out):
            path = os.path.join(tmp, name + ".csv")
            np.savetxt(path, X, delimiter=",")
            # Fixed bandwidths: a geometric grid over 1/50 .. 2 of the data's overall spread.
            spread = float(np.sqrt(X.var(axis=0).mean()))
            first = len(rows)
            if args.grid > 0:
                best = (-1.0, None, 0)
                for h in spread * np.geomspace(0.02, 2.0, args.grid):
                    labels, _, _ = run_cli(args.cli, path, f"{h:.6g}", tmp)
                    a = adjusted_rand_score(y, labels)
                    if a > best[0]:
                        best = (a, h, len(np.unique(labels)))
                rows.append((name, f"best fixed (of {args.grid})", best[0], best[2], f"{best[1]:.4g}", float("nan")))
            for rule in args.rules.split(","):
                labels, dt, line = run_cli(args.cli, path, rule, tmp)
                rows.append((name, rule, adjusted_rand_score(y, labels), len(np.unique(labels)), line, dt))
            if not args.no_sklearn:
                t = time.perf_counter()
                sk = MeanShift().fit(X)  # estimate_bandwidth(X, quantile=0.3) inside, flat kernel
                dt = time.perf_counter() - t
                rows.append((name, "scikit-learn MeanShift()", adjusted_rand_score(y, sk.labels_),
                             len(np.unique(sk.labels_)), f"{sk.bandwidth:.4g} (flat radius)" if sk.bandwidth else
                             "estimate_bandwidth", dt))
            for r in rows[first:]:
                print(f"{r[0]:17s} {r[1]:26s} ARI {r[2]:6.3f}  clusters {r[3]:4d}  {r[5]:7.3f} s  {r[4]}", flush=True)
    print()
    print("| data | bandwidth | ARI | clusters | seconds | value |")
    print("|---|---|---:|---:|---:|---|")
    for r in rows:
        sec = "" if np.isnan(r[5]) else f"{r[5]:.3f}"
        print(f"| {r[0]} | {r[1]} | {r[2]:.3f} | {r[3]} | {sec} | {r[4]} |")


if __name__ == "__main__":
    main()
