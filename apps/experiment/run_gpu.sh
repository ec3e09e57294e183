#!/usr/bin/env bash
# The GPU measurements of docs/experiments.md, in one call on the device machine (device time is
# scarce: every sweep is capped by `timeout`, the most important first).
# Usage: apps/experiment/run_gpu.sh BUILD_DIR OUT_DIR [quick]
#   quick: tiny sizes, to check the script here (OpenCL on PoCL) before spending device time.
set -uo pipefail
B="$1/bin/meanshift-experiment"
O="$2"
Q="${3:-}"
mkdir -p "$O"
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
if [ -z "$Q" ]; then
  NBIG=1000000; NS="100,1000,10000,100000"; NSTEP=1:1024:1; NFL=16384; NPRE=4096,16384,65536,262144
  NMOD=4096,16384,65536; NERR=128,256,512,1024,2048,4096; NN=1024:16384:1024,1000,3000,5000,10000,20000,50000,100000
  NTHR=20000
else
  NBIG=3000; NS="100,1000"; NSTEP=1:64:1; NFL=512; NPRE=256,1024; NMOD=256,1024; NERR=64,128; NN=256,1000; NTHR=1000
fi
GPUS="${GPU_BACKENDS:-cuda,opencl}"
BUDGET="${BUDGET:-210}"  # seconds for all sweeps together; later sweeps are skipped past it
run() {  # run NAME TIMEOUT ARGS...: one sweep, its stderr kept, a time limit so one slow sweep cannot eat the budget
  local name=$1 lim=$2; shift 2
  if [ "$SECONDS" -ge "$BUDGET" ]; then echo "$name: skipped (budget of $BUDGET s spent)" | tee -a "$O/gpu_times.txt"; return; fi
  local t0
  t0=$(date +%s%N)
  timeout "$lim" "$B" "$@" -o "$O/$name.csv" 2>"$O/$name.log"
  echo "$name: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$O/gpu_times.txt"
}
{
  date -u; uname -srm; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null
  lscpu | grep -E 'Model name|^CPU\(s\)'; echo "OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
  "$B" --help >/dev/null && echo "backends: $GPUS"
} >"$O/gpu_env.txt" 2>&1

# (5) make_blobs table: GPUs up to 1e6 points, CPU backends where they finish in time
run gpu_blobs 45 blobs --backends "serial,openmp,${GPUS}" --n "$NS" -r 3 --serial-max-n 10000
run gpu_blobs_1e6 30 blobs --backends "$GPUS" --n "$NBIG" -r 1
# (2) load-factor sweep (Fig. 2), (1) step-1 sweep (Fig. 3)
run gpu_fload 25 fload --backend "$GPUS" --n "$NFL" --f-vppu 1,4,16,64 --f-load 1:8:1,12,16,24,32,48,63,64 -r 3 --min-seconds 0.002
run gpu_n_step1 15 n --backend "$GPUS" --n "$NSTEP" -r 3 --min-seconds 0.001
# (3) preloading off/on and tile width (Fig. 1), default topology and an Alg. 7 topology with vPPUs of 8
run gpu_preload 20 preload --backend "$GPUS" --n "$NPRE" --preload-sizes 0,32,64,128,256,512 -r 3 --min-seconds 0.002
run gpu_preload_vppu 10 preload --backend "$GPUS" --n "$NPRE" --f-vppu 8 --f-load 8 --preload-sizes 0,64,256 -r 3 --min-seconds 0.002
# (4) E_CPU-GPU vs the float64 serial oracle
for g in ${GPUS//,/ }; do run gpu_error_$g 15 error --backend "$g" --n "$NERR" --serial-max-n 4096 -r 1; done
# cost-model grid and time vs n
run gpu_model 25 model --backend "$GPUS" --n "$NMOD" --mode-fractions 0.05,0.25,1 --f-vppu 1,4,32 --f-load 1,2,4,32 -r 3 --min-seconds 0.002
run gpu_n 10 n --backend "$GPUS" --n "$NN" -r 3 --min-seconds 0.002
# OpenMP thread scaling on the device machine's CPU
run gpu_threads 15 threads --threads-list 1,2,4,8,16 --n "$NTHR" -r 3 --serial-max-n 0
for f in gpu_model gpu_fload gpu_n gpu_n_step1; do
  "$B" fit "$O/$f.csv" --sweeps model,fload,n --predictions "$O/${f}_pred.csv" >"$O/${f}_fit.txt" 2>&1
done
date -u >>"$O/gpu_env.txt"
