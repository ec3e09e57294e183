// Device side of the modes kept on the GPU (mode_kernels.hpp).
#include "backends/cuda/mode_kernels.hpp"
#include "meanshift_device.h"

#include <cub/device/device_select.cuh>

#include <algorithm>

namespace meanshift::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(long long items)
{
    return static_cast<unsigned>((items + kThreads - 1) / kThreads);
}

__global__ void gather_kernel(const float* __restrict__ positions, const std::int32_t* __restrict__ active,
                              long long count, int k, float* __restrict__ queries)
{
    const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= count * k) return;
    const long long i = t / k;
    const int d = static_cast<int>(t - i * k);
    queries[t] = positions[static_cast<long long>(active[i]) * k + d];
}

__global__ void iota_kernel(std::int32_t* active, long long count)
{
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < count) active[i] = static_cast<std::int32_t>(i);
}

__global__ void finish_kernel(const FinishParams p)
{
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= p.count) return;
    const int k = p.k;
    const std::int32_t mode = p.active[i];
    float* y = p.positions + static_cast<long long>(mode) * k;
    const float* metric = p.metric ? p.metric + static_cast<long long>(mode) * k : nullptr;
    const int s0n = p.per_point ? k : 1;
    const float* a = p.acc + i * (s0n + k);  // accumulator_stride(k, per_point)
    float shift2 = 0.0f;
    int supported = 0;
    if (p.sphere) {
        // von Mises–Fisher: y' = y + S1/S0 projected onto |y - o| = radius (kept where y' = o),
        // then the shift from y (two passes: y' recomputed rather than held for a run-time k).
        const float* o = p.sphere;
        float norm2 = 0.0f;
        for (int d = 0; d < k; ++d) {
            const float s0 = a[p.per_point ? d : 0];
            const float u = y[d] + (s0 > 0.0f ? a[s0n + d] / s0 : 0.0f) - o[d];
            norm2 = fmaf(u, u, norm2);
        }
        const float scale = norm2 > 0.0f ? o[k] * rsqrtf(norm2) : 1.0f;
        for (int d = 0; d < k; ++d) {
            const float s0 = a[p.per_point ? d : 0];
            supported |= s0 > 0.0f;
            const float yn = o[d] + scale * (y[d] + (s0 > 0.0f ? a[s0n + d] / s0 : 0.0f) - o[d]);
            const float t = yn - y[d];
            shift2 = fmaf((metric ? metric[d] : 1.0f) * t, t, shift2);
            y[d] = yn;
        }
    } else {
        for (int d = 0; d < k; ++d) {
            const float s0 = a[p.per_point ? d : 0];
            supported |= s0 > 0.0f;
            y[d] = ms_finish_dim(y[d], s0, a[s0n + d], metric ? metric[d] : 1.0f, &shift2);
        }
    }
    const int status = ms_mode_status(supported, shift2, p.tol2);
    p.records[i] = ModeRecord{mode, shift2, status};
    p.keep[i] = status == MS_STATUS_ACTIVE ? 1 : 0;
}

/// The direct-form max pass (ms_log2_weight_max): block (x, y) takes query x and the y-th slice of
/// the points, its threads every kThreads-th point of the slice; one atomic max per block.
__global__ void log2_max_kernel(const float* __restrict__ points, const float* __restrict__ precision,
                                const float* __restrict__ log_weight, long long n, int k, float cut2,
                                const float* __restrict__ queries, int* __restrict__ out)
{
    __shared__ float red[kThreads / 32];
    const long long q = blockIdx.x;
    const long long per = (n + gridDim.y - 1) / gridDim.y;
    const long long i0 = blockIdx.y * per, i1 = min(n, i0 + per);
    float best = ms_log2_weight_max(points, precision, log_weight, k, 1, i0 + threadIdx.x, i1, kThreads,
                                    queries + q * k, k, cut2);
    for (int off = 16; off > 0; off /= 2) best = fmaxf(best, __shfl_xor_sync(0xffffffffu, best, off));
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = best;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < kThreads / 32; ++w) best = fmaxf(best, red[w]);
        if (best > MS_LOG2_WEIGHT_NONE) atomicMax(out + q, ms_ordered_from_float(best));
    }
}

}  // namespace

