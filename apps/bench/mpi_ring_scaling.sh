#!/bin/bash
# Issue 15: the ring strategy against the replicated one on CPU ranks (openmp, one thread per rank),
# strong (400,000 2-D points), weak (200,000 per rank) and exact (60,000 3-D points); labels
# compared with one process. Run on the GPU machine's 16-core host with gpu-carry/ (device tool).
source gpu-carry/tools/mpi-env.sh; export PMIX_MCA_pcompress_base_silence_warning=1
M=gpu-carry/bin/meanshift
python3 - <<'PY'
import random
def blobs(n, path, seed=11):
    random.seed(seed)
    with open(path, "w") as f:
        for i in range(n):
            b = i // 5000
            f.write("%.5f,%.5f\n" % (8 * b + random.gauss(0, 1), 5 * (b % 3) + random.gauss(0, 1)))
blobs(400000, "/tmp/strong.csv")
for r in (1, 2, 3, 4): blobs(200000 * r, "/tmp/weak%d.csv" % r)
random.seed(4)
with open("/tmp/ex.csv", "w") as f:
    for i in range(60000):
        c = i % 6; f.write("%.5f,%.5f,%.5f\n" % (6 * c + random.gauss(0, 1), 3 * (c % 2) + random.gauss(0, 1), random.gauss(0, 1)))
PY
run() { # label file np strategy extra...
  local label=$1 f=$2 np=$3 s=$4; shift 4
  local line=$(mpirun --oversubscribe -np $np $M cluster $f -o /tmp/d.csv -b openmp --threads 1 --seeding all "$@" --mpi-strategy $s | grep -E '^(iterations|time)' | sed 's/  */ /g' | tr '\n' '|')
  cmp -s /tmp/one.csv /tmp/d.csv && line="$line labels = one process" || line="$line labels DIFFER"
  echo "$label np=$np $s: $line" | sed -E 's/ \(points moved[^)]*\)//' 
}
$M cluster /tmp/strong.csv -o /tmp/one.csv -b openmp --threads 1 --seeding all --bandwidth 1 --cutoff 3 --data-bin-size off -q | grep -E "^time"
for np in 1 2 3 4; do for s in replicated ring; do run strong /tmp/strong.csv $np $s --bandwidth 1 --cutoff 3; done; done
for np in 1 2 3 4; do $M cluster /tmp/weak$np.csv -o /tmp/one.csv -b openmp --threads 1 --seeding all --bandwidth 1 --cutoff 3 --data-bin-size off -q >/dev/null; for s in replicated ring; do run weak /tmp/weak$np.csv $np $s --bandwidth 1 --cutoff 3; done; done
$M cluster /tmp/ex.csv -o /tmp/one.csv -b openmp --threads 1 --bandwidth 1 --exact | grep -E "^time"
for np in 1 2 4; do for s in replicated ring; do run exact-60000x3 /tmp/ex.csv $np $s --bandwidth 1 --exact; done; done
