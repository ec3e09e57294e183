#!/bin/bash
# On the GPU machine (device tool): the truncated kernel (range kernels) on cuda and
# opencl. Binaries built here into build-dev and copied to gpu-carry/ (bin, lib, data).
# Conformance + unit tests, compute-sanitizer, full-resolution segmentation (CLI defaults) and
# 1e6 blobs (bench_blobs, defaults) beside a PyTorch peer with the same bin seeding.
source gpu-carry/tools/device-opencl-env.sh >/dev/null; export LD_LIBRARY_PATH=$PWD/gpu-carry/lib; B=gpu-carry/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; git log --oneline -1 2>/dev/null
mode="${1:-all}"
if [[ $mode == all || $mode == tests ]]; then
  for b in cuda opencl; do echo "conformance $b: $(timeout 200 $B/meanshift_conformance --backend=$b 2>&1 | grep 'test cases')"; done
  echo "unit cuda*/opencl*: $(timeout 150 $B/meanshift_tests -tc='cuda*,opencl*' 2>&1 | grep 'test cases')"
  timeout 120 compute-sanitizer --tool memcheck --leak-check full $B/meanshift segment gpu-carry/data/china.jpg -b cuda --max-pixels 20000 -o /tmp/s.png -q 2>&1 | grep -E "ERROR SUMMARY|LEAK SUMMARY|error" | head -5
fi
if [[ $mode == all || $mode == seg ]]; then
  for img in china flower; do for b in cuda opencl; do for r in 1 2 3; do
    echo "$img $b rep $r: $($B/meanshift segment gpu-carry/data/$img.jpg -b $b -o /tmp/$img-$b.png $SEGARGS 2>&1 | grep -E '^(search|segments|iterations|time)' | tr -s ' ' | tr '\n' '|')"
  done; done; done
fi
if [[ $mode == all || $mode == blobs ]]; then
  for k in ${KS:-2 3 6}; do
    python3 apps/bench/peers/sklearn_blobs.py --n 1000000 --dims $k --skip-sklearn --out /tmp/b$k >/dev/null
    for b in cuda opencl; do for r in 1 2; do echo "blobs 1e6 k=$k $b: $($B/bench_blobs /tmp/b$k 1000000 $k 0.7 --backend $b 2>&1 | tr '\n' ' ')"; done; done
    python3 apps/bench/peers/torch_blobs.py /tmp/b$k 1000000 $k --bandwidth 0.7 --reps 2
  done
fi
