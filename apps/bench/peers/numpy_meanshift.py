#!/usr/bin/env python3
"""CPU peer of `meanshift cluster` for embeddings and point clouds: the NumPy equivalent of
torch_meanshift.py, same algorithm line for line (exact Gaussian ascent from every point or from bin
seeds, float32 GEMM form through the BLAS, modes still moving only; greedy grouping of the modes
snapped to cells of eps/4 bandwidths, largest cell first, eps = 0.5 bandwidths).
Threads: whatever the BLAS uses (OpenBLAS: all cores).

  numpy_meanshift.py points.npy (--bandwidth H | --sigma sigma.npy) [--truth t.npy] [--ours l.npy]
                     [--seeds all|bins] [--subsample N] [--tol 1e-3] [--max-iter 100] [--chunk 512]
  (modes in chunks of --chunk, points in chunks of 2^25 / chunk: E stays <= 128 MiB)
Prints one JSON line (fields as torch_meanshift.py's).
"""
import argparse, json, time
import numpy as np


def shift(Y, X, W, B, c, h, chunk, hx, cols):
    out, k = np.empty_like(Y), Y.shape[1]
    for q in range(0, Y.shape[0], chunk):  # E is at most chunk x cols floats
        Yq = Y[q:q + chunk]
        A = None if W is None else np.hstack([Yq, -0.5 * Yq * Yq])
        acc = np.zeros((Yq.shape[0], k if W is None else 2 * k), np.float32)
        den = np.zeros((Yq.shape[0], 1), np.float64)
        for s in range(0, X.shape[0], cols):
            Xs = X[s:s + cols]
            if W is None:  # E = exp(-|y - x|^2 / 2h^2) = exp((y.x - |y|^2/2 - |x|^2/2) / h^2)
                E = Yq @ Xs.T
                E -= 0.5 * np.einsum("ij,ij->i", Yq, Yq)[:, None]
                E -= hx[None, s:s + cols]
                E *= np.float32(1.0 / (h * h))
                np.minimum(E, 0.0, out=E)
                np.exp(E, out=E)
                acc += E @ Xs
                den += E.sum(1, keepdims=True, dtype=np.float64)
            else:  # S = [y, -y^2/2] [w x, w]^T + c, E = exp(S), [num | den] = E [w x, w]
                E = A @ B[s:s + cols].T
                E += c[:, s:s + cols]
                np.exp(E, out=E)
                acc += E @ B[s:s + cols]
        out[q:q + chunk] = (acc / np.maximum(den, 1e-30) if W is None
                            else acc[:, :k] / np.maximum(acc[:, k:], 1e-30))
    return out


def ascent(X, Y, S, h, tol, max_iter, chunk, scale, cols):
    W = B = c = hx = None
    if S is not None:
        W = (1.0 / (S * S)).astype(np.float32)
        B = np.hstack([W * X, W])
        logw = 0.5 * np.log(W).sum(1)
        c = (logw - logw.max() - 0.5 * (W * X * X).sum(1))[None, :].astype(np.float32)
    else:
        hx = 0.5 * np.einsum("ij,ij->i", X, X)
    active = np.arange(Y.shape[0])
    it = 0
    while active.size and it < max_iter:
        Yn = shift(Y[active], X, W, B, c, h, chunk, hx, cols)
        moved = np.linalg.norm((Yn - Y[active]) / scale[active], axis=1)
        Y[active] = Yn
        active = active[moved >= tol]
        it += 1
    return Y, it, int(active.size)


def cell_sums(V, inv, cnt):  # sum of the rows of V per cell (np.add.at is ~100x slower)
    return np.add.reduceat(V[np.argsort(inv, kind="stable")], np.r_[0, np.cumsum(cnt)[:-1]], axis=0)


def group(M, scale, eps):
    cells, inv, cnt = np.unique(np.floor(M / (scale * eps / 4)).astype(np.int64), axis=0, return_inverse=True,
                                return_counts=True)
    inv = inv.ravel()
    rep = cell_sums(M.astype(np.float64), inv, cnt) / cnt[:, None]
    order = np.argsort(-cnt, kind="stable")
    rep = rep[order] / scale
    lab = np.full(rep.shape[0], -1)
    c = 0
    while True:
        free = np.flatnonzero(lab < 0)
        if free.size == 0:
            break
        i = free[0]
        lab[free[np.linalg.norm(rep[free] - rep[i], axis=1) <= eps]] = c
        c += 1
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return lab[rank[inv]], c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("points")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--bandwidth", type=float)
    g.add_argument("--sigma", help="n x k per-point standard deviations (.npy)")
    ap.add_argument("--truth"); ap.add_argument("--ours")
    ap.add_argument("--seeds", choices=["all", "bins"], default="all", help="bins: scikit-learn's bin seeding (side h)")
    ap.add_argument("--subsample", type=int, default=0, help="use only the first N points (generators shuffle)")
    ap.add_argument("--tol", type=float, default=1e-3); ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--eps", type=float, default=0.5); ap.add_argument("--chunk", type=int, default=512)
    a = ap.parse_args()
    n = a.subsample or None
    t0 = time.perf_counter()
    X = np.array(np.load(a.points, mmap_mode="r")[:n], dtype=np.float32)
    S = np.array(np.load(a.sigma, mmap_mode="r")[:n], dtype=np.float32) if a.sigma else None
    X -= X.mean(0)  # translation-invariant; keeps the expanded exponents small in float32
    t1 = time.perf_counter()
    h = a.bandwidth
    scale_pt = S if S is not None else np.full((1, X.shape[1]), h, np.float32)
    if a.seeds == "bins":
        side = h if S is None else np.median(S, 0)
        _, seed_of, bc = np.unique(np.floor(X / side).astype(np.int64), axis=0, return_inverse=True,
                                   return_counts=True)
        seed_of = seed_of.ravel()
        Y = (cell_sums(X.astype(np.float64), seed_of, bc) / bc[:, None]).astype(np.float32)
        if S is not None:
            scale_y = (cell_sums(S.astype(np.float64), seed_of, bc) / bc[:, None]).astype(np.float32)
        else:
            scale_y = scale_pt
    else:
        Y, seed_of, scale_y = X.copy(), None, scale_pt
    Y, iters, moving = ascent(X, Y, S, h, a.tol, a.max_iter, a.chunk, np.broadcast_to(scale_y, Y.shape),
                             max(1024, (1 << 25) // a.chunk))
    t2 = time.perf_counter()
    glob = np.median(scale_pt, 0)
    lab, c = group(Y, glob, a.eps)
    if seed_of is not None:
        lab = lab[seed_of]
    t3 = time.perf_counter()
    r = {"peer": "numpy", "device": "cpu", "n": int(X.shape[0]), "k": int(X.shape[1]),
         "kernel": "per-point" if S is not None else f"isotropic h={h}", "seeds": a.seeds, "modes": int(Y.shape[0]),
         "seconds": t3 - t1, "seconds_ascent": t2 - t1, "seconds_group": t3 - t2, "seconds_load": t1 - t0,
         "iterations": iters, "modes_moving": moving, "clusters": c}
    report(r, lab, a.truth, a.ours, n)


def report(r, labels, truth, ours, n):
    from sklearn.metrics import adjusted_rand_score as ari
    if truth:
        t = np.load(truth)[:n]
        r["ari_truth"] = round(float(ari(t, labels)), 4)
    if ours:
        o = np.load(ours)[:n]
        r["ari_ours_vs_peer"] = round(float(ari(o, labels)), 4)
        if truth:
            r["ari_ours_truth"] = round(float(ari(t, o)), 4)
    print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
