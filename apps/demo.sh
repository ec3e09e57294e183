#!/bin/bash
# One command from a fresh Debian machine to a segmented photograph:
#   1. installs the build dependencies (apps/install-deps.sh; apt-get only if something is missing),
#   2. builds the library and the `meanshift` tool into build/ (Release),
#   3. fetches china.jpg from Debian's python3-sklearn package (apps/fetch-china.sh),
#   4. segments the whole photo (640 x 427) on the fastest usable backend (--backend auto):
#      mean-shift filtering with the truncated kernel and grid search, region fusion, pruning
#      (Comaniciu & Meer 2002; docs/segmentation.md),
#   5. prints where the results are: out/china-segmented.png, out/china-segmented-labels.png and
#      out/china-segmented-filtered.png (asked for with --labels-image and --filtered-output: by
#      default `segment` writes only -o).
# Extra arguments go to `meanshift segment`, e.g. ./apps/demo.sh --hs 4 --min-region 100
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

"$root/apps/install-deps.sh"
jobs="$(nproc 2>/dev/null || echo 2)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >build-configure.log 2>&1 || {
  cat build-configure.log >&2; echo "demo: CMake configuration failed (log above)" >&2; exit 1; }
grep -E "^-- +(backend|sanitizers)" build-configure.log || true
rm -f build-configure.log
echo "demo: building the library and the meanshift tool (-j$jobs)..."
cmake --build build -j "$jobs" --target meanshift_cli
"$root/apps/fetch-china.sh" "$root/data/china.jpg"

mkdir -p out
outputs=(-o out/china-segmented.png --labels-image out/china-segmented-labels.png
         --filtered-output out/china-segmented-filtered.png)
echo "demo: build/bin/meanshift segment data/china.jpg --backend auto ${outputs[*]} $*"
build/bin/meanshift segment data/china.jpg --backend auto "${outputs[@]}" "$@"
echo
echo "demo: results in $root/out/:"
echo "  china-segmented.png         each segment painted with its mean colour"
echo "  china-segmented-labels.png  one false colour per segment"
echo "  china-segmented-filtered.png  the mean-shift filtered image (each pixel: its mode's colour)"
echo "demo: more: build/bin/meanshift --help, docs/cli.md"
