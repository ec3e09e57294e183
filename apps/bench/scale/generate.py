#!/usr/bin/env python3
"""Generators of the scale benchmarks' workloads. Nothing is committed: every data set is
drawn here, seeded, into a folder of the caller's (a temp folder in run_cpu.sh / run_gpu.sh).
Needs NumPy only (decoding the photos: Pillow or OpenCV, else decoded copies in PPM, see `photos`).

  generate.py embeddings OUT --n 100000 --k 384 [--clusters 10] [--spread 0.25] [--seed 1]
      unit vectors: `clusters` random unit centres mu_c in R^k; x = normalise(mu_c + spread * g / sqrt(k)),
      g ~ N(0, I_k): a von Mises-Fisher-like cap whose chord radius is about spread (two points of one
      cluster lie ~ spread * sqrt(2) apart, random centres ~ sqrt(2)). Suggested bandwidth 0.3.
  generate.py cloud OUT --n 1000000 [--points-per-tree 2000] [--seed 1]
      forest-like LiDAR cloud, 3-D (metres): trees on a jittered 7 m grid, heights 8-28 m, a crown
      (ellipsoid, 90 % of a tree's points, denser at its surface) over a stem (10 %, the upper
      60 % of the stem below the crown, what a laser sees through the canopy). Per-point diagonal
      bandwidths grow with the point's height z: sigma_xy = 0.4 + 0.07 z, sigma_z = 2 sigma_xy (crowns
      are wide and tall; the vertically elongated kernel lets trunk points climb into their crown).
      Writes OUT/points.npy (n x 3), OUT/sigma.npy (n x 3, the file `cluster --per-point-bandwidths`
      takes) and OUT/truth.npy (tree id).
  generate.py blobs OUT --n 10000000 [--k 2] [--blobs 20] [--seed 1]
      Gaussian blobs, standard deviation 1, centres uniform in [-60, 60]^k (suggested bandwidth 1).
      Also writes OUT/blobs.f32 + OUT/blobs.labels (raw) for apps/bench/peers/torch_blobs.py.
  generate.py photos OUT [--source DIR ...]
      copies china.jpg and flower.jpg (scikit-learn's sample images; apps/fetch-china.sh fetches china.jpg
      into data/, the python3-sklearn package or a pip scikit-learn holds both) into OUT.
  generate.py tiled OUT --megapixels 25 [--format png|ppm] [--source DIR ...]
      a square image of about M megapixels tiled from the decoded photos (mirrored every other tile so
      the seams join), written as PNG (zlib level 1) or binary PPM. Decoding needs Pillow or OpenCV;
      where neither exists (the GPU machine may have only torch, numpy and scikit-learn), put decoded
      copies china.ppm / flower.ppm into a source folder first (`generate.py decode DIR` does that here).
  generate.py decode DIR [--source DIR ...]
      writes DIR/china.ppm and DIR/flower.ppm (binary P6) from the JPEGs, for a machine without decoders.

Every command prints one JSON line describing what it wrote.
"""
import argparse
import json
import os
import shutil
import struct
import sys
import zlib

import numpy as np

PHOTOS = ("china", "flower")


def shuffle_together(rng, *arrays):
    p = rng.permutation(arrays[0].shape[0])
    return [a[p] for a in arrays]


def embeddings(out, n, k, clusters, spread, seed):
    rng = np.random.default_rng(seed)
    mu = rng.standard_normal((clusters, k))
    mu /= np.linalg.norm(mu, axis=1, keepdims=True)
    truth = (np.arange(n) % clusters).astype(np.int32)
    X = np.empty((n, k), dtype=np.float32)
    for a in range(0, n, 65536):  # in slices: 10^6 x 1024 float64 noise would be 8 GB at once
        b = min(n, a + 65536)
        x = mu[truth[a:b]] + spread / np.sqrt(k) * rng.standard_normal((b - a, k))
        X[a:b] = x / np.linalg.norm(x, axis=1, keepdims=True)
    X, truth = shuffle_together(rng, X, truth)
    np.save(os.path.join(out, "points.npy"), X)
    np.save(os.path.join(out, "truth.npy"), truth)
    return {"workload": "embeddings", "n": n, "k": k, "clusters": clusters, "spread": spread,
            "bandwidth": 0.3}


