#!/usr/bin/env python3
"""Builds the README's gallery (docs/figures/gallery_*.png) by running the `meanshift` tool with its
default options on real and synthetic inputs. Needs numpy, matplotlib and OpenCV (for reading the
photo back); the photo is data/china.jpg (apps/fetch-china.sh).

    python3 apps/gallery/make_gallery.py --meanshift build/bin/meanshift --out docs/figures

Panels:
  gallery_segmentation.png  china.jpg: the photo, each segment painted with its mean colour, the labels
  gallery_clusters.png      2-D blobs and touching blobs: points coloured by cluster, centres marked
  gallery_profiles.png      the same data under each kernel profile (`--kernel`), two bandwidths; vmf on
                            the circle; the weight profiles
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr}")
    return r.stdout


def cluster(tool, X, tmp, *extra):
    pts, lab = os.path.join(tmp, "pts.npy"), os.path.join(tmp, "lab.npy")
    np.save(pts, X.astype(np.float32))
    run([tool, "cluster", pts, "-o", lab, "-q", *extra])
    return np.load(lab), np.load(os.path.join(tmp, "lab.centres.npy"))


def blobs(rng, centres, sigma, n):
    X = np.concatenate([c + sigma * rng.standard_normal((n, 2)) for c in centres])
    return X


def scatter(ax, X, labels, centres, title):
    ax.scatter(X[:, 0], X[:, 1], c=labels % 20, cmap="tab20", s=2, linewidths=0)
    ax.scatter(centres[:, 0], centres[:, 1], c="black", marker="x", s=40)
    ax.set_title(title, fontsize=9)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])


def segmentation(tool, photo, out, tmp):
    import cv2

    seg = os.path.join(tmp, "seg.png")
    stdout = run([tool, "segment", photo, "-o", seg, "--all-outputs"])
    images = [cv2.imread(photo), cv2.imread(seg), cv2.imread(os.path.join(tmp, "seg-labels.png"))]
    segments = next((line.split()[-1] for line in stdout.splitlines() if "segments" in line), "?")
    fig, axes = plt.subplots(1, 3, figsize=(12, 2.9))
    titles = ["china.jpg (640 × 427)", "segmented (mean colour)", f"segments ({segments})"]
    for ax, im, t in zip(axes, images, titles):
        ax.imshow(im[:, :, ::-1])
        ax.set_title(t, fontsize=9)
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "gallery_segmentation.png"), dpi=80)


def clusters(tool, out, tmp):
    rng = np.random.default_rng(7)
    X1 = blobs(rng, rng.uniform(-30, 30, (12, 2)), 1.5, 800)
    X2 = blobs(rng, np.array([[0, 0], [4.5, 0], [2.2, 4]]), 1.0, 1500)
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.3))
    for ax, X, h, name in ((axes[0], X1, 2.0, "12 blobs, 9,600 points, --bandwidth 2"),
                           (axes[1], X2, 0.7, "3 touching blobs, --bandwidth 0.7")):
        labels, centres = cluster(tool, X, tmp, "--bandwidth", str(h))
        scatter(ax, X, labels, centres, f"{name}: {len(centres)} clusters")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "gallery_clusters.png"), dpi=80)


def profiles(tool, out, tmp):
    if "--kernel" not in run([tool, "cluster", "--help"]):
        print("gallery: this meanshift has no --kernel; profiles figure skipped")
        return
    rng = np.random.default_rng(11)
    X = blobs(rng, np.array([[0, 0], [5, 0], [2.5, 4.5], [9, 5]]), np.array([1.0, 1.0]), 700)
    names = ["gaussian", "flat", "epanechnikov", "biweight", "triweight"]
    # Row 1: bandwidths that find the four blobs; row 2: small bandwidths, where the profiles differ.
    rows = [{"gaussian": "1", "compact": "2.5"}, {"gaussian": "0.35", "compact": "0.9"}]
    fig, axes = plt.subplots(2, len(names) + 1, figsize=(19, 6.6))
    for r, hs in enumerate(rows):
        for ax, name in zip(axes[r], names):
            h = hs["gaussian"] if name == "gaussian" else hs["compact"]
            labels, centres = cluster(tool, X, tmp, "--kernel", name, "--bandwidth", h)
            what = "σ" if name == "gaussian" else "radius"
            scatter(ax, X, labels, centres, f"{name}, {what} {h}: {len(centres)} clusters")
    # von Mises-Fisher on the circle: unit vectors around 5 directions.
    ang = np.concatenate([a + 0.18 * rng.standard_normal(500) for a in (0.3, 1.5, 2.6, 3.9, 5.2)])
    U = np.stack([np.cos(ang), np.sin(ang)], 1)
    labels, centres = cluster(tool, U, tmp, "--kernel", "vmf", "--bandwidth", "0.25")
    scatter(axes[0][-1], U, labels, centres, f"vmf on the circle, κ = 16: {len(centres)} clusters")
    # The weight profiles g(q) against the distance r = sqrt(q) in bandwidths.
    ax = axes[1][-1]
    r = np.linspace(0, 3, 300)
    q = r * r
    inside = q <= 1
    curves = {"gaussian": np.exp(-q / 2), "flat": inside * 1.0, "epanechnikov": inside * (1 - q),
              "biweight": inside * (1 - q) ** 2, "triweight": inside * (1 - q) ** 3}
    for name, g in curves.items():
        ax.plot(r, g, label=name)
    ax.set_xlabel("distance (bandwidths)", fontsize=8)
    ax.set_title("weight g(q) of a point", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "gallery_profiles.png"), dpi=72)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--meanshift", required=True)
    ap.add_argument("--photo", default=os.path.join(os.path.dirname(__file__), "..", "..", "data", "china.jpg"))
    ap.add_argument("--out", default="docs/figures")
    ap.add_argument("--only", choices=["segmentation", "clusters", "profiles"])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        if a.only in (None, "segmentation"):
            segmentation(a.meanshift, a.photo, a.out, tmp)
        if a.only in (None, "clusters"):
            clusters(a.meanshift, a.out, tmp)
        if a.only in (None, "profiles"):
            profiles(a.meanshift, a.out, tmp)


if __name__ == "__main__":
    main()
