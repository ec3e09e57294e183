#!/bin/sh
# `mpirun -np R meanshift cluster` against the single-process tool (docs/mpi.md).
#   cli_test.sh MPIEXEC MEANSHIFT NP WORKDIR
# 1. labels of R ranks == labels of one process with every point its own seed (--seeding all);
# 2. a NaN in the input ends every rank with a non-zero exit (not a timeout), rank 0 naming the line.
set -u
mpiexec="$1"; tool="$2"; np="$3"; work="$4"
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
awk 'BEGIN { srand(7); split("0 8 2 -7", cx, " "); split("0 1 9 6", cy, " ");
             for (i = 0; i < 601; i++) { c = i % 4 + 1;
               printf "%.5f,%.5f\n", cx[c] + (rand() - 0.5) * 2, cy[c] + (rand() - 0.5) * 2 } }' > blobs.csv
"$tool" cluster blobs.csv -o one.csv --bandwidth 1 --exact --seeding all -q > /dev/null || { echo "single run failed"; exit 1; }
timeout 60 "$mpiexec" --oversubscribe -np "$np" "$tool" cluster blobs.csv -o dist.csv --bandwidth 1 --exact --threads 1 \
  || { echo "mpirun cluster failed: $?"; exit 1; }
cmp one.csv dist.csv || { echo "labels differ from one process's"; exit 1; }
[ -f dist.centres.csv ] || { echo "no centres file"; exit 1; }

