#!/bin/bash
# Shapes of the fp16 GEMM kernel compared in one call on the GPU machine (docs/backend-cuda.md):
#   source apps/bench/cuda_gemm_probe.sh "16 32 64 128" 262144
#   variant base 's/@@//'                                  # the kernel as committed
#   variant nt64 's/int nt = 128;/int nt = 64;/'           # a sed expression on gemm_f16_kernel.cu
# Each variant prints the best of 3 launches in pairs/s (one exact step of every point).
NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}"
PROBE_K="${1:-64}"; PROBE_N="${2:-262144}"
PROBE_DIR=$(mktemp -d)
variant() {  # name, sed expression applied to the kernel source
  sed -e "$2" backends/cuda/gemm_f16_kernel.cu > "$PROBE_DIR/$1.cu"
  "$NVCC" -O3 -std=c++17 --expt-relaxed-constexpr -arch=sm_90 -I"$PWD" -DKSRC="\"$PROBE_DIR/$1.cu\"" \
    -DVARIANT="\"$1\"" apps/bench/cuda_gemm_probe.cu -o "$PROBE_DIR/$1" 2>&1 | grep -E "error" | head -3
  for k in $PROBE_K; do "$PROBE_DIR/$1" "$PROBE_N" "$k" 3; done
}
