#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_cluster (fuzz/corpus/cluster/): a few inputs in the layout that
fuzz_cluster.cpp decodes. Run from the repository root: python3 fuzz/make_cluster_seeds.py"""
import pathlib
import random
import struct

OUT = pathlib.Path(__file__).resolve().parent / "corpus" / "cluster"

# Header bytes (fuzz_cluster.cpp, decode()); the rest is the value pool.
FIELDS = ["shape", "n", "k_lo", "k_hi", "flags", "bin_data", "grouping", "merge_eps", "cutoff", "bin_size",
          "data_bin_size", "min_bin_count", "iterations", "tolerance", "search", "pair_form", "scale",
          "bandwidth", "weights"]
HEADER = 24


def case(pool, **fields):
    h = bytearray(HEADER)
    for name, value in fields.items():
        h[FIELDS.index(name)] = value
    return bytes(h) + bytes(pool)


def blobs(rng, n, k, centres=((-12, -12), (0, 10), (12, -4))):
    """Lattice bytes (value = (b % 33) - 16, times the scale) around a few centres."""
    out = []
    for i in range(n):
        c = centres[i % len(centres)]
        for d in range(k):
            out.append((c[d % len(c)] + rng.randint(-2, 2) + 16) % 33)
    return out


def f32(x):
    return [0xF0] + list(struct.pack("<f", x))


def main():
    rng = random.Random(26)
    OUT.mkdir(parents=True, exist_ok=True)
    seeds = {
        # 30 points in 3 blobs, k = 2, isotropic bandwidth 2 (palette 2), serial, default options
        "blobs-serial.bin": case(blobs(rng, 30, 2) + [2], n=29, k_lo=1, iterations=0),
        # the same on OpenMP with 2 threads, connected components, all points as seeds
        "blobs-openmp-cc.bin": case(blobs(rng, 30, 2) + [2], n=29, k_lo=1, flags=0x23, grouping=1, iterations=0),
        # exact kernel, per-point bandwidths (1 and 0.5), k = 3
        "exact-per-point.bin": case(blobs(rng, 12, 3) + [0, 1] * 18, n=11, k_lo=2, flags=0x1C,
                                    bandwidth=2, iterations=50),
        # bandwidth 1e-20 (palette 9) on points one lattice step apart: each its own cluster
        "tiny-bandwidth.bin": case(blobs(rng, 20, 2) + [9], n=19, k_lo=1, iterations=20),
        # (1e19, 1), (0, 1), (1e10, 1e10) (specials 4 and 8), bandwidth 1
        "huge-coordinate.bin": case([0xC4, 17, 16, 17, 0xC8, 0xC8, 0], n=2, k_lo=1, iterations=20),
        # raw float32 coordinates up to 1e30, diagonal bandwidths 1e-300 / 1e300 (palette 7, 8)
        "extremes-diagonal.bin": case(f32(1e30) + f32(-3e29) + f32(1.5) + f32(-1e-30) + [7, 8], n=1, k_lo=1,
                                      bandwidth=1, scale=7, iterations=5),
        # log-uniform bandwidth (0x80 | mantissa, then the exponent word), bins of 1e-20 bandwidths
        "log-bandwidth-bins.bin": case(blobs(rng, 16, 4) + [0x85, 0x2C, 0x01], n=15, k_lo=3, bin_size=9,
                                       data_bin_size=5, iterations=30),
        # weights (some zero), Grid search, GEMM pair form on OpenMP
        "weights-grid-gemm.bin": case(blobs(rng, 24, 2) + [0] + [0, 1, 2, 3] * 6, n=23, k_lo=1, flags=0x01,
                                      search=1, pair_form=2, weights=3, iterations=40),
        # k = 75,002 (k word 0xD000), n = 2, all points as seeds (bins with their boundary refinement
        # took O(k^2) time at such k: docs/testing.md, "Fuzzing")
        "wide-k.bin": case([3, 5, 7, 0xC2, 0] * 4 + [0], shape=0x1F, n=1, k_lo=0x00, k_hi=0xD0, flags=0x20,
                           iterations=98),
        # k = 10^6 (k word 0xFFFF), n = 1, per-point bandwidths, all points as seeds
        "wide-k-million.bin": case([1, 2, 0], shape=0x1F, n=0, k_lo=0xFF, k_hi=0xFF, flags=0x20, bandwidth=2,
                                   iterations=99),
    }
    for name, data in seeds.items():
        (OUT / name).write_bytes(data)
    print(f"{len(seeds)} seeds in {OUT}")


if __name__ == "__main__":
    main()
