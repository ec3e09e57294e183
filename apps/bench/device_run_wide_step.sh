#!/bin/bash
# The high-k GEMM kernels on the GPU machine (device tool): binaries of a CUDA build made here, carried
# in $CARRY (bin/: meanshift, meanshift_tests, meanshift_conformance; lib/: libmeanshift.so.0 and the
# image/CSV libraries the binaries link, as gpu-carry/ holds them; tools/device-opencl-env.sh).
# Runs the GEMM unit tests and the high-dimensional conformance cases, compute-sanitizer on the
# warpgroup-MMA kernel of k = 129..512, a CLI cross-check against openmp, then one exact step
# (n = 262,144, every point a seed) per k with the defaults and with `--tune cuda.wgmma=0` (the
# mma.sync kernels) where that differs, PyTorch's torch_step.py in the same call.
# Usage: CARRY=gpu-carry [DIMS="16 64 ..."] [WGMMA_DIMS="192 256"] [OCL_DIMS="128"] apps/bench/device_run_wide_step.sh
C=${CARRY:-gpu-carry}; B=$C/bin
source $C/tools/device-opencl-env.sh >/dev/null 2>&1; export LD_LIBRARY_PATH=$PWD/$C/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
timeout 150 $B/meanshift_tests -tc='cuda: the warpgroup*,cuda: GEMM*,cuda: the dimension-tiled*' 2>&1 |
    grep -E "test cases|deviation|k = |ERROR|CHECK|FAIL" | head -40
echo "conformance cuda (highdim, step): $(timeout 120 $B/meanshift_conformance --backend=cuda -tc='conformance highdim*,conformance step*' 2>&1 | grep -E 'test cases|ERROR' | tail -3 | tr '\n' ' ')"
S=compute-sanitizer
run_san() { echo "$1: $(timeout 90 $S --tool $2 $B/meanshift bench ${@:3} -b cuda -q 2>&1 | grep -E 'SUMMARY|rror' | head -2 | tr '\n' ' ')"; }
run_san "memcheck k=200 exact" memcheck --n 1000 --dims 200 --iterations 2 --exact
run_san "memcheck k=450 cutoff" memcheck --n 800 --dims 450 --iterations 2
run_san "memcheck k=256 exact" memcheck --n 700 --dims 256 --iterations 2 --exact
run_san "racecheck k=130 exact" racecheck --n 300 --dims 130 --iterations 1 --exact
run_san "racecheck k=300 exact" racecheck --n 200 --dims 300 --iterations 1 --exact
run_san "synccheck k=400" synccheck --n 300 --dims 400 --iterations 1
# Cross-check through the CLI: 6,000 unit-vector embeddings, 3 fixed iterations, cuda (default kernels and
# cuda.wgmma=0) against openmp: ARI and the largest distance between matched centres, in bandwidths.
cat > /tmp/ms_compare.py <<'PY'
import sys
import numpy as np
from sklearn.metrics import adjusted_rand_score
a, b, h = sys.argv[1], sys.argv[2], float(sys.argv[3])
ca, cb = np.load(a.replace(".npy", ".centres.npy")), np.load(b.replace(".npy", ".centres.npy"))
d = np.sqrt(((ca[:, None, :].astype(np.float64) - cb[None, :, :]) ** 2).sum(-1)).min(1).max() / h
print(f"ARI {adjusted_rand_score(np.load(a), np.load(b)):.4f}, clusters {len(ca)} / {len(cb)}, centres within {d:.2e} bandwidths")
PY
D=$(mktemp -d)
for k in ${CHECK_DIMS:-130 200 256 300 450}; do
    python3 apps/bench/scale/generate.py embeddings $D/e$k --n 6000 --k $k --clusters 8 >/dev/null 2>&1
    for run in "cu:-b cuda" "cu0:-b cuda --tune cuda.wgmma=0" "om:-b openmp"; do
        $B/meanshift cluster $D/e$k/points.npy --bandwidth 0.3 --exact --fixed-iterations 3 ${run#*:} -o $D/${run%%:*}.npy -q >/dev/null 2>&1
    done
    echo "k=$k cuda vs openmp: $(python3 /tmp/ms_compare.py $D/cu.npy $D/om.npy 0.3); cuda.wgmma=0 vs openmp: $(python3 /tmp/ms_compare.py $D/cu0.npy $D/om.npy 0.3)"
done
DIMS="${DIMS:-16 64 128 160 192 256 384 512 640 768 1024}"
for k in $DIMS; do echo "bench k=$k cuda: $(timeout 60 $B/meanshift bench --n 262144 --dims $k -b cuda --exact -q --iterations 1 2>&1 | tail -1)"; done
for k in ${WGMMA_DIMS:-192 256 384 512}; do echo "bench k=$k cuda wgmma=0: $(timeout 60 $B/meanshift bench --n 262144 --dims $k -b cuda --exact -q --iterations 1 --tune cuda.wgmma=0 2>&1 | tail -1)"; done
for k in ${OCL_DIMS:-}; do echo "bench k=$k opencl: $(timeout 60 $B/meanshift bench --n 262144 --dims $k -b opencl --exact -q --iterations 1 2>&1 | tail -1)"; done
timeout 200 python3 apps/bench/peers/torch_step.py --n 262144 --dims $DIMS --reps 1
