#!/usr/bin/env python3
"""GPU peer for the high-dimensional step: one exact Gaussian mean-shift iteration of
every point against every point, as a PyTorch user writes it (chunked cdist + exp + matmul,
float32), on n points of k-D Gaussian blobs. Prints one JSON line per k: pairs/s of the best of
`--reps` timed repetitions (after one warm-up), CUDA-synchronised wall time.

Usage: torch_step.py --n 262144 --dims 16 32 64 128 256 [--bandwidth 1] [--reps 3] [--chunk 8192]
"""
import argparse, json, time
import torch


def blobs(n, k, centres=8, seed=1):
    g = torch.Generator(device="cpu").manual_seed(seed)
    c = torch.randn(centres, k, generator=g) * 4
    lab = torch.randint(0, centres, (n,), generator=g)
    return (c[lab] + torch.randn(n, k, generator=g)).float()


def step(Y, X, h, chunk):
    out = torch.empty_like(Y)
    for q in range(0, Y.shape[0], chunk):
        Yq = Y[q:q + chunk]
        num = torch.zeros_like(Yq)
        den = torch.zeros(Yq.shape[0], device=Y.device)
        for s in range(0, X.shape[0], chunk):
            Xc = X[s:s + chunk]
            W = torch.exp(torch.cdist(Yq, Xc).square_().mul_(-0.5 / (h * h)))
            num += W @ Xc
            den += W.sum(1)
        out[q:q + chunk] = num / den[:, None]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=262144)
    ap.add_argument("--dims", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    ap.add_argument("--bandwidth", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=8192)
    a = ap.parse_args()
    dev = torch.device("cuda")
    for k in a.dims:
        X = blobs(a.n, k).to(dev)
        step(X[:a.chunk], X, a.bandwidth, a.chunk)  # warm-up
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(a.reps):
            t = time.perf_counter()
            step(X, X, a.bandwidth, a.chunk)
            torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t)
        print(json.dumps({"peer": "torch", "device": torch.cuda.get_device_name(), "n": a.n, "k": k,
                          "seconds": best, "pairs_per_s": a.n * a.n / best}), flush=True)


if __name__ == "__main__":
    main()
