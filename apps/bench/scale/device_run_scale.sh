#!/bin/bash
# On the GPU machine (device tool), one call: the GPU tests of this build, then the scale
# benchmarks (run_gpu.sh: every workload through `meanshift` with its defaults beside the PyTorch peer).
# Binaries built here into build-gpu/ (CMAKE_CUDA_ARCHITECTURES=90) and copied to gpu-carry/ (bin, lib,
# tools) as apps/bench/device_run_wide.sh says; carry ["gpu-carry", "data"] (data/: china.ppm and
# flower.ppm from `python3 apps/bench/scale/generate.py decode data`).
#   MEANSHIFT_COMMIT=<hash> apps/bench/scale/device_run_scale.sh [run_gpu.sh options]
set -uo pipefail
source gpu-carry/tools/device-opencl-env.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=$PWD/gpu-carry/lib
B=gpu-carry/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
for b in cuda opencl; do echo "conformance $b: $(timeout 150 $B/meanshift_conformance --backend=$b 2>&1 | grep 'test cases')"; done
echo "unit cuda/opencl: $(timeout 150 $B/meanshift_tests -tc='cuda*,opencl*' 2>&1 | grep 'test cases')"
echo "unit grouping/bins/truncated: $(timeout 100 $B/meanshift_tests -tc='grouping*,*bin*,truncated*' 2>&1 | grep 'test cases')"
apps/bench/scale/run_gpu.sh "$B/meanshift" "$@"
