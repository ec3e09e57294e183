"""The package gives the `meanshift` tool's results on the same data, for every usable backend."""
import os
import struct
import subprocess
import zlib

import numpy as np
import pytest
from sklearn.datasets import make_blobs

import meanshift
from meanshift import MeanShift

from conftest import usable_backends


def run(cli, *args):
    # env=os.environ: the environment this process started with. Without it the tool inherits the C-level
    # environment, which OpenCL drivers loaded here may have rewritten (on the GPU machine, probing the
    # ICDs set OCL_ICD_FILENAMES to PoCL alone, so the tool ran on the CPU device while the package used
    # the GPU's).
    p = subprocess.run([cli, *map(str, args)], capture_output=True, text=True, env=dict(os.environ))
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    X, _ = make_blobs(n_samples=4000, n_features=3, centers=6, cluster_std=1.0, random_state=5)
    X = X.astype(np.float32)
    path = tmp_path_factory.mktemp("cli") / "points.npy"
    np.save(path, X)
    return X, path


@pytest.mark.parametrize("backend", usable_backends())
@pytest.mark.parametrize("case", ["defaults", "diagonal", "components"])
def test_cluster_equals_cli(cli, points, tmp_path, backend, case):
    X, path = points
    out, modes = tmp_path / "labels.npy", tmp_path / "modes.npy"
    args = ["cluster", path, "-o", out, "--modes", modes, "--backend", backend, "--quiet"]
    if case == "defaults":
        est = MeanShift(bandwidth=1.5, backend=backend)
        args += ["--bandwidth", 1.5]
    elif case == "diagonal":
        est = MeanShift(bandwidth=[1.5, 1.0, 2.0], backend=backend, tol=1e-2, merge_eps=0.3)
        args += ["--bandwidths", "1.5,1,2", "--tol", 0.01, "--merge-eps", 0.3]
    else:
        est = MeanShift(bandwidth=1.2, backend=backend, grouping="components", max_iter=50)
        args += ["--bandwidth", 1.2, "--grouping", "components", "--max-iter", 50]
    run(cli, *args)
    est.fit(X)
    np.testing.assert_array_equal(est.labels_, np.load(out))
    np.testing.assert_array_equal(est.cluster_centers_, np.load(tmp_path / "labels.centres.npy"))
    np.testing.assert_array_equal(est.modes_, np.load(modes))
    assert est.backend_ == backend


def read_png_rgb(path):
    """Decodes an 8-bit RGB PNG as the CLI writes it (libspng or stb_image_write; no interlace), all 5 row filters."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert (depth, colour, interlace) == (8, 2, 0)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, 1 + w * 3)
    out = np.zeros((h, w * 3), dtype=np.int32)
    for y in range(h):
        f, row = raw[y, 0], raw[y, 1:].astype(np.int32)
        prev = out[y - 1] if y else np.zeros(w * 3, dtype=np.int32)
        cur = np.zeros(w * 3, dtype=np.int32)
        for x in range(w * 3):
            a = cur[x - 3] if x >= 3 else 0
            b = prev[x]
            c = prev[x - 3] if x >= 3 else 0
            if f == 0:
                p = 0
            elif f == 1:
                p = a
            elif f == 2:
                p = b
            elif f == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (row[x] + p) & 255
        out[y] = cur
    return out.reshape(h, w, 3).astype(np.uint8)


def write_ppm(path, rgb):
    h, w, _ = rgb.shape
    with open(path, "wb") as f:
        f.write(f"P6\n{w} {h}\n255\n".encode())
        f.write(np.ascontiguousarray(rgb, dtype=np.uint8).tobytes())


def patches_image():
    # Four flat colour patches with noise: a few segments, boundaries the segmentation must find.
    rng = np.random.RandomState(0)
    img = np.zeros((36, 48, 3))
    img[:18, :24] = (200, 40, 40)
    img[:18, 24:] = (40, 160, 60)
    img[18:, :30] = (30, 60, 190)
    img[18:, 30:] = (220, 210, 90)
    return np.clip(img + rng.normal(0, 6, img.shape), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("backend", usable_backends())
def test_segment_equals_cli(cli, tmp_path, backend):
    img = patches_image()
    write_ppm(tmp_path / "img.ppm", img)
    run(cli, "segment", tmp_path / "img.ppm", "-o", tmp_path / "seg.png", "--labels", tmp_path / "ids.npy",
        "--filtered-output", tmp_path / "seg-filtered.png", "--backend", backend, "--min-region", 20, "--quiet")
    s = meanshift.segment(img, backend=backend, min_region=20)
    np.testing.assert_array_equal(s.labels, np.load(tmp_path / "ids.npy"))
    np.testing.assert_array_equal(s.segmented, read_png_rgb(tmp_path / "seg.png"))
    np.testing.assert_array_equal(s.filtered, read_png_rgb(tmp_path / "seg-filtered.png"))
    assert s.n_segments == 4
    assert s.info["backend"] == backend
