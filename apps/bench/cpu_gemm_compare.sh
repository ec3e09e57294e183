#!/bin/sh
# On the CPU: one exact mean-shift step (every point a seed, brute force) of the openmp
# backend's direct SIMD kernels vs its GEMM form (pair_form=direct / gemm) vs a NumPy (BLAS sgemm)
# GEMM-based step on the same kind of data (apps/bench/peers/numpy_step.py), k = 16, 32, 64, 128,
# isotropic and per-point (diagonal) bandwidths, all in one run. Prints one JSON line per run.
# Usage: [PYTHON=python3] [KS="16 32 64 128"] apps/bench/cpu_gemm_compare.sh [build-dir] [n]   (default: build, 65536)
set -eu
BUILD=${1:-build}
N=${2:-65536}
KS=${KS:-16 32 64 128}
MS="$BUILD/bin/meanshift"
HERE=$(dirname "$0")
echo "# $(date -u +%FT%TZ) commit $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo '?') on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
for kernel in isotropic diagonal; do
  for k in $KS; do
    for form in direct gemm; do
      printf '%s ' "$form"
      "$MS" bench --n "$N" --dims "$k" --iterations 1 --backend openmp --exact -q --kernel "$kernel" \
        --tune pair_form=$form
    done
    printf 'numpy '
    "${PYTHON:-python3}" "$HERE/peers/numpy_step.py" --n "$N" --dims "$k" --kernel "$kernel"
  done
done