cudaError_t launch_log2_max(const float* points, const float* precision, const float* log_weight, long long n, int k,
                            float cut2, const float* queries, long long count, int* out, int blocks_wanted,
                            cudaStream_t stream)
{
    if (count <= 0 || n <= 0) return cudaSuccess;
    // slices of the points until the blocks fill the device (few queries: the last active modes)
    const long long slices =
        std::max(1LL, std::min({(blocks_wanted + count - 1) / count, (n + kThreads - 1) / kThreads, 65535LL}));
    log2_max_kernel<<<dim3(static_cast<unsigned>(count), static_cast<unsigned>(slices)), kThreads, 0, stream>>>(
        points, precision, log_weight, n, k, cut2, queries, out);
    return cudaGetLastError();
}

cudaError_t launch_gather(const float* positions, const std::int32_t* active, long long count, int k, float* queries,
                          cudaStream_t stream)
{
    if (count <= 0) return cudaSuccess;
    gather_kernel<<<blocks_for(count * k), kThreads, 0, stream>>>(positions, active, count, k, queries);
    return cudaGetLastError();
}

cudaError_t launch_iota(std::int32_t* active, long long count, cudaStream_t stream)
{
    if (count <= 0) return cudaSuccess;
    iota_kernel<<<blocks_for(count), kThreads, 0, stream>>>(active, count);
    return cudaGetLastError();
}

cudaError_t launch_finish(const FinishParams& p, cudaStream_t stream)
{
    if (p.count <= 0) return cudaSuccess;
    finish_kernel<<<blocks_for(p.count), kThreads, 0, stream>>>(p);
    return cudaGetLastError();
}

cudaError_t compact_temp_bytes(long long count, std::size_t& bytes)
{
    bytes = 0;
    return cub::DeviceSelect::Flagged(nullptr, bytes, static_cast<const std::int32_t*>(nullptr),
                                      static_cast<const unsigned char*>(nullptr), static_cast<std::int32_t*>(nullptr),
                                      static_cast<std::int32_t*>(nullptr), static_cast<int>(count));
}

cudaError_t launch_compact(void* temp, std::size_t temp_bytes, const std::int32_t* in, const unsigned char* keep,
                           std::int32_t* out, std::int32_t* selected, long long count, cudaStream_t stream)
{
    if (count <= 0) return cudaSuccess;
    return cub::DeviceSelect::Flagged(temp, temp_bytes, in, keep, out, selected, static_cast<int>(count), stream);
}

cudaError_t warm_up_mode_kernels(cudaStream_t stream)
{
    // CUDA loads kernels lazily, at their first launch (tens of milliseconds in all): load them at
    // bind() so that the first step costs what every step costs.
    cudaFuncAttributes fa{};
    cudaError_t e = cudaFuncGetAttributes(&fa, gather_kernel);
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&fa, iota_kernel);
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&fa, finish_kernel);
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&fa, log2_max_kernel);
    if (e != cudaSuccess) return e;
    // cub's kernels have no handle here: run one compaction of one item.
    std::size_t bytes = 0;
    if ((e = compact_temp_bytes(1, bytes)) != cudaSuccess) return e;
    void* buf = nullptr;
    const std::size_t scratch = 64 + (bytes + 255) / 256 * 256;
    if ((e = cudaMalloc(&buf, scratch)) != cudaSuccess) return e;
    auto* base = static_cast<unsigned char*>(buf);
    auto* in = reinterpret_cast<std::int32_t*>(base);
    auto* out = reinterpret_cast<std::int32_t*>(base + 16);
    auto* selected = reinterpret_cast<std::int32_t*>(base + 32);
    auto* keep = base + 48;
    e = cudaMemsetAsync(base, 0, 64, stream);
    if (e == cudaSuccess) e = launch_compact(base + 64, bytes, in, keep, out, selected, 1, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    const cudaError_t f = cudaFree(buf);
    return e != cudaSuccess ? e : f;
}

}  // namespace meanshift::cuda
