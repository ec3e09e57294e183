#!/usr/bin/python3
"""Peer for `meanshift segment`: OpenCV's mean-shift filtering, single-threaded.

    opencv_segment.py IMAGE [--sp 8] [--sr 8] [--repeat 3] [--min-region 40] [--out OUT.png]

Times cv2.pyrMeanShiftFiltering(img, sp, sr) (defaults: maxLevel 1, at most 5 iterations, shift
< 1) with cv2.setNumThreads(1), best of --repeat runs, and counts its segments by a flood fill of
equal colours: 4-connected pixels with identical filtered BGR values form one segment (OpenCV's
filtering gives no labels; this is the count its output image shows). Also prints how many of those
segments have at least --min-region pixels (no merging is done: OpenCV has no fusion or pruning).
Also times the whole pipeline that `meanshift segment` runs, imread + pyrMeanShiftFiltering +
imwrite of a PNG (--out, default a temporary file; OpenCV's default PNG compression), best of
--repeat runs: the figure to set beside the CLI's wall time less its process start.
Output: one line "opencv IMAGE WxH seconds S segments N large M pipeline P" (S: the filtering alone).
Needs Debian's python3-opencv (and python3-scipy, a dependency of python3-sklearn).
"""
import argparse
import os
import sys
import tempfile
import time

import cv2
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


def equal_colour_segments(img):
    h, w, _ = img.shape
    code = (img[:, :, 0].astype(np.int64) << 16) | (img[:, :, 1].astype(np.int64) << 8) | img[:, :, 2]
    idx = np.arange(h * w).reshape(h, w)
    rows, cols = [], []
    right = code[:, :-1] == code[:, 1:]
    rows.append(idx[:, :-1][right]); cols.append(idx[:, 1:][right])
    down = code[:-1, :] == code[1:, :]
    rows.append(idx[:-1, :][down]); cols.append(idx[1:, :][down])
    r = np.concatenate(rows); c = np.concatenate(cols)
    g = coo_matrix((np.ones(r.size, dtype=np.int8), (r, c)), shape=(h * w, h * w))
    n, labels = connected_components(g, directed=False)
    return n, np.bincount(labels)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("image")
    ap.add_argument("--sp", type=float, default=8)
    ap.add_argument("--sr", type=float, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--min-region", type=int, default=40)
    ap.add_argument("--out", default="", help="PNG written by the pipeline runs (default: a temporary file)")
    a = ap.parse_args()
    cv2.setNumThreads(1)
    img = cv2.imread(a.image, cv2.IMREAD_COLOR)
    if img is None:
        sys.exit(f"opencv_segment: cannot read {a.image}")
    best = float("inf")
    for _ in range(max(1, a.repeat)):
        t0 = time.perf_counter()
        out = cv2.pyrMeanShiftFiltering(img, a.sp, a.sr)
        best = min(best, time.perf_counter() - t0)
    out_path = a.out or os.path.join(tempfile.mkdtemp(prefix="opencv-segment-"), "filtered.png")
    pipeline = float("inf")
    for _ in range(max(1, a.repeat)):
        t0 = time.perf_counter()
        im = cv2.imread(a.image, cv2.IMREAD_COLOR)
        cv2.imwrite(out_path, cv2.pyrMeanShiftFiltering(im, a.sp, a.sr))
        pipeline = min(pipeline, time.perf_counter() - t0)
    if not a.out:
        os.remove(out_path)
        os.rmdir(os.path.dirname(out_path))
    n, sizes = equal_colour_segments(out)
    h, w = img.shape[:2]
    print(f"opencv {a.image} {w}x{h} seconds {best:.3f} segments {n} large {int((sizes >= a.min_region).sum())} "
          f"pipeline {pipeline:.3f}")


if __name__ == "__main__":
    main()
