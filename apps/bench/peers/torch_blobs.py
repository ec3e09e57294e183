#!/usr/bin/env python3
"""GPU peer for the blobs benchmark: what a PyTorch user would write for Gaussian mean shift with
scikit-learn's bin seeding, run on the same data file as bench_blobs / `meanshift cluster`.

  seeds  = centres of the occupied bins of side bin_size * h (scikit-learn's bin_seeding, min count 1)
  ascent = y <- sum_i w_i x_i / sum_i w_i, w_i = exp(-|y - x_i|^2 / 2h^2), over all points (chunked cdist,
           float32), until every seed moves less than tol * h (at most max_iter iterations)
  labels = each point takes its bin's seed mode; modes within h/2 are merged (greedy, like the library)

Usage: torch_blobs.py PREFIX N K --bandwidth H [--bin-size 0.5] [--reps 3]
  PREFIX.f32 (N x K float32) and PREFIX.labels (N int32), as sklearn_blobs.py writes them for bench_blobs.
Prints one JSON line per repetition: seconds (end to end after the data are on the GPU), ARI vs truth.
"""
import argparse, json, time
import numpy as np
import torch
from sklearn.metrics import adjusted_rand_score


def run(X, h, bin_size, tol=1e-3, max_iter=300, chunk=1 << 14):
    dev = X.device
    side = bin_size * h
    cells = torch.floor(X / side).to(torch.int64)
    uniq, inverse = torch.unique(cells, dim=0, return_inverse=True)
    sums = torch.zeros((uniq.shape[0], X.shape[1]), device=dev).index_add_(0, inverse, X)
    counts = torch.bincount(inverse, minlength=uniq.shape[0]).to(X.dtype)
    Y = sums / counts[:, None]
    active = torch.ones(Y.shape[0], dtype=torch.bool, device=dev)
    it = 0
    while bool(active.any()) and it < max_iter:
        idx = torch.nonzero(active).squeeze(1)
        Ya = Y[idx]
        Yn = torch.empty_like(Ya)
        for q in range(0, Ya.shape[0], 4096):  # seeds in chunks too: W stays <= 4096 x chunk
            Yq = Ya[q:q + 4096]
            num = torch.zeros_like(Yq)
            den = torch.zeros(Yq.shape[0], device=dev)
            for s in range(0, X.shape[0], chunk):
                Xc = X[s:s + chunk]
                W = torch.exp(-torch.cdist(Yq, Xc).square_() / (2 * h * h))
                num += W @ Xc
                den += W.sum(1)
            Yn[q:q + 4096] = num / den[:, None]
        moved = (Yn - Ya).norm(dim=1) > tol * h
        Y[idx] = Yn
        active[idx] = moved
        it += 1
    # greedy merge of the seed modes (eps h/2), then every point takes its bin's group
    Yh = Y.cpu().numpy()
    centres, group = [], np.empty(len(Yh), dtype=np.int64)
    for j, y in enumerate(Yh):
        for c, cy in enumerate(centres):
            if np.linalg.norm(y - cy) <= 0.5 * h:
                group[j] = c
                break
        else:
            group[j] = len(centres)
            centres.append(y)
    return group[inverse.cpu().numpy()], it, len(Yh)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("prefix")
    ap.add_argument("n", type=int)
    ap.add_argument("k", type=int)
    ap.add_argument("--bandwidth", type=float, required=True)
    ap.add_argument("--bin-size", type=float, default=0.5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=120, help="skip further repetitions after a run this long")
    a = ap.parse_args()
    Xh = np.fromfile(a.prefix + ".f32", dtype=np.float32).reshape(a.n, a.k)
    truth = np.fromfile(a.prefix + ".labels", dtype=np.int32)
    X = torch.from_numpy(Xh).cuda()
    torch.cuda.synchronize()
    for r in range(a.reps):
        t0 = time.perf_counter()
        labels, it, seeds = run(X, a.bandwidth, a.bin_size)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        print(json.dumps({"peer": "torch", "device": torch.cuda.get_device_name(), "n": len(Xh), "k": Xh.shape[1],
                          "seconds": dt, "iterations": it, "seeds": seeds,
                          "ari_truth": adjusted_rand_score(truth, labels)}), flush=True)
        if dt > a.max_seconds:
            break


if __name__ == "__main__":
    main()
