#!/usr/bin/env python3
"""Peer for the openmp backend's GEMM form: one exact Gaussian mean-shift step of every
point as NumPy writes it with matrix products (BLAS sgemm, float32), on the data `meanshift bench`
draws (same distribution: `--blobs` centres uniform in [-10, 10]^k, unit noise, point i in blob
i mod blobs; --kernel diagonal: per-point sigma_id uniform in [h/2, 3h/2]). Modes = all n points,
processed in chunks of --chunk modes:

  isotropic: S = Y X^T / h^2 - |y|^2/2h^2 - |x|^2/2h^2, E = exp(min(S, 0)), y' = E X / E 1
  diagonal : S = [Y, -Y^2/2] [W*X, W]^T - 1/2 sum_d w x^2 + c_i, E = exp(S),
             [num | den] = E [W*X, W], y' = num / den   (w = 1/sigma^2, c_i = log|H_i|^-1/2 - max)

Prints one JSON line: seconds of the step (data generation excluded) and pairs per second.
Threads: whatever the BLAS uses (OpenBLAS: all cores; set OPENBLAS_NUM_THREADS to change).
"""
import argparse
import json
import time

import numpy as np


def blobs(n, k, nblobs, seed):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10.0, 10.0, size=(nblobs, k))
    return (centres[np.arange(n) % nblobs] + rng.standard_normal((n, k))).astype(np.float32)


def step_isotropic(X, Y, h, chunk):
    Xh = X / np.float32(h)
    hx = 0.5 * np.einsum("ij,ij->i", Xh, Xh)
    out = np.empty_like(Y)
    for a in range(0, Y.shape[0], chunk):
        Yc = Y[a:a + chunk] / np.float32(h)
        S = Yc @ Xh.T
        S -= 0.5 * np.einsum("ij,ij->i", Yc, Yc)[:, None]
        S -= hx[None, :]
        np.minimum(S, 0.0, out=S)
        np.exp(S, out=S)
        out[a:a + chunk] = (S @ X) / S.sum(axis=1, dtype=np.float64)[:, None].astype(np.float32)
    return out


def step_diagonal(X, Y, sigma, chunk):
    k = X.shape[1]
    W = (1.0 / (sigma * sigma)).astype(np.float32)
    B = np.hstack([W * X, W]).astype(np.float32)          # n x 2k
    logw = 0.5 * np.log(W).sum(axis=1)
    const = (logw - logw.max() - 0.5 * np.einsum("ij,ij->i", W * X, X)).astype(np.float32)
    out = np.empty_like(Y)
    for a in range(0, Y.shape[0], chunk):
        Yc = Y[a:a + chunk]
        A = np.hstack([Yc, -0.5 * Yc * Yc]).astype(np.float32)
        S = A @ B.T
        S += const[None, :]
        np.exp(S, out=S)
        R = S @ B
        out[a:a + chunk] = R[:, :k] / R[:, k:]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=65536)
    p.add_argument("--dims", type=int, default=64)
    p.add_argument("--kernel", choices=["isotropic", "diagonal"], default="isotropic")
    p.add_argument("--bandwidth", type=float, default=1.0)
    p.add_argument("--blobs", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--chunk", type=int, default=512, help="modes per product chunk (S is chunk x n float32)")
    a = p.parse_args()

    X = blobs(a.n, a.dims, a.blobs, a.seed)
    if a.kernel == "diagonal":
        rng = np.random.default_rng(a.seed + 1)
        sigma = rng.uniform(0.5 * a.bandwidth, 1.5 * a.bandwidth, size=X.shape).astype(np.float32)
    t0 = time.perf_counter()
    if a.kernel == "diagonal":
        Y = step_diagonal(X, X, sigma, a.chunk)
    else:
        Y = step_isotropic(X, X, a.bandwidth, a.chunk)
    seconds = time.perf_counter() - t0
    assert np.isfinite(Y).all()
    pairs = float(a.n) * float(a.n)
    print(json.dumps({"peer": "numpy", "blas": blas_name(), "n": a.n, "k": a.dims, "kernel": a.kernel,
                      "chunk": a.chunk, "seconds": seconds, "pairs": pairs, "pairs_per_s": pairs / seconds}))


def blas_name():
    try:
        cfg = np.show_config(mode="dicts")
        return cfg["Build Dependencies"]["blas"]["name"]
    except Exception:  # older NumPy: no dict mode; name the library BLAS loads through
        try:
            import ctypes.util
            return "libblas via " + str(ctypes.util.find_library("blas"))
        except Exception:
            return "unknown"


if __name__ == "__main__":
    main()
