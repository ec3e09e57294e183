#!/bin/bash
# Scale benchmarks on the GPU machine: each workload through `meanshift` with its default
# options (backend auto: CUDA there), beside its peer in the same call: torch_meanshift.py (chunked exact
# Gaussian ascent from every point, greedy grouping, on the GPU) for embeddings, clouds and blobs (bin
# seeds), opencv_segment.py for the photos when cv2 is there. A markdown table on stdout and, when $OUT
# is set (the device tool's output folder), $OUT/scale.md and $OUT/scale.jsonl.
#
#   apps/bench/scale/run_gpu.sh PATH/TO/meanshift [driver options]
#
# Needs only python3 with numpy, scikit-learn and torch; no network, no data files: everything is
# generated into a temp folder. The photos come from scikit-learn's own copies (sklearn/datasets/images)
# or data/; the tiled image needs a JPEG decoder (Pillow or OpenCV) or decoded copies china.ppm and
# flower.ppm in data/ (make them here with `python3 apps/bench/scale/generate.py decode data` and carry
# `data`), else that row says why it was skipped.
# Defaults fit one call of about 8 minutes (--budget 400: nothing starts after 6.7 minutes; --timeout 90 per
# command). Override any of them after the binary, e.g. --cloud 10000000 --tiled 100 --backend opencl.
# Set MEANSHIFT_COMMIT=<hash> so the table names the commit (the device's copy has no .git).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
[[ $# -ge 1 ]] || { sed -n 2,20p "$0" >&2; exit 2; }
bin="$1"; shift
[[ -x "$bin" ]] || { echo "run_gpu.sh: no meanshift binary at $bin" >&2; exit 1; }
py="${PYTHON:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/meanshift-scale.XXXXXX")"
trap 'rm -rf "$work"' EXIT
report=(); [[ -n "${OUT:-}" ]] && report=(--report "$OUT/scale.md" --jsonl "$OUT/scale.jsonl")
"$py" "$here/scale_bench.py" --meanshift "$bin" --work "$work" --peer torch \
  --title "Scale benchmarks, GPU" --source "$root/data" \
  --embeddings 100000x384,50000x768 --peer-max-embeddings 100000 \
  --blobs 10000000 --peer-max-blobs 10000000 \
  --cloud 100000,1000000 --peer-max-cloud 100000 \
  --photos --tiled 25 \
  --timeout 90 --budget 400 "${report[@]}" "$@"
