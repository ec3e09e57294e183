#!/bin/bash
# Full-resolution segmentation benchmark against OpenCV, in the same run on the same machine:
#   meanshift segment IMAGE (defaults, --backend openmp unless given) vs
#   apps/bench/peers/opencv_segment.py IMAGE (cv2.pyrMeanShiftFiltering(img, 8, 8), one thread),
# both best of 3 runs, one image after the other. The load average before each image is printed:
# the 2-core development VM is shared, and a busy neighbour inflates both tools' times.
# The photos china.jpg and flower.jpg (640 x 427) come from Debian's python3-sklearn package
# (apt-get download + dpkg -x, nothing installed; as apps/fetch-china.sh). OpenCV comes from
# Debian's python3-opencv (apt-get install -y python3-opencv; only for this benchmark), or $PYTHON's cv2.
# The photo set beside the peer, process against process: apps/bench/bench_segment_photos.py.
# Usage: apps/bench/bench_segment.sh [BUILD_DIR] [-- extra `meanshift segment` args]
#   BUILD_DIR default build/; results and images go to out/bench-segment/.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"; shift || true
[[ "${1:-}" == "--" ]] && shift
extra=("$@")
ms="$build/bin/meanshift"
[[ -x "$ms" ]] || { echo "bench_segment: $ms not built (cmake --build $build --target meanshift_cli)" >&2; exit 1; }
out="$root/out/bench-segment"
data="$root/data"
mkdir -p "$out" "$data"

# The photos, from the package (china.jpg through fetch-china.sh; flower.jpg from the same .deb).
"$root/apps/fetch-china.sh" "$data/china.jpg" >/dev/null
if [[ ! -s "$data/flower.jpg" ]]; then
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT; chmod 755 "$tmp"
  (cd "$tmp" && apt-get download python3-sklearn >/dev/null 2>&1 && dpkg -x python3-sklearn_*.deb x) ||
    { echo "bench_segment: apt-get download python3-sklearn failed" >&2; exit 1; }
  cp "$(find "$tmp/x" -name flower.jpg -print -quit)" "$data/flower.jpg"
fi
py="${PYTHON:-/usr/bin/python3}"
$py -c "import cv2, scipy" 2>/dev/null || {
  echo "bench_segment: needs Debian's python3-opencv and python3-scipy (apt-get install -y python3-opencv python3-scipy)" >&2; exit 1; }

backend=(--backend openmp)
for a in "${extra[@]}"; do [[ "$a" == --backend ]] && backend=(); done
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1); $(date -u +%F); commit $(git -C "$root" rev-parse --short HEAD)"
echo "ours: $ms segment IMAGE ${backend[*]} ${extra[*]}"
printf "%-11s %-9s %10s %10s %10s %10s  %s\n" image tool "mean shift" "all" segments iterations search
repeat=3
for img in china flower; do
  echo "load average before $img: $(cut -d' ' -f1-3 /proc/loadavg)"
  log="$out/$img.txt"
  ms_s=; all_s=
  for ((r = 0; r < repeat; ++r)); do
    "$ms" segment "$data/$img.jpg" "${backend[@]}" --quiet -o "$out/$img-segmented.png" "${extra[@]}" >"$log"
    t=$(sed -n 's/^time *\([0-9.]*\) s mean shift.*/\1/p' "$log")
    a=$(sed -n 's/.*, \([0-9.]*\) s in all.*/\1/p' "$log")
    ms_s=$(awk -v x="$t" -v y="${ms_s:-inf}" 'BEGIN { print (y == "inf" || x + 0 < y + 0) ? x : y }')
    all_s=$(awk -v x="$a" -v y="${all_s:-inf}" 'BEGIN { print (y == "inf" || x + 0 < y + 0) ? x : y }')
  done
  seg=$(sed -n 's/^segments *\([0-9]*\).*/\1/p' "$log")
  it=$(sed -n 's/^iterations *\([0-9]*\).*/\1/p' "$log")
  search=$(sed -n 's/^search *//p' "$log")
  printf "%-11s %-9s %10s %10s %10s %10s  %s\n" "$img.jpg" meanshift "$ms_s" "$all_s" "$seg" "$it" "$search"
  read -r _ _ _ _ cv_s _ cv_seg _ cv_large _ cv_pipe < <("$py" "$root/apps/bench/peers/opencv_segment.py" "$data/$img.jpg" --repeat "$repeat")
  printf "%-11s %-9s %10s %10s %10s %10s  %s\n" "$img.jpg" opencv "$cv_s" "$cv_s" "$cv_seg" "<= 5" \
    "pyrMeanShiftFiltering(8, 8), 1 thread; imread + filter + imwrite $cv_pipe s; segments = flood fill of equal colours ($cv_large of >= 40 px)"
done
echo "logs and images: $out"
