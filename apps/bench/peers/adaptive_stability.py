#!/usr/bin/python3
"""Data-driven choice of the adaptive rule's factor C by stability (docs/bandwidth-selection.md):
on the evaluation sets of bandwidth_eval.py, run `meanshift cluster --bandwidth
adaptive::C` for every C of a geometric grid and score each C by the mean adjusted Rand index of its
labels against its grid neighbours' (labelings with one cluster or more than n/10 are degenerate and
score -1); print the ARI against the truth and the cluster count per C, and the C the score picks.

Usage: python3 apps/bench/peers/adaptive_stability.py [--cli build/bin/meanshift] [--ratio 1.25]
           [--low 0.4] [--high 2.0]
Needs numpy and scikit-learn.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from sklearn.metrics import adjusted_rand_score as ari

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bandwidth_eval import sets  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build/bin/meanshift")
    ap.add_argument("--grid", default="0.4,0.5,0.6,0.7,0.85,1.0,1.2,1.5,2.0",
                    help="comma-separated C values (default: the coarse grid of the docs)")
    a = ap.parse_args()
    cs = [float(c) for c in a.grid.split(",")]
    tmp = tempfile.mkdtemp()
    for name, X, y in sets():
        path = os.path.join(tmp, "x.csv")
        np.savetxt(path, X, delimiter=",")
        labels = []
        for c in cs:
            out = os.path.join(tmp, "l.csv")
            subprocess.run([a.cli, "cluster", path, "--bandwidth", f"adaptive::{c}", "-o", out, "-q"], check=True,
                           capture_output=True)
            lab = np.loadtxt(out, delimiter=",", ndmin=1)
            labels.append(lab if lab.ndim == 1 else lab[:, -1])
        n = len(y)
        counts = [len(np.unique(lab)) for lab in labels]
        truth = [ari(y, lab) for lab in labels]
        score = []
        for i in range(len(cs)):
            if not 1 < counts[i] <= n / 10:
                score.append(-1.0)
                continue
            score.append(float(np.mean([ari(labels[i], labels[j]) for j in (i - 1, i + 1) if 0 <= j < len(cs)])))
        pick = int(np.argmax(score))
        print(f"{name:18s} " + " ".join(f"{c:g}:{t:.3f}({k})" for c, t, k in zip(cs, truth, counts)))
        print(f"{'':18s} score " + " ".join(f"{s:.2f}" for s in score) + f" -> C = {cs[pick]:g}, ARI {truth[pick]:.3f}",
              flush=True)


if __name__ == "__main__":
    main()
