#!/usr/bin/env python3
"""meanshift.MeanShift vs sklearn.cluster.MeanShift(bin_seeding=True) on the same 2-D blobs, same run.

Data: make_blobs(n, n_features=2, centers=5, cluster_std=1, random_state=0) for each n. Times are the
minimum of --reps fits (wall clock of .fit(), data already in memory); ARI is against make_blobs'
truth. Prints a Markdown table (docs/python.md). Examples:

  python python/bench/blobs.py --backend openmp             # CPU run (2 cores: n_jobs=2)
  python python/bench/blobs.py --backend openmp --assign ascent   # labels by ascent instead
  python python/bench/blobs.py --backend cuda               # GPU run; scikit-learn still on the CPU
  python python/bench/blobs.py --backend cuda --skip-sklearn --sizes 1000000
"""
import argparse
import os
import platform
import time

import numpy as np
from sklearn.cluster import MeanShift as SkMeanShift
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

import meanshift


def best_of(reps, fit):
    times, model = [], None
    for _ in range(reps):
        t = time.perf_counter()
        model = fit()
        times.append(time.perf_counter() - t)
    return min(times), model


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="auto")
    p.add_argument("--sizes", default="20000,100000,1000000")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--bandwidth", type=float, default=0.6, help="ours: Gaussian standard deviation")
    p.add_argument("--assign", default="nearest", choices=["nearest", "ascent"],
                   help="ours: labels by nearest centre (scikit-learn's rule, default) or by ascent")
    p.add_argument("--bin-data", action=argparse.BooleanOptionalAction, default=True,
                   help="ours: cluster the bin means weighted by their counts (default on)")
    p.add_argument("--sk-bandwidth", type=float, default=1.5, help="scikit-learn: flat kernel radius")
    p.add_argument("--n-jobs", type=int, default=2, help="scikit-learn's n_jobs and our OpenMP threads")
    p.add_argument("--skip-sklearn", action="store_true")
    a = p.parse_args()

    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at start")
    print(f"meanshift {meanshift.__version__}, backend {a.backend} "
          f"(auto = {meanshift.auto_backend()}); scikit-learn {__import__('sklearn').__version__}; "
          f"numpy {np.__version__}; best of {a.reps}")
    ours = dict(bandwidth=a.bandwidth, bin_data=a.bin_data, assign=a.assign, backend=a.backend,
                n_jobs=a.n_jobs if a.backend in ("openmp", "auto") else None)
    print(f"ours: meanshift.MeanShift({', '.join(f'{k}={v!r}' for k, v in ours.items())})")
    print(f"scikit-learn: MeanShift(bandwidth={a.sk_bandwidth}, bin_seeding=True, n_jobs={a.n_jobs})\n")
    print("| n | scikit-learn time | scikit-learn ARI | meanshift time | meanshift ARI | speed-up | backend "
          "| ARI of the ascent labels |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(s) for s in a.sizes.split(",")):
        X, y = make_blobs(n_samples=n, n_features=2, centers=5, cluster_std=1.0, random_state=0)
        t_ms, ms = best_of(a.reps, lambda: meanshift.MeanShift(**ours).fit(X))
        ari_ms = adjusted_rand_score(y, ms.labels_)
        ari_ascent = adjusted_rand_score(y, ms.result_["labels"])  # the library's own labels
        if a.skip_sklearn:
            t_sk, ari_sk = float("nan"), float("nan")
        else:
            t_sk, sk = best_of(a.reps, lambda: SkMeanShift(bandwidth=a.sk_bandwidth, bin_seeding=True,
                                                            n_jobs=a.n_jobs).fit(X))
            ari_sk = adjusted_rand_score(y, sk.labels_)
        sk = ("– | – | " if a.skip_sklearn else f"{t_sk:.3f} s | {ari_sk:.4f} | ")
        speedup = "–" if a.skip_sklearn else f"{t_sk / t_ms:.1f}x"
        print(f"| {n:,} | {sk}{t_ms:.3f} s | {ari_ms:.4f} | {speedup} | {ms.backend_} | {ari_ascent:.4f} |",
              flush=True)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
