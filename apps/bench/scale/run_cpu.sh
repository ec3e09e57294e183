#!/bin/bash
# Scale benchmarks on the CPU: each workload through `meanshift` with its default options,
# beside its peer (numpy_meanshift.py; the OpenCV script for photos) in the same call; a markdown table
# on stdout. Data are generated into a temp folder and removed afterwards. Not part of CI/ctest.
#
#   apps/bench/scale/run_cpu.sh [MEANSHIFT_BIN] [driver options]      (default BIN: build/bin/meanshift)
#
# Python: $PYTHON, else build-bench/venv/bin/python if present, else python3; it needs numpy and
# scikit-learn (opencv-python for the photo peer; torch only with --peer torch). Sizes are moderate
# (13.5 minutes on 2 cores shared with other builds); any driver option after the binary overrides
# them (an empty list drops a workload, --no-photos the photos), e.g.
#   run_cpu.sh build/bin/meanshift --embeddings 20000x384 --cloud 100000 --peer-max-cloud 10000
# Options: apps/bench/scale/scale_bench.py --help. Results: docs/performance-scale.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
bin="$root/build/bin/meanshift"
if [[ $# -gt 0 && "$1" != --* ]]; then bin="$1"; shift; fi
[[ -x "$bin" ]] || { echo "run_cpu.sh: no meanshift binary at $bin (build it, or pass its path)" >&2; exit 1; }
py="${PYTHON:-}"
if [[ -z "$py" ]]; then
  if [[ -x "$root/build-bench/venv/bin/python" ]]; then py="$root/build-bench/venv/bin/python"; else py=python3; fi
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/meanshift-scale.XXXXXX")"
trap 'rm -rf "$work"' EXIT
exec nice -n 5 "$py" "$here/scale_bench.py" --meanshift "$bin" --work "$work" --peer numpy \
  --title "Scale benchmarks, CPU" \
  --embeddings 20000x384,10000x768 --peer-max-embeddings 20000 \
  --blobs 20000,1000000 --peer-max-blobs 20000 \
  --cloud 5000,100000 --peer-max-cloud 5000 \
  --photos --tiled 4 \
  --timeout 180 "$@"
