#!/usr/bin/env python3
"""Peer of bench_knn: Gaussian blobs written as raw float32 (n x k) for bench_knn, and the
same k-nearest-neighbour distances with scikit-learn's NearestNeighbors (kd-tree / ball tree /
brute force as it chooses, n_jobs threads), timed in the same run.

    python3 apps/bench/peers/sklearn_knn.py --n 1000000 --dims 2 --rank 50 --out /tmp/knn2 [--n-jobs 16]
prints one JSON line; the data go to OUT.f32."""
import argparse, json, time

import numpy as np
from sklearn.neighbors import NearestNeighbors

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=100000)
p.add_argument("--dims", type=int, default=2)
p.add_argument("--rank", type=int, default=50)
p.add_argument("--n-jobs", type=int, default=None)
p.add_argument("--out", required=True)
a = p.parse_args()
rng = np.random.default_rng(5)
centres = rng.uniform(-10, 10, (8, a.dims))
X = (centres[rng.integers(0, 8, a.n)] + rng.normal(0, 1, (a.n, a.dims))).astype(np.float32)
X.tofile(a.out + ".f32")
t0 = time.perf_counter()
d, _ = NearestNeighbors(n_neighbors=a.rank + 1, n_jobs=a.n_jobs).fit(X).kneighbors(X)
t = time.perf_counter() - t0
print(json.dumps({"peer": "sklearn NearestNeighbors", "n": a.n, "k": a.dims, "rank": a.rank, "n_jobs": a.n_jobs,
                  "seconds": round(t, 4), "median_d_rank": float(np.median(d[:, a.rank]))}))
