#!/bin/bash
# Sets up and runs the whole test suite, as on CI (a fresh 2-core Debian machine, root, no GPU):
#   1. installs the build dependencies (apps/install-deps.sh),
#   2. Release build in build/ with every backend found (CUDA when nvcc is present), then ctest,
#      then the Python package: pip install . into a venv in build-python/, then pytest,
#   3. AddressSanitizer + UBSan build in build-asan/ (-DMEANSHIFT_SANITIZE=ON), then ctest.
# The ASan build leaves CUDA out: nvcc's device code is not instrumented and the build is the
# slowest part; the CUDA host code is compiled and its tests run (as skips without a GPU) in build/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
jobs="$(nproc 2>/dev/null || echo 2)"
start=$SECONDS

"$root/apps/install-deps.sh"

echo "=== Release build (build/) ==="
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
(cd build && ctest --output-on-failure -j "$jobs")
echo "=== Release tests passed ($((SECONDS - start)) s so far) ==="

echo "=== Python package: pip install . in a fresh venv (build-python/), pytest ==="
# The extension is built from scratch by scikit-build-core in a temporary folder (nothing of build/
# is reused) with every backend CMake finds; build/bin/meanshift serves as the reference that the
# tests compare the package's results with (MEANSHIFT_REQUIRE_CLI: fail rather than skip without it).
rm -rf build-python
python3 -m venv build-python/venv
py=build-python/venv/bin/python
"$py" -m pip install -q --disable-pip-version-check numpy scikit-learn pytest
CMAKE_BUILD_PARALLEL_LEVEL="$jobs" "$py" -m pip install -q --disable-pip-version-check .
MEANSHIFT_CLI="$root/build/bin/meanshift" MEANSHIFT_REQUIRE_CLI=1 "$py" -m pytest -q python/tests
echo "=== Python tests passed ($((SECONDS - start)) s so far) ==="

echo "=== AddressSanitizer + UBSan build (build-asan/) ==="
# -O1 -g1: compiles faster than -O2 -g on 2 cores; line tables are enough for sanitizer reports.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
      "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DMEANSHIFT_SANITIZE=ON -DMEANSHIFT_CUDA=OFF
cmake --build build-asan -j "$jobs"
echo "=== Sanitizer build done ($((SECONDS - start)) s so far); its tests: ==="
# ctest's summary stays the last line of the output.
(cd build-asan && ctest --output-on-failure -j "$jobs")
