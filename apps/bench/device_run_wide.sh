#!/bin/bash
# "Any dimension on the GPUs", on the GPU machine (device tool). Binaries built here into
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
# NO_OPENCL=1 leaves the OpenCL tests and steps out. Output: one line per measurement.
source gpu-carry/tools/device-opencl-env.sh >/dev/null; export LD_LIBRARY_PATH=$PWD/gpu-carry/lib; B=gpu-carry/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
mode="${1:-all}"
N="${N:-262144}"
DIMS="${DIMS:-16 64 128 256 384 512 768 1024}"
if [[ $mode == all || $mode == tests ]]; then
  L=${OUT:-/tmp}
  timeout 200 $B/meanshift_tests -tc='cuda*' > $L/unit_cuda.log 2>&1; echo "unit cuda rc=$?"
  grep -E "test cases|assertions|deviation" $L/unit_cuda.log; grep -A6 ERROR $L/unit_cuda.log | grep -E "values|:=" | head -12
  if [[ -z $NO_OPENCL ]]; then
    timeout 200 $B/meanshift_tests -tc='opencl*' > $L/unit_opencl.log 2>&1; echo "unit opencl rc=$?"
    grep -E "test cases|assertions" $L/unit_opencl.log; grep -A6 ERROR $L/unit_opencl.log | grep -E "values|:=" | head -12
  fi
  for b in cuda ${NO_OPENCL:+-}opencl; do [[ $b == -* ]] && continue; echo "conformance $b: $(timeout 240 $B/meanshift_conformance --backend=$b 2>&1 | grep -E 'test cases|ERROR' | tail -3 | tr '\n' ' ')"; done
  if [[ -z $NO_SANITIZER ]]; then
    for x in "" --exact; do
      for k in 384 1024; do
        echo "memcheck k=$k $x: $(timeout 90 compute-sanitizer --tool memcheck $B/meanshift bench --n 1000 --dims $k --iterations 2 -b cuda -q $x 2>&1 | grep -E 'ERROR SUMMARY|rror' | head -3 | tr '\n' ' ')"
      done
    done
    echo "racecheck k=402 --exact: $(timeout 120 compute-sanitizer --tool racecheck $B/meanshift bench --n 300 --dims 402 --iterations 1 -b cuda -q --exact 2>&1 | grep -E 'RACECHECK SUMMARY|hazard' | head -3 | tr '\n' ' ')"
    echo "synccheck k=384: $(timeout 90 compute-sanitizer --tool synccheck $B/meanshift bench --n 300 --dims 384 --iterations 1 -b cuda -q 2>&1 | grep -E 'SUMMARY|rror' | head -3 | tr '\n' ' ')"
  fi
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
  # cuda_wide_probe_v1: the same probe linked with an earlier version of the kernel (PROBE_OLD), if carried
  for k in ${PROBE_DIMS:-160 192 256 384 512 640 768 1024}; do
    [[ -x $B/cuda_wide_probe_v1 ]] && timeout 60 $B/cuda_wide_probe_v1 $N $k 2 | grep wide | sed "s/^/${PROBE_OLD:-v1} /"
    timeout 60 $B/cuda_wide_probe $N $k 2
  done
fi
if [[ $mode == all || $mode == embed ]]; then
  D=$(mktemp -d)
  python3 apps/bench/scale/generate.py embeddings $D --n 100000 --k 384 --clusters 10 2>&1 | tail -1
  f=$(ls $D/*.npy | head -1)
  for x in "" --exact; do
    /usr/bin/time -f "wall %e s, peak %M KB" timeout 120 $B/meanshift cluster $f --bandwidth 0.3 -b cuda $x -q -o $D/labels.csv 2>&1 | tail -14
  done
fi
