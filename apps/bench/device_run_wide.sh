#!/bin/bash
# Issue 27, "any dimension on the GPUs", on the GPU machine (device tool). Binaries built here into
# build-gpu/ (CMAKE_CUDA_ARCHITECTURES=90) and copied to gpu-carry/ (bin, lib, tools), as
# device_run_highdim.sh does; `carry: ["gpu-carry"]`.
#   tests : cuda unit tests (the dimension-tiled GEMM kernel, device-sized tiles), conformance cuda and
#           opencl, opencl unit tests on NVIDIA's driver, compute-sanitizer memcheck / racecheck on the
#           dimension-tiled kernel (k = 384 and 402, exact and truncated)
#   step  : one exact step, n = N (262,144), every point a seed, `meanshift bench` defaults on cuda
#           and opencl at k = DIMS, PyTorch's apps/bench/peers/torch_step.py in the same call
#   probe : gpu-carry/bin/cuda_wide_probe (apps/bench/cuda_wide_probe.cu, built here with nvcc and linked
#           with the objects of gemm_wide_kernel.cu and gemm_f16_kernel.cu) at k = PROBE_DIMS: kernel time
#           of the dimension-tiled kernel beside the fp16 kernel where both exist (k <= 256)
#   embed : the issue's 100,000 x 384 unit-vector embeddings, `cluster --bandwidth 0.3`, cuda defaults
#           and --exact (apps/bench/scale/generate.py draws them)
# Output: one line per measurement; $OUT/wide.log holds everything.
source gpu-carry/tools/device-opencl-env.sh >/dev/null; export LD_LIBRARY_PATH=$PWD/gpu-carry/lib; B=gpu-carry/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
mode="${1:-all}"
N="${N:-262144}"
DIMS="${DIMS:-16 64 128 256 384 512 768 1024}"
if [[ $mode == all || $mode == tests ]]; then
  echo "unit cuda: $(timeout 300 $B/meanshift_tests -tc='cuda*' 2>&1 | grep -E 'test cases|ERROR|deviation|MESSAGE|CHECK' | tail -12 | tr '\n' ' ')"
  echo "unit opencl (NVIDIA + PoCL): $(timeout 200 $B/meanshift_tests -tc='opencl*' 2>&1 | grep -E 'test cases|ERROR' | tail -4 | tr '\n' ' ')"
  for b in cuda opencl; do echo "conformance $b: $(timeout 240 $B/meanshift_conformance --backend=$b 2>&1 | grep -E 'test cases|ERROR' | tail -3 | tr '\n' ' ')"; done
  for k in 384 402; do
    for x in "" --exact; do
      echo "memcheck k=$k $x: $(timeout 120 compute-sanitizer --tool memcheck $B/meanshift bench --n 2000 --dims $k --iterations 2 -b cuda -q $x 2>&1 | grep -E 'ERROR SUMMARY|rror' | head -3 | tr '\n' ' ')"
      echo "racecheck k=$k $x: $(timeout 120 compute-sanitizer --tool racecheck $B/meanshift bench --n 1000 --dims $k --iterations 1 -b cuda -q $x 2>&1 | grep -E 'RACECHECK SUMMARY|hazard' | head -3 | tr '\n' ' ')"
    done
  done
  echo "synccheck k=1024: $(timeout 120 compute-sanitizer --tool synccheck $B/meanshift bench --n 1000 --dims 1024 --iterations 1 -b cuda -q --exact 2>&1 | grep -E 'SUMMARY|rror' | head -3 | tr '\n' ' ')"
fi
if [[ $mode == all || $mode == step ]]; then
  X="--exact -q --iterations 1"
  for k in $DIMS; do
    echo "bench k=$k cuda n=$N: $(timeout 100 $B/meanshift bench --n $N --dims $k -b cuda $X 2>&1 | tail -1)"
    [[ -n $NO_OPENCL ]] || echo "bench k=$k opencl n=$N: $(timeout 100 $B/meanshift bench --n $N --dims $k -b opencl $X 2>&1 | tail -1)"
  done
  python3 apps/bench/peers/torch_step.py --n $N --dims $DIMS --reps 2
fi
if [[ $mode == all || $mode == probe ]]; then
  for k in ${PROBE_DIMS:-160 192 256 384 512 640 768 1024}; do timeout 60 $B/cuda_wide_probe $N $k 2; done
fi
if [[ $mode == all || $mode == embed ]]; then
  D=$(mktemp -d)
  python3 apps/bench/scale/generate.py embeddings $D --n 100000 --k 384 --clusters 10 2>&1 | tail -1
  f=$(ls $D/*.npy | head -1)
  for x in "" --exact; do
    /usr/bin/time -f "wall %e s, peak %M KB" timeout 120 $B/meanshift cluster $f --bandwidth 0.3 -b cuda $x -q -o $D/labels.csv 2>&1 | tail -14
  done
fi
