// Kernel probe: times one launch of the dimension-tiled GEMM kernel
// (backends/cuda/gemm_wide_kernel.cu) against the fp16 kernel (gemm_f16_kernel.cu) where both take k,
// on n k-D Gaussian blobs (8 centres, as apps/bench/peers/torch_step.py), every point a mode, exact
// kernel; kernel time by CUDA events, best of `reps` after one warm-up, and a checksum of the shifts.
// Built here (nvcc, linked with the two kernels' objects; apps/bench/device_run_wide.sh says how) so
// that both are compared in one call without rebuilding the library.
// Then the kernel's other block shapes (modes × points per block) where they exist for k.
//   cuda_wide_probe N K [REPS]
#include "backends/cuda/kernel_params.hpp"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace meanshift::cuda;

namespace meanshift::cuda {
GemmKernel gemm_wide_kernel_shape(int k, int modes, int points, int threads);  // gemm_wide_kernel.cu
}

namespace {
void time_kernel(const char* name, const GemmKernel& gk, float* dx, float* dacc, long long n, int k, int reps)
{
    if (!gk.fn) {
        std::printf("%s k=%d: no kernel\n", name, k);
        return;
    }
    cudaFuncSetAttribute(gk.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(gk.smem));
    GemmParams p;
    p.points = dx;
    p.n = n;
    p.k = k;
    p.cut_log2 = -INFINITY;
    p.queries = dx;
    p.acc = dacc;
    p.count = n;
    void* args[] = {&p};
    const dim3 grid(static_cast<unsigned>((n + gk.modes - 1) / gk.modes), 1);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float best = 1e30f;
    for (int r = 0; r <= reps; ++r) {
        cudaMemset(dacc, 0, n * (k + 1) * 4);
        cudaEventRecord(a);
        cudaLaunchKernel(gk.fn, grid, dim3(gk.threads), args, gk.smem, 0);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        if (r > 0 && ms < best) best = ms;
    }
    std::vector<float> acc(n * (k + 1));
    cudaMemcpy(acc.data(), dacc, acc.size() * 4, cudaMemcpyDeviceToHost);
    double chk = 0;
    for (long long i = 0; i < n; ++i) chk += acc[i * (k + 1) + 1] / acc[i * (k + 1)];
    int blocks = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, gk.fn, gk.threads, gk.smem);
    std::printf("%s k=%d n=%lld: %.3f ms, %.3e pairs/s (%s) smem %lu, %d blocks/SM, checksum %.6e\n", name, k, n, best,
                double(n) * n / (best * 1e-3), cudaGetErrorString(cudaGetLastError()), gk.smem, blocks, chk);
}
}  // namespace

int main(int argc, char** argv)
{
    const long long n = argc > 1 ? atoll(argv[1]) : 262144;
    const int k = argc > 2 ? atoi(argv[2]) : 384;
    const int reps = argc > 3 ? atoi(argv[3]) : 2;
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
    time_kernel("f16 ", gemm_f16_kernel(k, false), dx, dacc, n, k, reps);
    time_kernel("wide", gemm_wide_kernel(k, false, ~0ul), dx, dacc, n, k, reps);
    const int shapes[4][3] = {{32, 16, 512}, {64, 16, 512}, {32, 32, 512}, {64, 32, 512}};
    for (const auto& sh : shapes) {
        const GemmKernel g = gemm_wide_kernel_shape(k, sh[0], sh[1], sh[2]);
        if (!g.fn || g.modes != sh[0] || g.points != sh[1] || g.threads != sh[2]) continue;
        char name[32];
        std::snprintf(name, sizeof name, "wide%dx%dt%d", sh[0], sh[1], sh[2]);
        time_kernel(name, g, dx, dacc, n, k, reps);
    }
}
