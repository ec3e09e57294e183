#!/bin/sh
# On the CPU with Intel AMX: one exact mean-shift step of every point at n points and k dims,
# 2 threads, in one run, through the CLI (`seconds` of the step), one line per variant:
#   default: the CLI defaults (pair_form=auto; AMX where usable), noamx: --tune openmp.isa=avx512,
#   direct / gemm: pair_form forced (with AMX where usable), gemm_noamx: the GEMM form without AMX;
# with PROBE=1 apps/bench/amx_step_probe (block function only: AMX vs Eigen products, with the deviation
# from a float64 step) and, with PYTHON set, the NumPy/OpenBLAS step (apps/bench/peers/numpy_step.py).
# Variants run interleaved, repeated REPS times, so load from other work falls on all of them alike.
# Usage: [PYTHON=python3] [KS="64"] [NS="16384"] [KERNELS="isotropic"] [VARIANTS="default noamx"] [PROBE=0]
#        [REPS=3] apps/bench/cpu_amx_compare.sh [build-dir]
set -eu
BUILD=${1:-build}
NS=${NS:-16384}
KS=${KS:-64}
KERNELS=${KERNELS:-isotropic}
VARIANTS=${VARIANTS:-default noamx}
PROBE=${PROBE:-0}
REPS=${REPS:-3}
HERE=$(dirname "$0")
echo "# $(date -u +%FT%TZ) commit $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo '?') on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $NS; do
  for kernel in $KERNELS; do
    for k in $KS; do
      r=0
      while [ "$r" -lt "$REPS" ]; do
        for v in $VARIANTS; do
          case $v in
            default) tune="" ;;
            noamx) tune="--tune openmp.isa=avx512" ;;
            direct) tune="--tune pair_form=direct" ;;
            gemm) tune="--tune pair_form=gemm" ;;
            gemm_noamx) tune="--tune pair_form=gemm --tune openmp.isa=avx512" ;;
            *) echo "unknown variant $v" >&2; exit 2 ;;
          esac
          printf '%s ' "$v"
          # shellcheck disable=SC2086
          "$BUILD/bin/meanshift" bench --n "$n" --dims "$k" --iterations 1 --backend openmp --exact -q --kernel "$kernel" \
            --threads 2 $tune
        done
        if [ "$PROBE" = 1 ]; then
          printf 'probe '
          "$BUILD/bin/amx_step_probe" --n "$n" --dims "$k" --kernel "$kernel" --threads 2 --reps 1 --check 64
        fi
        if [ -n "${PYTHON:-}" ]; then
          printf 'numpy '
          OPENBLAS_NUM_THREADS=2 "$PYTHON" "$HERE/peers/numpy_step.py" --n "$n" --dims "$k" --kernel "$kernel"
        fi
        r=$((r + 1))
      done
    done
  done
done