# 1a. an NPY input with a numeric bandwidth: every rank reads its own rows (same labels).
python3 - blobs.csv blobs.npy <<'PY' || { echo "could not write blobs.npy"; exit 1; }
import struct, sys
rows = [[float(v) for v in line.split(",")] for line in open(sys.argv[1]) if line.strip()]
head = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (len(rows), len(rows[0]))
head += " " * (63 - (10 + len(head)) % 64) + "\n"
with open(sys.argv[2], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
    for r in rows: f.write(struct.pack("<%df" % len(r), *r))
PY
timeout 60 "$mpiexec" --oversubscribe -np "$np" "$tool" cluster blobs.npy -o dist-npy.csv --bandwidth 1 --exact --threads 1 \
  > dist-npy.log || { cat dist-npy.log; echo "mpirun cluster blobs.npy failed"; exit 1; }
grep -q "each rank read its own rows" dist-npy.log || { cat dist-npy.log; echo "the ranks did not read slices"; exit 1; }
cmp one.csv dist-npy.csv || { echo "NPY slices: labels differ from one process's"; exit 1; }

# 1b. the truncated kernel (cutoff 3) by domain decomposition: the same labels as one process.
"$tool" cluster blobs.csv -o one-t.csv --bandwidth 1 --cutoff 3 --seeding all --data-bin-size off -q > /dev/null \
  || { echo "single truncated run failed"; exit 1; }
timeout 60 "$mpiexec" --oversubscribe -np "$np" "$tool" cluster blobs.csv -o dist-t.csv --bandwidth 1 --cutoff 3 \
  --seeding all --mpi-strategy domain --threads 1 > dist-t.log || { echo "mpirun cluster --mpi-strategy domain failed: $?"; exit 1; }
grep -q "domain decomposition" dist-t.log || { cat dist-t.log; echo "the domain decomposition did not run"; exit 1; }
cmp one-t.csv dist-t.csv || { echo "domain decomposition: labels differ from one process's"; exit 1; }
timeout 60 "$mpiexec" --oversubscribe -np "$np" "$tool" cluster blobs.csv -o dist-r.csv --bandwidth 1 --cutoff 3 \
  --seeding all --mpi-strategy ring --threads 1 > dist-r.log || { cat dist-r.log; echo "mpirun cluster --mpi-strategy ring failed"; exit 1; }
grep -q "method      ring" dist-r.log || { cat dist-r.log; echo "the ring did not run"; exit 1; }
cmp one-t.csv dist-r.csv || { echo "ring: labels differ from one process's"; exit 1; }
# the ring with opencl ranks (their partial sums from the OpenCL kernels), where OpenCL is usable:
# one opencl process's labels, exact and truncated.
if "$tool" backends | grep -q '^opencl *usable'; then
  for k in "--exact" "--cutoff 3"; do
    "$tool" cluster blobs.csv -o one-ocl.csv -b opencl --bandwidth 1 $k --seeding all --data-bin-size off -q > /dev/null \
      || { echo "single opencl run ($k) failed"; exit 1; }
    timeout 60 "$mpiexec" --oversubscribe -np "$np" "$tool" cluster blobs.csv -o dist-ocl.csv -b opencl --bandwidth 1 $k \
      --seeding all --mpi-strategy ring > dist-ocl.log || { cat dist-ocl.log; echo "mpirun ring -b opencl ($k) failed"; exit 1; }
    grep -q "method      ring" dist-ocl.log || { cat dist-ocl.log; echo "the ring did not run (opencl, $k)"; exit 1; }
    cmp one-ocl.csv dist-ocl.csv || { echo "ring -b opencl ($k): labels differ from one process's"; exit 1; }
  done
else
  echo "opencl not usable: the ring with opencl ranks is not run"
fi

# 1c. per-point bandwidths (the adaptive rule, computed by rank 0 on all the data, rows scattered
#     with the points): both strategies give one process's labels.
"$tool" cluster blobs.csv -o one-a.csv --bandwidth adaptive --seeding all --data-bin-size off -q > /dev/null \
  || { echo "single adaptive run failed"; exit 1; }
for s in replicated domain; do
  timeout 60 "$mpiexec" --oversubscribe -np "$np" "$tool" cluster blobs.csv -o dist-a-$s.csv --bandwidth adaptive \
    --seeding all --mpi-strategy $s --threads 1 > /dev/null || { echo "mpirun cluster --bandwidth adaptive ($s) failed"; exit 1; }
  cmp one-a.csv dist-a-$s.csv || { echo "per-point bandwidths ($s): labels differ from one process's"; exit 1; }
done

# 1d. bin seeding, data binning, boundary refinement: one process's, for both strategies; --no-refine
#     and --data-bin-size pass through. An explicit bin size: with the default options one process
#     computes 601 points exactly (the driver's exact budget), which the MPI layer does not (yet).
"$tool" cluster blobs.csv -o one-b.csv --bandwidth 1 --bin-size 0.45 -q > /dev/null || { echo "single bin-seeding run failed"; exit 1; }
"$tool" cluster blobs.csv -o one-bn.csv --bandwidth 1 --bin-size 0.45 --no-refine --data-bin-size off -q > /dev/null \
  || { echo "single bin-seeding run (--no-refine) failed"; exit 1; }
for s in replicated domain; do
  timeout 60 "$mpiexec" --oversubscribe -np "$np" "$tool" cluster blobs.csv -o dist-b-$s.csv --bandwidth 1 --bin-size 0.45 \
    --mpi-strategy $s --threads 1 > dist-b-$s.log || { echo "mpirun cluster (bins, $s) failed"; exit 1; }
  grep -q "seeding     bins" dist-b-$s.log || { cat dist-b-$s.log; echo "bin seeding did not run"; exit 1; }
  cmp one-b.csv dist-b-$s.csv || { echo "bin seeding ($s): labels differ from one process's"; exit 1; }
  timeout 60 "$mpiexec" --oversubscribe -np "$np" "$tool" cluster blobs.csv -o dist-bn-$s.csv --bandwidth 1 --bin-size 0.45 \
    --mpi-strategy $s --threads 1 --no-refine --data-bin-size off > dist-bn-$s.log \
    || { echo "mpirun cluster (--no-refine, $s) failed"; exit 1; }
  grep -q "no boundary refinement" dist-bn-$s.log || { cat dist-bn-$s.log; echo "--no-refine not passed on"; exit 1; }
  cmp one-bn.csv dist-bn-$s.csv || { echo "bin seeding without refinement ($s): labels differ from one process's"; exit 1; }
done

# 3. rank 0 cannot write its summary (its stdout is /dev/full; mpirun's own forwarding would hide
#    that): a non-zero exit and no output, as one process (the summary goes out before publishing).
if [ -w /dev/full ]; then
  timeout 60 "$mpiexec" --oversubscribe -np "$np" sh -c 'exec "$@" > /dev/full' sh "$tool" cluster blobs.csv \
    -o full.csv --modes full-modes.csv --bandwidth 1 --threads 1 2> full.log
  rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || { cat full.log; echo "stdout on /dev/full: exit $rc"; exit 1; }
  grep -q "no output file was created or changed" full.log || { cat full.log; echo "stdout on /dev/full: no message"; exit 1; }
  for f in full.csv full.centres.csv full-modes.csv; do
    [ ! -e "$f" ] || { echo "stdout on /dev/full: $f was written"; exit 1; }
  done
fi

(head -3 blobs.csv; echo "nan,1"; tail -3 blobs.csv) > bad.csv
timeout 60 "$mpiexec" --oversubscribe -np "$np" "$tool" cluster bad.csv -o bad-out.csv --bandwidth 1 > bad.log 2>&1
rc=$?
cat bad.log
echo "mpirun exit code $rc"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || { echo "expected a non-zero exit, not a hang"; exit 1; }
grep -q "rank 0: bad.csv: line 4" bad.log || { echo "rank 0's message missing"; exit 1; }
[ ! -e bad-out.csv ] || { echo "an output was written"; exit 1; }
echo "cli under mpirun -np $np: passed"
