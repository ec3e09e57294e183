// Kernel probe: times one launch of the fp16 GEMM kernel (backends/cuda/gemm_f16_kernel.cu)
// on n k-D Gaussian blobs (8 centres, as apps/bench/peers/torch_step.py), every point a mode, exact kernel.
// Built on the GPU machine by cuda_gemm_probe.sh, which compiles variants of the kernel source (KSRC)
// so that shapes can be compared in one call without rebuilding the library.
#include KSRC
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include <cuda_runtime.h>
using namespace meanshift::cuda;
int main(int argc, char** argv)
{
    const long long n = argc > 1 ? atoll(argv[1]) : 262144;
    const int k = argc > 2 ? atoi(argv[2]) : 64;
    const int reps = argc > 3 ? atoi(argv[3]) : 3;
    std::mt19937 rng(1);
    std::normal_distribution<float> N01;
    std::vector<float> c(8 * k), x(n * k);
    for (auto& v : c) v = 4 * N01(rng);
    for (long long i = 0; i < n; ++i) {
        const int l = rng() % 8;
        for (int d = 0; d < k; ++d) x[i * k + d] = c[l * k + d] + N01(rng);
    }
    float *dx, *dacc;
    cudaMalloc(&dx, x.size() * 4);
    cudaMalloc(&dacc, n * (k + 1) * 4);
    cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
    GemmKernel gk = gemm_f16_kernel(k, false);
    if (!gk.fn) { printf("no kernel\n"); return 1; }
    cudaFuncSetAttribute(gk.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)gk.smem);
    GemmParams p;
    p.points = dx; p.n = n; p.k = k; p.cut_log2 = -INFINITY; p.queries = dx; p.acc = dacc; p.count = n;
    void* args[] = {&p};
    dim3 grid((n + gk.modes - 1) / gk.modes, 1);
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    float best = 1e30f;
    for (int r = 0; r <= reps; ++r) {
        cudaMemset(dacc, 0, n * (k + 1) * 4);
        cudaEventRecord(a);
        cudaLaunchKernel(gk.fn, grid, dim3(gk.threads), args, gk.smem, 0);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms; cudaEventElapsedTime(&ms, a, b);
        if (r > 0 && ms < best) best = ms;
    }
    std::vector<float> acc(n * (k + 1));
    cudaMemcpy(acc.data(), dacc, acc.size() * 4, cudaMemcpyDeviceToHost);
    double chk = 0; for (long long i = 0; i < n; ++i) chk += acc[i * (k + 1) + 1] / acc[i * (k + 1)];
    printf("%s k=%d n=%lld: %.3f ms, %.3e pairs/s (err %s) checksum %.6e\n", VARIANT, k, n, best, double(n) * n / (best * 1e-3),
           cudaGetErrorString(cudaGetLastError()), chk);
}
