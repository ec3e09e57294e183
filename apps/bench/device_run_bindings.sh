#!/bin/bash
# Verification on the GPU machine (one call): tests, conformance, compute-sanitizer and the
# "defaults are the fastest" comparison, each peer in the same run. Needs a carry folder ($C, default
# gpu-carry) holding bin/ and lib/ of a Release build made on the CPU machine with
#   cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DMEANSHIFT_CUDA=ON -DMEANSHIFT_OPENCL=ON -DMEANSHIFT_BENCH_NATIVE=OFF
# plus tools/device-opencl-env.sh (registers NVIDIA's OpenCL driver). Logs go to $OUT.
set -u
C=${C:-gpu-carry}
export LD_LIBRARY_PATH=$PWD/$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
OUT=${OUT:-/tmp/ms-out}
mkdir -p "$OUT"
B=$C/bin
source $C/tools/device-opencl-env.sh >/dev/null
steps=${*:-smi unit conformance memcheck defaults overhead e2e}
for s in $steps; do
  echo "=== $s ($(date -u +%H:%M:%S))"
  case $s in
    smi) nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader; $B/meanshift backends 2>&1 | grep -A1 '^opencl' ;;
    unit) timeout 200 $B/meanshift_tests -tc='cuda*,opencl*' > "$OUT/unit.txt" 2>&1; tail -3 "$OUT/unit.txt" ;;
    conformance) for b in cuda opencl; do timeout 200 $B/meanshift_conformance --backend=$b > "$OUT/conf_$b.txt" 2>&1; echo "$b: $(grep -E 'test cases' "$OUT/conf_$b.txt")"; done ;;
    memcheck) timeout 150 compute-sanitizer --tool memcheck --leak-check full $B/meanshift_tests -tc='cuda*outliv*,cuda*support*,cuda*retire*,cuda*chunk*' 2>&1 | tail -3 ;;
    defaults)
      for kern in isotropic diagonal; do
        for be in cuda opencl; do
          for p in "" "--preload"; do
            echo "$be $kern ${p:-default}: $(timeout 60 $B/meanshift bench -q --n 1048576 --dims 3 --iterations 1 --kernel $kern -b $be $p 2>&1 | tail -1)"
          done
        done
      done
      timeout 120 $B/bench_cuda throughput 2>&1 | tail -25
      for m in shared perpoint; do
        timeout 150 $B/bench_opencl --n 1048576 --k 3 --model $m --reps 3 --check 32 > "$OUT/bench_opencl_$m.txt" 2>&1
        python3 -c "
import json,sys
rows=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
rows.sort(key=lambda r: r['pairs_per_s_step'])
for r in rows[-4:]: print(sys.argv[2], r['config'], 'step %.3e kernel %.3e' % (r['pairs_per_s_step'], r['pairs_per_s_kernel']))
" "$OUT/bench_opencl_$m.txt" $m
      done ;;
    overhead) for be in cuda opencl; do timeout 90 $B/bench_host_overhead --backend $be --iterations 5; done ;;
    e2e) for be in cuda opencl; do for p in "" "--preload"; do echo "$be ${p:-default} 1e6 x 10: $(timeout 60 $B/meanshift bench -q --n 1000000 --dims 3 --iterations 10 -b $be $p 2>&1 | tail -1)"; done; done ;;
  esac
done
