#!/bin/bash
# Issue 27, the dimension-tiled kernel's block shapes on the GPU machine (device tool, `carry: ["gpu-carry"]`: build-gpu binaries
# copied to gpu-carry/bin and lib, as device_run_wide.sh says; gpu-carry/bin/cuda_wide_probe_v1 = the probe linked with an
# earlier kernel): unit + conformance + sanitizers on the default shapes, the
# one-exact-step CLI benchmark beside PyTorch's torch_step.py, the 100,000 x 384 embeddings beside
# torch_meanshift.py, the kernel probe against the previous kernel.
source gpu-carry/tools/device-opencl-env.sh >/dev/null; export LD_LIBRARY_PATH=$PWD/gpu-carry/lib; B=gpu-carry/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
timeout 200 $B/meanshift_tests -tc='cuda*' 2>&1 | grep -E "test cases|deviation|ERROR" | head -12
echo "conformance cuda: $(timeout 150 $B/meanshift_conformance --backend=cuda 2>&1 | grep -E 'test cases|ERROR' | tail -2 | tr '\n' ' ')"
echo "conformance opencl: $(timeout 280 $B/meanshift_conformance --backend=opencl 2>&1 | grep -E 'test cases|ERROR' | tail -2 | tr '\n' ' ')"
S=compute-sanitizer
echo "memcheck k=384 exact: $(timeout 60 $S --tool memcheck $B/meanshift bench --n 1000 --dims 384 --iterations 2 -b cuda -q --exact 2>&1 | grep -E 'ERROR SUMMARY|rror' | head -2)"
echo "memcheck k=500 cutoff: $(timeout 60 $S --tool memcheck $B/meanshift bench --n 1000 --dims 500 --iterations 2 -b cuda -q 2>&1 | grep -E 'ERROR SUMMARY|rror' | head -2)"
echo "memcheck k=600 exact: $(timeout 60 $S --tool memcheck $B/meanshift bench --n 700 --dims 600 --iterations 1 -b cuda -q --exact 2>&1 | grep -E 'ERROR SUMMARY|rror' | head -2)"
echo "racecheck k=402 exact: $(timeout 90 $S --tool racecheck $B/meanshift bench --n 300 --dims 402 --iterations 1 -b cuda -q --exact 2>&1 | grep -E 'RACECHECK SUMMARY|rror' | head -2)"
echo "racecheck k=600 exact: $(timeout 90 $S --tool racecheck $B/meanshift bench --n 200 --dims 600 --iterations 1 -b cuda -q --exact 2>&1 | grep -E 'RACECHECK SUMMARY|rror' | head -2)"
echo "synccheck k=384: $(timeout 60 $S --tool synccheck $B/meanshift bench --n 300 --dims 384 --iterations 1 -b cuda -q 2>&1 | grep -E 'SUMMARY|rror' | head -2)"
DIMS="${DIMS:-16 64 128 256 384 512 640 768 1024}"
for k in $DIMS; do echo "bench k=$k cuda: $(timeout 60 $B/meanshift bench --n 262144 --dims $k -b cuda --exact -q --iterations 1 2>&1 | tail -1)"; done
for k in ${OCL_DIMS:-128}; do echo "bench k=$k opencl: $(timeout 60 $B/meanshift bench --n 262144 --dims $k -b opencl --exact -q --iterations 1 2>&1 | tail -1)"; done
timeout 200 python3 apps/bench/peers/torch_step.py --n 262144 --dims $DIMS --reps 1
D=$(mktemp -d); python3 apps/bench/scale/generate.py embeddings $D --n 100000 --k 384 --clusters 10 2>&1 | tail -1
/usr/bin/time -f "wall %e s, peak %M KB" timeout 60 $B/meanshift cluster $D/points.npy --bandwidth 0.3 -b cuda -o $D/labels.npy 2>&1 | tail -6
timeout 90 python3 apps/bench/peers/torch_meanshift.py $D/points.npy --bandwidth 0.3 --truth $D/truth.npy --ours $D/labels.npy 2>&1 | tail -2
for k in 384 512 640; do timeout 30 $B/cuda_wide_probe_v1 131072 $k 1 | grep wide | sed 's/^/v1 /'; timeout 40 $B/cuda_wide_probe 131072 $k 1 | grep "^wide "; done
