#!/usr/bin/env python3
"""Peer of `meanshift cluster` for embeddings and point clouds: what a PyTorch user writes.
Exact Gaussian mean shift from every point (or from bin seeds), float32, chunked GEMM form, on the GPU
(CPU if there is no CUDA), then greedy grouping on the device.

  ascent : y <- sum_j w_j x_j / sum_j w_j, w_j = exp(-|y - x_j|^2 / 2h^2)            (--bandwidth h)
           per-point diagonal H_j = diag(s_j^2) (--sigma FILE, variable-bandwidth mean shift):
           w_jd = |H_j|^-1/2 exp(-1/2 sum_d (y_d - x_jd)^2 / s_jd^2) / s_jd^2, y_d <- sum_j w_jd x_jd / sum_j w_jd
           until every mode moves < tol bandwidths (of its own start point), at most max_iter iterations;
           only the modes still moving are advanced.
  groups : modes snapped to cells of eps/4 bandwidths (torch.unique), then greedily, largest cell first,
           each unassigned cell takes every unassigned cell within eps bandwidths (the library's
           --merge-eps 0.5, Alg. 6 up to the order).
Prints one JSON line: seconds (ascent + grouping, data already on the device; `seconds_load` apart),
iterations, clusters, ARI vs --truth, and with --ours LABELS.npy the ARI of those labels vs truth and vs ours.

  torch_meanshift.py points.npy (--bandwidth H | --sigma sigma.npy) [--truth t.npy] [--ours l.npy]
                     [--seeds all|bins] [--subsample N] [--tol 1e-3] [--max-iter 100] [--chunk 4096]
  (modes in chunks of --chunk, points in chunks of 2^28 / chunk: E stays <= 1 GiB)
"""
import argparse, json, time
import numpy as np
import torch


def shift(Y, X, W, B, c, h, chunk, cols):  # one exact step of the modes Y against all points X
    out, k = torch.empty_like(Y), Y.shape[1]
    for q in range(0, Y.shape[0], chunk):  # E is at most chunk x cols floats
        Yq = Y[q:q + chunk]
        A = None if W is None else torch.cat([Yq, -0.5 * Yq * Yq], 1)
        acc = torch.zeros((Yq.shape[0], k if W is None else 2 * k), device=Y.device)
        den = torch.zeros((Yq.shape[0], 1), device=Y.device)
        for s in range(0, X.shape[0], cols):
            if W is None:  # isotropic: E = exp(-|y - x|^2 / 2h^2), y' = E X / E 1
                E = torch.cdist(Yq, X[s:s + cols], compute_mode="use_mm_for_euclid_dist").square_()
                E = E.mul_(-0.5 / (h * h)).exp_()
                acc += E @ X[s:s + cols]
                den += E.sum(1, keepdim=True)
            else:  # per point: S = [y, -y^2/2] [w x, w]^T + c, E = exp(S), [num | den] = E [w x, w]
                E = (A @ B[s:s + cols].T).add_(c[:, s:s + cols]).exp_()
                acc += E @ B[s:s + cols]
        out[q:q + chunk] = (acc / den.clamp_min(1e-30) if W is None
                            else acc[:, :k] / acc[:, k:].clamp_min(1e-30))
    return out


def ascent(X, Y, S, h, tol, max_iter, chunk, scale, cols):  # scale: per-mode bandwidth for the stopping test
    W = B = c = None
    if S is not None:
        W = 1.0 / (S * S)
        B = torch.cat([W * X, W], 1)
        logw = 0.5 * W.log().sum(1)
        c = (logw - logw.max() - 0.5 * (W * X * X).sum(1))[None, :]
    active = torch.arange(Y.shape[0], device=Y.device)
    it = 0
    while active.numel() and it < max_iter:
        Yn = shift(Y[active], X, W, B, c, h, chunk, cols)
        moved = ((Yn - Y[active]) / scale[active]).norm(dim=1)
        Y[active] = Yn
        active = active[moved >= tol]
        it += 1
    return Y, it, int(active.numel())


def group(M, scale, eps):  # greedy grouping of the modes M (m x k) on the device
    cells, inv, cnt = torch.unique(torch.floor(M / (scale * eps / 4)).long(), dim=0, return_inverse=True,
                                   return_counts=True)
    rep = torch.zeros((cells.shape[0], M.shape[1]), device=M.device).index_add_(0, inv, M) / cnt[:, None]
    order = torch.argsort(cnt, descending=True)
    rep = rep[order] / scale
    lab = torch.full((rep.shape[0],), -1, dtype=torch.long, device=M.device)
    c = 0
    while True:
        free = torch.nonzero(lab < 0)
        if free.numel() == 0:
            break
        i = int(free[0])
        lab[(lab < 0) & ((rep - rep[i]).norm(dim=1) <= eps)] = c
        c += 1
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel(), device=M.device)
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
    ap.add_argument("--eps", type=float, default=0.5); ap.add_argument("--chunk", type=int, default=4096)
    a = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    n = a.subsample or None
    t0 = time.perf_counter()
    X = torch.from_numpy(np.array(np.load(a.points, mmap_mode="r")[:n], dtype=np.float32)).to(dev)
    S = torch.from_numpy(np.array(np.load(a.sigma, mmap_mode="r")[:n], dtype=np.float32)).to(dev) if a.sigma else None
    X -= X.mean(0)  # translation-invariant; keeps the per-point form's expanded exponents small in float32
    if dev.type == "cuda":  # CUDA context and cuBLAS handles before the clock, as a warm-up would
        shift(X[:8].clone(), X[:1024], None, None, None, 1.0, 8, 1024); sync()
    t1 = time.perf_counter()
    h = a.bandwidth
    scale_pt = S if S is not None else torch.full((1, X.shape[1]), h, device=dev)
    if a.seeds == "bins":  # seeds: mean of the points of each occupied bin of side h
        side = h if S is None else S.median(0).values
        _, seed_of, bc = torch.unique(torch.floor(X / side).long(), dim=0, return_inverse=True, return_counts=True)
        Y = torch.zeros((bc.numel(), X.shape[1]), device=dev).index_add_(0, seed_of, X) / bc[:, None]
        scale_y = (torch.zeros_like(Y).index_add_(0, seed_of, scale_pt.expand_as(X)) / bc[:, None]
                   if S is not None else scale_pt)
    else:
        Y, seed_of, scale_y = X.clone(), None, scale_pt
    Y, iters, moving = ascent(X, Y, S, h, a.tol, a.max_iter, a.chunk, scale_y.expand_as(Y),
                             max(1024, (1 << 28) // a.chunk))
    sync()
    t2 = time.perf_counter()
    glob = scale_pt.median(0).values if S is not None else scale_pt[0]  # one metric for the grouping
    lab, c = group(Y, glob, a.eps)
    if seed_of is not None:
        lab = lab[seed_of]
    labels = lab.cpu().numpy()
    t3 = time.perf_counter()
    r = {"peer": "torch", "device": torch.cuda.get_device_name() if dev.type == "cuda" else "cpu",
         "threads": torch.get_num_threads(), "n": int(X.shape[0]), "k": int(X.shape[1]),
         "kernel": "per-point" if S is not None else f"isotropic h={h}", "seeds": a.seeds, "modes": int(Y.shape[0]),
         "seconds": t3 - t1, "seconds_ascent": t2 - t1, "seconds_group": t3 - t2, "seconds_load": t1 - t0,
         "iterations": iters, "modes_moving": moving, "clusters": c}
    report(r, labels, a.truth, a.ours, n)


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
