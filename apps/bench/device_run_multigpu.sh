#!/bin/bash
# On a 2-GPU machine (nvidia-h200-x2), one call: the cuda backend on one and on both GPUs
# in one process, against `mpirun -np 1|2` with one GPU per rank (replicated, domain and ring strategies),
# labels compared with the one-process run. The exact set runs a fixed number of iterations so that its times compare. Needs a carry folder ($C, default gpu-carry) with bin/, lib/,
# tools/device-opencl-env.sh and Debian's Open MPI copied under mpi/usr (/usr/bin/orterun as mpi/usr/bin/mpirun,
# /usr/lib/x86_64-linux-gnu/{openmpi,pmix2}, /usr/share/openmpi; the device machine has no MPI of its own).
set -u
C=$PWD/${C:-gpu-carry}; B=$C/bin
export LD_LIBRARY_PATH=$C/lib
source $C/tools/device-opencl-env.sh >/dev/null
O=${OUT:-/tmp/o}; mkdir -p $O
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader; date -u; nproc
nvidia-smi topo -m 2>&1 | head -4
$B/meanshift backends 2>&1 | grep -A3 "^cuda\|^opencl" | head -12
[ -x $B/meanshift_tests ] && { echo "=== unit"; timeout 150 $B/meanshift_tests -tc='cuda*,opencl*' > $O/unit.txt 2>&1; tail -2 $O/unit.txt; }
echo "=== conformance cuda (all GPUs)"; timeout 200 $B/meanshift_conformance --backend=cuda > $O/conf_cuda.txt 2>&1; grep -E "device|test cases" $O/conf_cuda.txt | head -4
echo "=== multi-GPU exact bench 1M k=3"
for it in 1 3; do for kern in isotropic diagonal; do for d in "--devices 0" "--devices 0,1"; do
  echo "cuda $kern $d it=$it: $(timeout 60 $B/meanshift bench -q --exact --n 1048576 --dims 3 --iterations $it --kernel $kern -b cuda $d | tail -1 | cut -c1-260)"; done; done; done
for it in 1 3; do echo "opencl it=$it: $(timeout 60 $B/meanshift bench -q --exact --n 1048576 --dims 3 --iterations $it -b opencl | tail -1 | cut -c1-260)"; done
timeout 100 $B/bench_cuda throughput 2>&1 | tail -8
echo "=== MPI"
M=$C/mpi/usr
export OPAL_PREFIX=$M PMIX_INSTALL_PREFIX=$M/lib/x86_64-linux-gnu/pmix2 PATH=$M/bin:$PATH
export LD_LIBRARY_PATH=$C/lib:$M/lib/x86_64-linux-gnu/pmix2/lib:$LD_LIBRARY_PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_mca_base_component_show_load_errors=0
export PMIX_PREFIX=$M/lib/x86_64-linux-gnu/pmix2 PMIX_MCA_mca_base_component_path=$M/lib/x86_64-linux-gnu/pmix2/lib/pmix
mpirun --version | head -1
${PY:-/opt/torch/.venv/bin/python3} - <<'PY'
import numpy as np
rng = np.random.default_rng(3)
c = rng.uniform(-12, 12, (5, 2)); lab = rng.integers(0, 5, 1000000)
np.save("/tmp/b2.npy", (c[lab] + rng.normal(0, 1, (1000000, 2))).astype(np.float32))
c3 = rng.uniform(-10, 10, (8, 3)); l3 = rng.integers(0, 8, 1048576)
np.save("/tmp/b3.npy", (c3[l3] + rng.normal(0, 1, (1048576, 3))).astype(np.float32))
PY
run() { local t0=$(date +%s.%N); "$@" > /tmp/run.log 2>&1; local rc=$?; local t1=$(date +%s.%N); echo "rc=$rc wall $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.3f", b-a}') s | $(grep -E '^(backend|time|method|search|strategy|mpi)' /tmp/run.log | sed 's/  */ /g' | tr '\n' '|' | cut -c1-400)"; }
for set in "b3 --exact --seeding all --bandwidth 1 --fixed-iterations 10" "b2 --bandwidth 1"; do
  f=${set%% *}; a=${set#* }
  echo "-- $f: $a"
  echo "one process, --devices 0: $(run $B/meanshift cluster /tmp/$f.npy -o /tmp/$f-one0.csv -b cuda --devices 0 $a)"
  echo "one process, 2 GPUs:     $(run $B/meanshift cluster /tmp/$f.npy -o /tmp/$f-one.csv -b cuda --devices 0,1 $a)"
  cmp -s /tmp/$f-one0.csv /tmp/$f-one.csv && echo "  labels equal" || echo "  labels DIFFER (1 vs 2 GPUs)"
  for np in 1 2; do for s in replicated domain ring; do
    [ "$s" = domain ] && [[ "$a" == *--exact* ]] && continue
    echo "mpirun -np $np $s: $(run timeout 120 mpirun --oversubscribe -np $np $B/meanshift cluster /tmp/$f.npy -o /tmp/$f-$np$s.csv -b cuda --mpi-strategy $s $a)"
    ref=/tmp/$f-one.csv
    cmp -s $ref /tmp/$f-$np$s.csv && echo "  labels = one process ($(basename $ref))" || echo "  labels DIFFER ($(basename $ref))"
  done; done
done
cp /tmp/run.log $O/last_run.log