def cloud(out, n, per_tree, seed):
    rng = np.random.default_rng(seed)
    trees = max(1, int(round(n / per_tree)))
    side = int(np.ceil(np.sqrt(trees)))
    gx, gy = np.meshgrid(np.arange(side), np.arange(side))
    base = np.stack([gx.ravel(), gy.ravel()], 1)[:trees] * 7.0 + rng.uniform(-1.2, 1.2, (trees, 2))
    height = rng.uniform(8.0, 28.0, trees)
    radius = 0.12 * height + rng.uniform(0.3, 0.8, trees)          # crown half-width, m
    tree = np.sort(rng.integers(0, trees, n)).astype(np.int32)
    crown = rng.random(n) < 0.9
    P = np.empty((n, 3))
    # crown: ellipsoid of half-axes r, r, 1.3 r topped at the tree's height; radius^(1/4) puts
    # most points near the surface, as a laser sees a crown
    c = np.flatnonzero(crown)
    d = rng.standard_normal((c.size, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    s = rng.random(c.size) ** 0.25
    r = radius[tree[c]]
    P[c, 0] = base[tree[c], 0] + r * s * d[:, 0]
    P[c, 1] = base[tree[c], 1] + r * s * d[:, 1]
    P[c, 2] = height[tree[c]] - 1.3 * r + 1.3 * r * s * d[:, 2]
    t = np.flatnonzero(~crown)
    P[t, :2] = base[tree[t]] + rng.normal(0.0, 0.12, (t.size, 2))
    bottom = height[tree[t]] - 2.6 * radius[tree[t]]  # the crown's lowest point
    P[t, 2] = bottom * rng.uniform(0.4, 1.0, t.size)
    P[:, 2] = P[:, 2].clip(0.0)
    sxy = 0.4 + 0.07 * P[:, 2]
    S = np.stack([sxy, sxy, 2.0 * sxy], 1)
    P, S, tree = shuffle_together(rng, P.astype(np.float32), S.astype(np.float32), tree)
    np.save(os.path.join(out, "points.npy"), P)
    np.save(os.path.join(out, "sigma.npy"), S)
    np.save(os.path.join(out, "truth.npy"), tree)
    return {"workload": "cloud", "n": n, "k": 3, "trees": trees,
            "extent_m": [float(P[:, 0].max() - P[:, 0].min()), float(P[:, 1].max() - P[:, 1].min())],
            "sigma_xy": [float(S[:, 0].min()), float(S[:, 0].max())]}


def blobs(out, n, k, nblobs, seed):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-60.0, 60.0, (nblobs, k))
    truth = rng.integers(0, nblobs, n).astype(np.int32)
    X = np.empty((n, k), dtype=np.float32)
    for a in range(0, n, 1 << 20):
        b = min(n, a + (1 << 20))
        X[a:b] = centres[truth[a:b]] + rng.standard_normal((b - a, k))
    np.save(os.path.join(out, "points.npy"), X)
    np.save(os.path.join(out, "truth.npy"), truth)
    X.tofile(os.path.join(out, "blobs.f32"))
    truth.tofile(os.path.join(out, "blobs.labels"))
    return {"workload": "blobs", "n": n, "k": k, "blobs": nblobs, "bandwidth": 1.0}


def default_sources():
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = [os.path.join(here, "..", "..", "..", "data"), "/usr/lib/python3/dist-packages/sklearn/datasets/images"]
    try:
        import sklearn  # noqa: F401  (pip's scikit-learn ships both photos)
        dirs.append(os.path.join(os.path.dirname(sklearn.__file__), "datasets", "images"))
    except ImportError:
        pass
    return [os.path.normpath(d) for d in dirs]


def find_photo(name, sources, exts):
    for d in sources:
        for e in exts:
            p = os.path.join(d, name + e)
            if os.path.isfile(p) and os.path.getsize(p) > 0:
                return p
    return None


def photos(out, sources):
    got = {}
    for name in PHOTOS:
        p = find_photo(name, sources, (".jpg",))
        if p is None:
            raise SystemExit(f"generate.py: {name}.jpg not found in {sources} (run apps/fetch-china.sh, or "
                             f"apt-get download python3-sklearn, or pip install scikit-learn)")
        shutil.copyfile(p, os.path.join(out, name + ".jpg"))
        got[name] = p
    return {"workload": "photos", "sources": got}


def read_ppm(path):
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:  # magic, width, height, maxval; '#' comments allowed
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    if fields[0] != b"P6" or int(fields[3]) != 255:
        raise SystemExit(f"generate.py: {path}: only 8-bit binary PPM (P6) is read here")
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data, np.uint8, w * h * 3, pos + 1).reshape(h, w, 3)


