#!/usr/bin/env python3
"""Peer of bench_blobs: scikit-learn's MeanShift(bin_seeding=True) on make_blobs data.

Writes the data it clusters (float32 n x k raw) and the true labels (int32 raw) so that bench_blobs
clusters exactly the same points in the same run, then prints one line: time and ARI vs the truth.
  python3 sklearn_blobs.py --n 1000000 --dims 2 --bandwidth 2 --out /tmp/blobs
"""
import argparse, time
import numpy as np
from sklearn.cluster import MeanShift
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=1000000)
p.add_argument("--dims", type=int, default=2)
p.add_argument("--centers", type=int, default=5)
p.add_argument("--bandwidth", type=float, default=2.0)
p.add_argument("--out", default="/tmp/blobs")
p.add_argument("--skip-sklearn", action="store_true")
a = p.parse_args()
X, y = make_blobs(n_samples=a.n, n_features=a.dims, centers=a.centers, cluster_std=1.0, random_state=0)
X.astype(np.float32).tofile(a.out + ".f32")
y.astype(np.int32).tofile(a.out + ".labels")
if not a.skip_sklearn:
    t = time.perf_counter()
    ms = MeanShift(bandwidth=a.bandwidth, bin_seeding=True, n_jobs=2).fit(X)
    dt = time.perf_counter() - t
    print(f"sklearn MeanShift(bandwidth={a.bandwidth}, bin_seeding=True, n_jobs=2): n={a.n} k={a.dims} "
          f"time {dt:.3f} s clusters {len(ms.cluster_centers_)} ARI vs truth {adjusted_rand_score(y, ms.labels_):.4f}")
