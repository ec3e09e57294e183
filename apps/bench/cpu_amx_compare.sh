#!/bin/sh
# Issue 11 on the CPU with Intel AMX: one exact mean-shift step of every point at n points and k dims,
# 2 threads, in one run: the openmp backend's direct SIMD kernels and its GEMM form through the CLI
# (pair_form=direct / gemm, `seconds` of the step), then apps/bench/amx_step_probe (the GEMM form's
# block function with AMX bf16 products beside the same code with Eigen float32 products, wall and CPU
# seconds, and the deviation from a float64 step) and, with PYTHON set, the NumPy/OpenBLAS step
# (apps/bench/peers/numpy_step.py). Prints one JSON line per run, repeated REPS times (interleaved, so
# load from other work on the machine falls on all of them alike).
# Usage: [PYTHON=python3] [KS="64"] [KERNELS="isotropic"] [REPS=3] apps/bench/cpu_amx_compare.sh [build-dir] [n]
set -eu
BUILD=${1:-build}
N=${2:-16384}
KS=${KS:-64}
KERNELS=${KERNELS:-isotropic}
REPS=${REPS:-3}
HERE=$(dirname "$0")
echo "# $(date -u +%FT%TZ) commit $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo '?') on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for kernel in $KERNELS; do
  for k in $KS; do
    r=0
    while [ "$r" -lt "$REPS" ]; do
      for form in direct gemm; do
        printf '%s ' "$form"
        "$BUILD/bin/meanshift" bench --n "$N" --dims "$k" --iterations 1 --backend openmp --exact -q --kernel "$kernel" \
          --threads 2 --tune pair_form=$form
      done
      printf 'probe '
      "$BUILD/bin/amx_step_probe" --n "$N" --dims "$k" --kernel "$kernel" --threads 2 --reps 1 --check 64
      if [ -n "${PYTHON:-}" ]; then
        printf 'numpy '
        OPENBLAS_NUM_THREADS=2 "$PYTHON" "$HERE/peers/numpy_step.py" --n "$N" --dims "$k" --kernel "$kernel"
      fi
      r=$((r + 1))
    done
  done
done