def decode(name, sources):
    """RGB uint8 h x w x 3 of photo `name`: a PPM copy if there is one, else Pillow, else OpenCV."""
    p = find_photo(name, sources, (".ppm",))
    if p:
        return read_ppm(p)
    jpg = find_photo(name, sources, (".jpg",))
    if jpg is None:
        raise SystemExit(f"generate.py: {name}.jpg not found in {sources}")
    try:
        from PIL import Image
        return np.asarray(Image.open(jpg).convert("RGB"))
    except ImportError:
        pass
    try:
        import cv2
        return cv2.imread(jpg, cv2.IMREAD_COLOR)[:, :, ::-1]
    except ImportError:
        raise SystemExit("generate.py: no JPEG decoder here (Pillow or OpenCV); put china.ppm and flower.ppm "
                         "(`generate.py decode DIR` on a machine that has one) into a --source folder")


def write_ppm(path, img):
    with open(path, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (img.shape[1], img.shape[0]))
        f.write(np.ascontiguousarray(img).tobytes())


def write_png(path, img, level=1):
    h, w, _ = img.shape

    def chunk(tag, body):
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF)

    comp = zlib.compressobj(level)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)))
        for a in range(0, h, 256):  # filter type 0 per row, compressed in bands of rows
            band = np.empty((min(h, a + 256) - a, 1 + 3 * w), np.uint8)
            band[:, 0] = 0
            band[:, 1:] = img[a:a + band.shape[0]].reshape(band.shape[0], -1)
            data = comp.compress(band.tobytes())
            if data:
                f.write(chunk(b"IDAT", data))
        f.write(chunk(b"IDAT", comp.flush()) + chunk(b"IEND", b""))


def tiled(out, megapixels, fmt, sources):
    tiles = [decode(name, sources) for name in PHOTOS]
    th = min(t.shape[0] for t in tiles)
    tw = min(t.shape[1] for t in tiles)
    tiles = [t[:th, :tw] for t in tiles]
    side = int(round(np.sqrt(megapixels * 1e6)))
    rows, cols = -(-side // th), -(-side // tw)
    img = np.empty((side, side, 3), np.uint8)
    for r in range(rows):
        for c in range(cols):
            t = tiles[(r + c) % 2]
            if c % 2:
                t = t[:, ::-1]
            if r % 2:
                t = t[::-1]
            y, x = r * th, c * tw
            hh, ww = min(th, side - y), min(tw, side - x)
            img[y:y + hh, x:x + ww] = t[:hh, :ww]
    path = os.path.join(out, f"tiled-{megapixels:g}mp.{fmt}")
    (write_png if fmt == "png" else write_ppm)(path, img)
    return {"workload": "tiled", "path": path, "width": side, "height": side, "pixels": side * side,
            "tile": [tw, th]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    e = sub.add_parser("embeddings")
    e.add_argument("--n", type=int, default=100000)
    e.add_argument("--k", type=int, default=384)
    e.add_argument("--clusters", type=int, default=10)
    e.add_argument("--spread", type=float, default=0.25)
    c = sub.add_parser("cloud")
    c.add_argument("--n", type=int, default=1000000)
    c.add_argument("--points-per-tree", type=int, default=2000)
    b = sub.add_parser("blobs")
    b.add_argument("--n", type=int, default=10000000)
    b.add_argument("--k", type=int, default=2)
    b.add_argument("--blobs", type=int, default=20)
    p = sub.add_parser("photos")
    t = sub.add_parser("tiled")
    t.add_argument("--megapixels", type=float, default=25)
    t.add_argument("--format", choices=["png", "ppm"], default="png")
    d = sub.add_parser("decode")
    for s in (e, c, b, p, t, d):
        s.add_argument("out")
        s.add_argument("--seed", type=int, default=1)
        s.add_argument("--source", action="append", default=[], help="folder with china.jpg / flower.jpg (.ppm)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    sources = a.source + default_sources()
    if a.what == "embeddings":
        info = embeddings(a.out, a.n, a.k, a.clusters, a.spread, a.seed)
    elif a.what == "cloud":
        info = cloud(a.out, a.n, a.points_per_tree, a.seed)
    elif a.what == "blobs":
        info = blobs(a.out, a.n, a.k, a.blobs, a.seed)
    elif a.what == "photos":
        info = photos(a.out, sources)
    elif a.what == "tiled":
        info = tiled(a.out, a.megapixels, a.format, sources)
    else:
        for name in PHOTOS:
            write_ppm(os.path.join(a.out, name + ".ppm"), decode(name, sources))
        info = {"decoded": [os.path.join(a.out, n + ".ppm") for n in PHOTOS]}
    print(json.dumps(info), flush=True)


if __name__ == "__main__":
    sys.exit(main())
