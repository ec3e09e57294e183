#!/bin/bash
# Fetches the test photograph china.jpg (427 x 640, the Summer Palace, Beijing) from Debian's
# python3-sklearn package, without installing it: apt-get download + dpkg -x. Inside the package it
# is /usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg.
# Usage: apps/fetch-china.sh [DEST]   (default DEST: data/china.jpg in the repository)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root/data/china.jpg}"
if [[ -s "$dest" ]]; then
  echo "fetch-china: $dest already present"
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"   # apt's sandbox user must be able to write the .deb here
cd "$tmp"
if ! apt-get download python3-sklearn >/dev/null 2>&1; then
  # A fresh machine has no package lists yet.
  if [[ $(id -u) -eq 0 ]]; then apt-get update -q >/dev/null; fi
  apt-get download python3-sklearn >/dev/null 2>&1 || {
    echo "fetch-china: 'apt-get download python3-sklearn' failed (no package lists? run apt-get update as root)" >&2
    exit 1
  }
fi
dpkg -x python3-sklearn_*.deb extracted
src="$(find extracted -name china.jpg -print -quit)"
if [[ -z "$src" ]]; then
  echo "fetch-china: china.jpg not found in the python3-sklearn package" >&2
  exit 1
fi
mkdir -p "$(dirname "$dest")"
cp "$src" "$dest"
echo "fetch-china: $dest"
