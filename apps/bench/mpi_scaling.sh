#!/bin/bash
# Strong and weak scaling of `mpirun -np R meanshift cluster` (docs/mpi.md), both
# strategies, against one process, on one machine (R ranks = R cores, one openmp thread each).
#   apps/bench/mpi_scaling.sh [build-dir] [ranks...]      e.g. apps/bench/mpi_scaling.sh build 1 2
# Data: 2-D Gaussian blobs (sigma 1) in a row along x, 5,000 points each; bandwidth 1, cutoff 3,
# every point its own seed (--seeding all, no data binning); then the defaults (bin seeding, data
# binning, boundary refinement) against one process's defaults.
# Strong: 100,000 points for every R (N_STRONG). Weak: 50,000 points per rank (N_WEAK).
set -eu
build="${1:-build}"; shift || true
ranks=("${@:-1 2}"); ranks=(${ranks[@]})
tool="$build/bin/meanshift"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
blobs() {  # $1 = points, $2 = file
  awk -v n="$1" 'BEGIN { srand(11); for (i = 0; i < n; i++) { b = int(i / 5000);
      r = sqrt(-2 * log(1 - rand())); t = 6.283185307 * rand();
      printf "%.5f,%.5f\n", 8 * b + r * cos(t), 5 * (b % 3) + r * sin(t) } }' > "$2"
}
common=(-b "${BACKEND:-openmp}" --bandwidth 1 --cutoff 3 --threads 1 -q)  # openmp: CPU ranks even where auto would pick a GPU
run() {  # label, file, np, strategy
  local t0 t1 line
  if [ "$3" = 0 ]; then
    t0=$(date +%s.%N); "$tool" cluster "$2" -o "$work/one.csv" "${common[@]}" --seeding all --data-bin-size off >/dev/null
    t1=$(date +%s.%N); line="one process"
  else
    t0=$(date +%s.%N)
    line=$(mpirun --oversubscribe -np "$3" "$tool" cluster "$2" -o "$work/d$3.csv" "${common[@]}" --seeding all --mpi-strategy "$4" \
           | grep -E '^(method|time)' | sed 's/  */ /g' | tr '\n' '|')
    t1=$(date +%s.%N)
    cmp -s "$work/one.csv" "$work/d$3.csv" && line="$line labels = one process" || line="$line labels DIFFER"
  fi
  printf '%-8s np=%s %-10s wall %6.2f s  %s\n' "$1" "$3" "$4" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$line"
}
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
blobs "${N_STRONG:-100000}" "$work/strong.csv"
run strong "$work/strong.csv" 0 -
for np in "${ranks[@]}"; do for s in replicated domain ring; do run strong "$work/strong.csv" "$np" "$s"; done; done
# Bin seeding (the default, with data binning and boundary refinement): one process's default against
# mpirun's, both strategies; labels that differ are counted. "bins" on the separated blobs above,
# "touch" on 20,000 points in 6 touching blobs (sigma 2, centres in [-10, 10]^2: ~260 boundary bins).
awk 'BEGIN { srand(7); for (c = 0; c < 6; c++) { cx[c] = -10 + 20 * rand(); cy[c] = -10 + 20 * rand() }
             for (i = 0; i < 20000; i++) { c = i % 6; r = 2 * sqrt(-2 * log(1 - rand())); t = 6.283185307 * rand();
             printf "%.5f,%.5f\n", cx[c] + r * cos(t), cy[c] + r * sin(t) } }' > "$work/touch.csv"
for set in bins:strong touch:touch; do
  label=${set%%:*}; file="$work/${set#*:}.csv"
  t0=$(date +%s.%N); "$tool" cluster "$file" -o "$work/one-$label.csv" "${common[@]}" >/dev/null
  t1=$(date +%s.%N); printf '%-8s np=0 %-10s wall %6.2f s  one process\n' "$label" - "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
  for np in "${ranks[@]}"; do for s in replicated domain; do
    t0=$(date +%s.%N)
    line=$(mpirun --oversubscribe -np "$np" "$tool" cluster "$file" -o "$work/$label$np.csv" "${common[@]}" --mpi-strategy "$s" \
           | grep -E '^(method|time|seeding)' | sed 's/  */ /g' | tr '\n' '|')
    t1=$(date +%s.%N)
    differ=$(paste -d' ' "$work/one-$label.csv" "$work/$label$np.csv" | awk '$1 != $2' | wc -l)
    [ "$differ" = 0 ] && line="$line labels = one process" || line="$line $differ labels DIFFER"
    printf '%-8s np=%s %-10s wall %6.2f s  %s\n' "$label" "$np" "$s" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$line"
  done; done
done
for np in "${ranks[@]}"; do
  blobs $((${N_WEAK:-50000} * np)) "$work/weak$np.csv"
  run weak "$work/weak$np.csv" 0 -
  for s in replicated domain ring; do run weak "$work/weak$np.csv" "$np" "$s"; done
done
