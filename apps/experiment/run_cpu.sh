#!/usr/bin/env bash
# Reproduces the CPU measurements of docs/experiments.md.
# Usage: apps/experiment/run_cpu.sh BUILD_DIR OUT_DIR   (then plot.py OUT_DIR/*.csv)
set -euo pipefail
B="$1/bin/meanshift-experiment"
O="$2"
mkdir -p "$O"
# Passive waiting: on a shared 2-core machine spinning OpenMP barriers lose the core to other jobs
# (docs/experiments.md shows the difference).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
{
  date -u
  uname -srm
  lscpu | grep -E 'Model name|^CPU\(s\)|Flags' | cut -c1-120
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
} >"$O/cpu_env.txt"

# (1) time vs n, multiples of 64 and non-powers of two; step-1 sweep (Fig. 3 analogue) on one thread
"$B" n --backend serial,openmp --n 64:2048:64,1000,3000,5000 -r 5 -o "$O/cpu_n.csv"
"$B" n --backend openmp --threads 1 --cpu-clock --n 1:512:1 -r 3 --min-seconds 0.005 -o "$O/cpu_n_step1.csv"
# (2) time vs f_load for several f_vppu (Fig. 2), one thread so the SIMD lanes are the only PUs
"$B" fload --backend openmp --threads 1 --cpu-clock --n 4096 --f-vppu 1,2,4,8,16 --f-load 1:16:1 -r 3 \
  -o "$O/cpu_fload.csv"
# cost-model grid: both kernels, serial and openmp (2 threads, wall clock)
"$B" model --backend serial,openmp --n 256,1024,4096,8192 --mode-fractions 0.1,0.5,1 --f-vppu 1,4,16 \
  --f-load 1,2,3,4,16 -r 5 -o "$O/cpu_model.csv" 2>"$O/cpu_model.log"
"$B" model --backend serial,openmp --kernel perpoint --n 256,1024,4096 --mode-fractions 0.1,1 --f-vppu 1,4,16 \
  --f-load 1,4,16 -r 5 -o "$O/cpu_model_perpoint.csv" 2>"$O/cpu_model_perpoint.log"
# dimension sweep: the loop term is linear in 5k+λ
for k in 2 6 12; do
  "$B" model --backend serial,openmp --k $k --n 1024,4096 --mode-fractions 0.25,1 --f-vppu 1,4 --f-load 1,4 -r 5 \
    -o "$O/cpu_model_k$k.csv" 2>/dev/null
done
# (4) E_CPU-GPU (eq. 7-8): openmp (float32) vs the float64 serial oracle
"$B" error --backend openmp --n 128,256,512,1024,2048,4096 --serial-max-n 4096 -r 1 -o "$O/cpu_error.csv"
# (5) the other papers' tables: thread scaling, make_blobs with 10 fixed iterations, speedup over serial
"$B" threads --threads-list 1,2 --n 1000,10000 -r 3 --serial-max-n 10000 -o "$O/cpu_threads.csv"
OMP_WAIT_POLICY=active "$B" threads --threads-list 1,2 --n 1000,10000 -r 3 --serial-max-n 0 \
  -o "$O/cpu_threads_active.csv"
"$B" blobs --backends serial,openmp --n 100,1000,10000,100000 -r 3 --serial-max-n 10000 -o "$O/cpu_blobs.csv"

# OpenCL on this CPU (PoCL), when built: preloading into "local" memory that a CPU does not have
# (paper 001 skipped this experiment on its CPU) and a short load-factor sweep
if "$B" n --backend opencl --n 64 -r 1 -o /dev/null 2>/dev/null; then
  "$B" preload --backend opencl --n 1024,4096 --preload-sizes 0,64,256 -r 3 -o "$O/cpu_preload_pocl.csv"
  "$B" fload --backend opencl --n 2048 --f-vppu 1,4,16,64 --f-load 1,2,4,8,16,32,64 -r 3 -o "$O/cpu_fload_pocl.csv"
fi

# fits
"$B" fit "$O/cpu_model.csv" "$O/cpu_model_perpoint.csv" "$O"/cpu_model_k*.csv --predictions "$O/cpu_model_pred.csv" \
  >"$O/cpu_fit.txt" || true
"$B" fit "$O/cpu_fload.csv" --sweeps fload --predictions "$O/cpu_fload_pred.csv" >"$O/cpu_fload_fit.txt" || true
"$B" fit "$O/cpu_n.csv" --sweeps n --predictions "$O/cpu_n_pred.csv" >"$O/cpu_n_fit.txt" || true
"$B" fit "$O/cpu_n_step1.csv" --sweeps n --predictions "$O/cpu_n_step1_pred.csv" >"$O/cpu_n_step1_fit.txt" || true
[ -f "$O/cpu_fload_pocl.csv" ] &&
  "$B" fit "$O/cpu_fload_pocl.csv" --sweeps fload --predictions "$O/cpu_fload_pocl_pred.csv" >"$O/cpu_fload_pocl_fit.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$O/cpu_env.txt"
date -u >>"$O/cpu_env.txt"
