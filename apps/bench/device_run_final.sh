source gpu-carry/tools/device-opencl-env.sh >/dev/null; export LD_LIBRARY_PATH=$PWD/gpu-carry/lib; B=gpu-carry/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for b in cuda opencl; do timeout 200 $B/meanshift_conformance --backend=$b 2>&1 | grep "test cases" ; done
timeout 150 $B/meanshift_tests -tc='cuda*,opencl*' 2>&1 | grep "test cases"
for be in cuda opencl; do for it in 1 3; do for kern in isotropic diagonal; do echo "$be $kern it=$it: $($B/meanshift bench -q --n 1048576 --dims 3 --iterations $it --kernel $kern -b $be | python3 -c 'import json,sys; j=json.loads(sys.stdin.read()); print("iter %.3f kern %.3f pairs/s %.3e kernel-rate %.3e prep %.2f preload %s" % (j["seconds"], j["seconds_kernels"], j["pairs_per_s"], j["pairs_per_s_kernels"], j["seconds_prepare"], j["preload"]))')"; done; done; done
$B/bench_cuda throughput 2>&1 | tail -5
for m in shared perpoint; do $B/bench_opencl --n 1048576 --k 3 --model $m --reps 3 --check 32 --config "preload=auto,tau=0" --config "preload=1,tau=128,r=2,tile=512" --config "preload=1,tau=128,r=4,tile=512" --config "preload=1,tau=256,r=4,tile=512" | python3 -c 'import json,sys
for l in sys.stdin:
  if l.startswith("{"):
    r=json.loads(l); print(r["model"], r["config"], "step %.3e kernel %.3e" % (r["pairs_per_s_step"], r["pairs_per_s_kernel"]), "tile",r["tile"],"tau",r["tau"],"r",r["r"],"z",r["z"])'; done
for be in cuda opencl; do timeout 90 $B/bench_host_overhead --backend $be --iterations 5; done
for be in cuda opencl; do echo "$be 1e6 x 10: $($B/meanshift bench -q --n 1000000 --dims 3 --iterations 10 -b $be)"; done
