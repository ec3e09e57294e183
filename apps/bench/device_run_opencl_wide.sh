#!/bin/bash
# OpenCL (NVIDIA) at high k on the GPU machine (device tool): the dimension-tiled GEMM kernel
# (kernels/gemm_wide.cl) beside the previous binary and PyTorch, one call. Binaries of a build made
# here, carried in $CARRY: bin/ (meanshift, meanshift_conformance), lib/ (libmeanshift.so.0 and the
# libraries the binaries link), old/ (meanshift + libmeanshift.so.0 of the previous commit),
# tools/device-opencl-env.sh. One exact step, n = 262,144, every point a seed.
# Usage: CARRY=gpu-carry-C [DIMS="16 64 ..."] [OLD_DIMS="..."] [VARIANTS="512:opencl.gemm_dim_chunk=8 ..."]
#        [TAU128_DIMS="128 512 1024" (the 4 x 16-block variant, --tau 128)] [CONF_S=150]
#        [CONF_TC="conformance highdim*" (doctest -tc filter)] [N=262144] [OLD_DIMS="" runs no old binary]
#        apps/bench/device_run_opencl_wide.sh
C=${CARRY:-gpu-carry-C}
CONF_TC=${CONF_TC:-conformance highdim*}
source $C/tools/device-opencl-env.sh >/dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
export LD_LIBRARY_PATH=$PWD/$C/lib
B="--n ${N:-262144} --exact -q --iterations 1 -b opencl"
DIMS="${DIMS:-16 64 128 256 384 512 768 1024}"
short() { python3 -c 'import json,sys
for l in sys.stdin:
    l=l.strip()
    if l.startswith("{"):
        j=json.loads(l); print("step %.3e pairs/s, kernels %.3e, prepare %.2f s, step %.2f s" % (j["pairs_per_s"], j["pairs_per_s_kernels"], j["seconds_prepare"], j["seconds"]))
    elif l: print(l[:200])'; }
for k in $DIMS; do echo "new k=$k: $(timeout 60 $C/bin/meanshift bench --dims $k $B 2>&1 | tail -1 | short)"; done
for v in ${VARIANTS:-}; do k=${v%%:*}; echo "new k=$k --tune ${v#*:}: $(timeout 60 $C/bin/meanshift bench --dims $k $B --tune ${v#*:} 2>&1 | tail -1 | short)"; done
for k in ${TAU128_DIMS:-}; do echo "new k=$k --tau 128: $(timeout 60 $C/bin/meanshift bench --dims $k $B --tau 128 2>&1 | tail -1 | short)"; done
for k in ${OLD_DIMS-16 64 128 256 384}; do echo "old k=$k: $(LD_LIBRARY_PATH=$PWD/$C/old:$PWD/$C/lib timeout 60 $C/old/meanshift bench --dims $k $B 2>&1 | tail -1 | short)"; done
timeout 200 python3 apps/bench/peers/torch_step.py --n ${N:-262144} --dims $DIMS --reps 1
# Last, so that a slow conformance run (one program build per topology and form) cannot cost the timings.
echo "conformance opencl ($CONF_TC): $(timeout ${CONF_S:-150} $C/bin/meanshift_conformance --backend=opencl -tc="$CONF_TC" 2>&1 | grep -E 'test cases|ERROR|FAILED' | tail -4 | tr '\n' ' ')"
