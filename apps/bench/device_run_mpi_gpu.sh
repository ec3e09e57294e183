#!/bin/bash
# On one GPU machine (device tool): MPI ranks with the cuda backend (relocated Open MPI in
# gpu-carry/mpi/usr, binaries in gpu-carry/{bin,lib}). With one GPU both ranks share device 0 (the
# placement rule gives local rank mod device count): a functional check of GPU ranks (replicated,
# domain and ring strategies; the ring's partial sums come from Binding::accumulate on the GPU),
# labels compared with one process; not a scaling measurement.
set -u
C=$PWD/gpu-carry; B=$C/bin
source $C/tools/mpi-env.sh
PY=${PY:-/opt/torch/.venv/bin/python3}
$PY - <<'PY'
import numpy as np
rng = np.random.default_rng(3)
c = rng.uniform(-12, 12, (5, 2)); lab = rng.integers(0, 5, 1000000)
np.save("/tmp/b2.npy", (c[lab] + rng.normal(0, 1, (1000000, 2))).astype(np.float32))
c3 = rng.uniform(-10, 10, (8, 3)); l3 = rng.integers(0, 8, 65536)
np.save("/tmp/b3.npy", (c3[l3] + rng.normal(0, 1, (65536, 3))).astype(np.float32))
PY
run() { local t0=$(date +%s.%N); "$@" > /tmp/run.log 2>&1; local rc=$?; local t1=$(date +%s.%N); echo "rc=$rc wall $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.3f", b-a}') s | $(grep -E '^(backend|time|strategy|mpi|clusters)' /tmp/run.log | sed 's/  */ /g' | tr '\n' '|' | cut -c1-300)"; }
for set in "b3 --exact --seeding all --bandwidth 1" "b2 --bandwidth 1"; do
  f=${set%% *}; a=${set#* }
  echo "-- $f: $a"
  echo "one process: $(run $B/meanshift cluster /tmp/$f.npy -o /tmp/$f-one.csv -b cuda $a)"
  for np in 1 2; do for s in replicated domain ring; do
    [ "$s" = domain ] && [[ "$a" == *--exact* ]] && continue
    echo "mpirun -np $np $s: $(run timeout 120 mpirun --oversubscribe -np $np $B/meanshift cluster /tmp/$f.npy -o /tmp/$f-$np$s.csv -b cuda --mpi-strategy $s $a)"
    ref=/tmp/$f-one.csv
    cmp -s $ref /tmp/$f-$np$s.csv && echo "  labels = one process ($(basename $ref))" || echo "  labels DIFFER from one process ($(basename $ref))"
  done; done
done
tail -5 /tmp/run.log
