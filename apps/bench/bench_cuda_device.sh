#!/bin/bash
# Runs the cuda backend's checks and benchmarks on the GPU machine, from the repository root, with
# the build folder build-cuda (Release, -DMEANSHIFT_CUDA=ON) carried along. Logs go to $OUT.
#   bash apps/bench/bench_cuda_device.sh [steps...]
#   steps: smi test conformance bench ncu memcheck racecheck tiles sweeps ab variants (default: all but ab, variants)
set -u
B=${BUILD:-build-cuda}
export LD_LIBRARY_PATH=$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
OUT=${OUT:-/tmp/ms-out}
mkdir -p "$OUT"
T=$B/bin/meanshift_tests
steps=${*:-smi test conformance bench ncu memcheck racecheck sweeps}
for s in $steps; do
  echo "=== $s ($(date -u +%H:%M:%S))"
  case $s in
    smi) nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv ;;
    test) timeout 150 $T -tc='cuda*' 2>&1 | tail -25 ;;
    conformance) timeout 200 $B/bin/meanshift_conformance --backend=cuda > "$OUT/conformance.txt" 2>&1; grep -E -A12 'ERROR|test cases' "$OUT/conformance.txt" | head -40 ;;
    bench) timeout 200 $B/bin/bench_cuda throughput modes e2e 2>&1 | tee "$OUT/bench.txt" ;;
    ncu) for skip in 0 8; do   # first launch of the isotropic and of the per-point default kernel
           timeout 120 ncu --clock-control none -k regex:fast_kernel --launch-skip $skip -c 1 \
             --metrics sm__cycles_elapsed.avg.per_second,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__instruction_throughput.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio \
             $B/bin/bench_cuda --n 524288 throughput > "$OUT/ncu_$skip.txt" 2>&1
           grep -E "fast_kernel|per_second|pct_of_peak|per_cycle_active" "$OUT/ncu_$skip.txt"
           grep -E "issue_stalled" "$OUT/ncu_$skip.txt" | sort -k3 -g -r | head -6
         done ;;
    ab) timeout 120 $B/bin/bench_cuda throughput 2>&1 | tee "$OUT/ab.txt" ;;
    variants) timeout 240 $B/bin/bench_cuda variants 2>&1 | tee "$OUT/variants.txt" ;;
    tiles) timeout 150 $B/bin/bench_cuda tiles 2>&1 | tee "$OUT/tiles.txt" ;;
    memcheck) timeout 150 compute-sanitizer --tool memcheck --leak-check full $T -tc='*topologies*,*chunk*,*split*,*errors*,*destroyed*,*support*,*retire*' 2>&1 | tail -8 ;;
    racecheck) timeout 120 compute-sanitizer --tool racecheck $T -tc='*topologies*,*tile widths*' 2>&1 | tail -8 ;;
    sweeps) timeout 200 $B/bin/bench_cuda tiles topology 2>&1 | tee "$OUT/sweeps.txt" ;;
  esac
done
