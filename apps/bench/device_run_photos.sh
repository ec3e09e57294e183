#!/bin/bash
# Photos (one-iteration defaults) on the GPU
# machine (device tool). Binaries built here (CUDA arch 90) in gpu-carry/{bin,lib}; the previous
# release's bench_segment_repeat + libmeanshift in gpu-carry/before/{bin,lib} run in the same call.
#   apps/bench/device_run_photos.sh [photos|opencl|all]
set -u
C=$PWD/gpu-carry; B=$C/bin
source $C/tools/device-opencl-env.sh >/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc
mode="${1:-all}"
if [[ $mode == all || $mode == photos ]]; then
  for b in cuda opencl; do echo "conformance $b: $(LD_LIBRARY_PATH=$C/lib timeout 200 $B/meanshift_conformance --backend=$b 2>&1 | grep 'test cases')"; done
  # segment_image 6 times in one process (run 0 pays context/module load or the program build).
  for img in china flower; do for b in cuda opencl; do
    for v in before after; do
      if [ $v = before ]; then L=$C/before/lib; X=$C/before/bin; else L=$C/lib; X=$B; fi
      LD_LIBRARY_PATH=$L $X/bench_segment_repeat $C/data/$img.jpg $b 6 > ${OUT:-/tmp}/seg-$img-$b-$v.json 2>&1
      python3 - ${OUT:-/tmp}/seg-$img-$b-$v.json "$img $b $v" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
f = lambda key: " ".join("%.1f" % (1e3 * r.get(key, float("nan"))) for r in rows)
print(sys.argv[2], "ms per run (run 0 first): mean shift", f("seconds_mean_shift"), "| prepare", f("seconds_prepare"),
      "| search", f("seconds_search"), "| bind", f("seconds_bind"), "| iterate", f("seconds_iterate"),
      "| kernels", f("seconds_kernels"), "| group", f("seconds_group"), "| segments", rows[-1]["segments"] if rows else "?")
PY
    done
  done; done
  # What a user gets: the CLI, a new process each time.
  for img in china flower; do for b in cuda opencl; do for r in 1 2 3; do
    echo "CLI $img $b rep $r: $(LD_LIBRARY_PATH=$C/lib $B/meanshift segment $C/data/$img.jpg -b $b -o /tmp/$img-$b.png 2>&1 | grep -E '^(segments|time)' | tr -s ' ' | tr '\n' '|')"
  done; done; done
fi
if [[ $mode == all || $mode == opencl ]]; then
  export LD_LIBRARY_PATH=$C/lib
  # OpenCL one iteration, isotropic and per-point: the default against tau 128 (the stop-13 sweep's
  # best), alternating, beside bench_opencl's sweep in the same call.
  for r in 1 2 3; do for kern in isotropic diagonal; do
    for t in 0 128; do
      echo "opencl $kern tau=$t rep $r: $(timeout 60 $B/meanshift bench -q --exact --n 1048576 --dims 3 --iterations 1 --kernel $kern -b opencl --tau $t | tail -1 | cut -c1-200)"
    done
  done; done
  timeout 240 $B/bench_opencl --n 1048576 --k 3 --reps 3 --check 32 2>&1 | tail -25
fi
