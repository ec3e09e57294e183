#!/bin/bash
# `meanshift bench` with default options, one iteration, n = 2^20, k = 3, beside
# bench_opencl's best configurations and bench_cuda's tuned kernels in the same call; host overhead.
C=$PWD/gpu-carry; B=$C/bin; export LD_LIBRARY_PATH=$C/lib
source $C/tools/device-opencl-env.sh >/dev/null
for r in 1 2 3; do for be in opencl cuda; do for kern in isotropic diagonal; do
  echo "$be $kern rep $r: $(timeout 60 $B/meanshift bench -q --exact --n 1048576 --dims 3 --iterations 1 --kernel $kern -b $be | tail -1 | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print("pairs/s %.4g kernels %.4g iterate %.4f s prepare %.3f" % (d["pairs_per_s"], d["pairs_per_s_kernels"], d["seconds"], d["seconds_prepare"]))')"
done; done; done
timeout 200 $B/bench_opencl --n 1048576 --k 3 --reps 3 --check 32 --config preload=1,tau=128,r=4,tile=512 --config preload=1,tau=256,r=4,tile=256 --config preload=1,tau=128,r=2,tile=512 --model shared 2>&1 | grep '^{' | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("bench_opencl", d["model"], d["config"], "step %.4g kernel %.4g" % (d["pairs_per_s_step"], d["pairs_per_s_kernel"]))'
timeout 200 $B/bench_opencl --n 1048576 --k 3 --reps 3 --check 32 --config preload=1,tau=128,r=2,tile=512 --config preload=1,tau=128,r=4,tile=512 --model perpoint 2>&1 | grep '^{' | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("bench_opencl", d["model"], d["config"], "step %.4g kernel %.4g" % (d["pairs_per_s_step"], d["pairs_per_s_kernel"]))'
timeout 100 $B/bench_cuda throughput 2>&1 | tail -6
for be in opencl cuda; do timeout 60 $B/bench_host_overhead --backend $be --n 1048576 --iterations 3 2>&1 | tail -3; done
