#!/bin/bash
# Installs the Debian packages needed to build, test and demo meanshift-skeleton.
# Runs apt-get only when something is missing (so it is quick on a prepared machine); needs root
# then (no sudo is used: run it as root, or install the packages listed below yourself).
set -euo pipefail

packages=(
  cmake make g++ pkg-config
  libeigen3-dev doctest-dev libcli11-dev nlohmann-json3-dev
  libstb-dev libcsv-dev libnanoflann-dev
  # The CLI's fast image codecs (PNG read/write, JPEG read); without them stb_image is used.
  libspng-dev libjpeg62-turbo-dev zlib1g-dev
  ocl-icd-opencl-dev opencl-clhpp-headers opencl-c-headers pocl-opencl-icd
  # The Python package (pip install . in a venv; .ci/test.sh): venv + ensurepip, Python.h.
  python3-venv python3-dev
  # The MPI layer (docs/mpi.md; CMake MEANSHIFT_MPI=AUTO finds it) and mpirun for its tests.
  libopenmpi-dev openmpi-bin
  # Georeferenced rasters (docs/raster.md; CMake MEANSHIFT_GDAL=AUTO finds it).
  libgdal-dev
)
# Other helpers' extra packages (benchmarks, plots) can be listed in this optional file.
extra="$(dirname "$0")/extra-packages.txt"
if [[ -f "$extra" ]]; then
  while read -r p; do [[ -n "$p" && "$p" != \#* ]] && packages+=("$p"); done < "$extra"
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run this script as root, or: apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
