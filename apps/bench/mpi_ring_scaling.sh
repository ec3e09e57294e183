#!/bin/bash
# The ring strategy against the replicated one on CPU ranks (openmp, one thread per rank),
# strong (400,000 2-D points), weak (200,000 per rank) and exact (60,000 3-D points); labels
# compared with one process. Run on the GPU machine's 16-core host with gpu-carry/ (device tool).
# Sizes, ranks and the binary can be set (defaults: the 16-core run above), e.g. a small run on the
# 2-core development machine:
#   M=build-mpi2/bin/meanshift STRONG=100000 WEAK=50000 EXACT=12000 NPS="1 2 3" EXACT_NPS="1 2" \
#       apps/bench/mpi_ring_scaling.sh
# Extra mpirun arguments in MPIRUN_ARGS (e.g. "-x LD_LIBRARY_PATH" for a copied binary).
if [ -f gpu-carry/tools/mpi-env.sh ] && [ -z "$M" ]; then source gpu-carry/tools/mpi-env.sh; fi
export PMIX_MCA_pcompress_base_silence_warning=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=${M:-gpu-carry/bin/meanshift}
STRONG=${STRONG:-400000} WEAK=${WEAK:-200000} EXACT=${EXACT:-60000}
NPS=${NPS:-1 2 3 4} EXACT_NPS=${EXACT_NPS:-1 2 4}
T=${TMPDIR:-/tmp}/mpi_ring_scaling.$$; mkdir -p "$T"; trap 'rm -rf "$T"' EXIT
STRONG=$STRONG WEAK=$WEAK EXACT=$EXACT NPS="$NPS" T="$T" python3 - <<'PY'
import os, random
T = os.environ["T"]
def blobs(n, path, seed=11):
    random.seed(seed)
    with open(path, "w") as f:
        for i in range(n):
            b = i // 5000
            f.write("%.5f,%.5f\n" % (8 * b + random.gauss(0, 1), 5 * (b % 3) + random.gauss(0, 1)))
blobs(int(os.environ["STRONG"]), T + "/strong.csv")
for r in map(int, os.environ["NPS"].split()): blobs(int(os.environ["WEAK"]) * r, T + "/weak%d.csv" % r)
random.seed(4)
with open(T + "/ex.csv", "w") as f:
    for i in range(int(os.environ["EXACT"])):
        c = i % 6; f.write("%.5f,%.5f,%.5f\n" % (6 * c + random.gauss(0, 1), 3 * (c % 2) + random.gauss(0, 1), random.gauss(0, 1)))
PY
run() { # label file np strategy extra...
  local label=$1 f=$2 np=$3 s=$4; shift 4
  local line=$(mpirun --oversubscribe $MPIRUN_ARGS -np $np $M cluster $f -o $T/d.csv -b openmp --threads 1 --seeding all "$@" --mpi-strategy $s | grep -E '^(iterations|time)' | sed 's/  */ /g' | tr '\n' '|')
  cmp -s $T/one.csv $T/d.csv && line="$line labels = one process" || line="$line labels DIFFER"
  echo "$label np=$np $s: $line" | sed -E 's/points moved [0-9.]*, //'
}
$M cluster $T/strong.csv -o $T/one.csv -b openmp --threads 1 --seeding all --bandwidth 1 --cutoff 3 --data-bin-size off -q | grep -E "^time"
for np in $NPS; do for s in replicated ring; do run strong $T/strong.csv $np $s --bandwidth 1 --cutoff 3; done; done
for np in $NPS; do $M cluster $T/weak$np.csv -o $T/one.csv -b openmp --threads 1 --seeding all --bandwidth 1 --cutoff 3 --data-bin-size off -q >/dev/null; for s in replicated ring; do run weak $T/weak$np.csv $np $s --bandwidth 1 --cutoff 3; done; done
$M cluster $T/ex.csv -o $T/one.csv -b openmp --threads 1 --bandwidth 1 --exact | grep -E "^time"
for np in $EXACT_NPS; do for s in replicated ring; do run exact-${EXACT}x3 $T/ex.csv $np $s --bandwidth 1 --exact; done; done
