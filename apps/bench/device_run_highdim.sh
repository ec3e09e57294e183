#!/bin/bash
# High-dimensional checks on the GPU machine (device tool). Binaries built
# here into build/ and copied to gpu-carry/ (bin, lib, data), as device_run_truncated.sh does.
#   tests : conformance + unit tests on cuda/opencl, compute-sanitizer on a GEMM-form step
#   highdim: `meanshift bench` (the CLI, default options) at k = 16..256, n = 262,144, one
#            iteration, every point a seed, exact kernel: cuda and opencl by default and with
#            pair_form=direct, beside the PyTorch peer (apps/bench/peers/torch_step.py) in the same call
#   compare: the CLI default (cuda, exact, isotropic) of these binaries against gpu-carry/before
#            (the previous release's binaries and library) and PyTorch, k = DIMS, same call
#   photos / blobs: device_run_truncated.sh's segmentation and 1e6-blob runs
source gpu-carry/tools/device-opencl-env.sh >/dev/null; export LD_LIBRARY_PATH=$PWD/gpu-carry/lib; B=gpu-carry/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
mode="${1:-all}"
N="${N:-262144}"
DIMS="${DIMS:-16 32 64 128 256}"
if [[ $mode == all || $mode == tests ]]; then
  for b in cuda opencl; do echo "conformance $b: $(timeout 240 $B/meanshift_conformance --backend=$b 2>&1 | grep -E 'test cases|ERROR' | tail -3 | tr '\n' ' ')"; done
  echo "unit cuda*/opencl*: $(timeout 200 $B/meanshift_tests -tc='cuda*,opencl*' 2>&1 | grep -E 'test cases|ERROR' | tail -5 | tr '\n' ' ')"
  echo "unit cuda GEMM: $(timeout 100 $B/meanshift_tests -tc='*GEMM*,*gemm*' 2>&1 | grep -E 'test cases|ERROR' | tail -5 | tr '\n' ' ')"
  # Defaults at k = 64 run the GEMM kernels: truncated (cutoff as a mask) and --exact.
  for x in "" --exact; do
    timeout 120 compute-sanitizer --tool memcheck $B/meanshift bench --n 3000 --dims 64 --iterations 2 -b cuda -q $x 2>&1 | grep -E "ERROR SUMMARY|error" | head -3
    timeout 120 compute-sanitizer --tool racecheck $B/meanshift bench --n 3000 --dims 64 --iterations 1 -b cuda -q $x 2>&1 | grep -E "RACECHECK SUMMARY|hazard" | head -3
  done
fi
if [[ $mode == all || $mode == highdim ]]; then
  # Exact kernel, every point a seed (the pair rate a user gets for an exact step); the direct
  # kernels on n = 65,536 (NDIRECT) to keep them under a minute.
  X="--exact -q --iterations 1"
  # Every backend's default (Auto: the GEMM kernels from the crossover on) on n = N, beside
  # pair_form=direct on NDIRECT for k <= KDIRECT_MAX.
  for k in $DIMS; do
    for kern in isotropic diagonal; do
      [[ $kern == diagonal && $k -gt 128 ]] && continue
      for b in ${BACKENDS:-cuda opencl}; do
        echo "bench k=$k $kern $b default n=$N: $(timeout 120 $B/meanshift bench --n $N --dims $k --kernel $kern -b $b $X 2>&1 | tail -1)"
        [[ $k -gt ${KDIRECT_MAX:-64} ]] && continue
        echo "bench k=$k $kern $b pair_form=direct n=${NDIRECT:-65536}: $(timeout 120 $B/meanshift bench --n ${NDIRECT:-65536} --dims $k --kernel $kern -b $b --tune pair_form=direct $X 2>&1 | tail -1)"
      done
    done
  done
  python3 apps/bench/peers/torch_step.py --n $N --dims $DIMS --reps 2
fi
if [[ $mode == compare ]]; then
  X="--exact -q --iterations 1 -b cuda --kernel ${KERNEL:-isotropic}"
  for rep in 1 2; do
    for k in $DIMS; do
      echo "k=$k after:  $($B/meanshift bench --n $N --dims $k $X 2>&1 | tail -1)"
      echo "k=$k before: $(LD_LIBRARY_PATH=$PWD/gpu-carry/before/lib:$PWD/gpu-carry/lib gpu-carry/before/bin/meanshift bench --n $N --dims $k $X 2>&1 | tail -1)"
    done
  done
  /opt/torch/.venv/bin/python3 apps/bench/peers/torch_step.py --n $N --dims $DIMS --reps 2
fi
