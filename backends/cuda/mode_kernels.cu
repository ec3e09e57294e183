// Device side of the modes kept on the GPU (mode_kernels.hpp).
#include "backends/cuda/mode_kernels.hpp"
#include "meanshift_device.h"

#include <cub/device/device_select.cuh>

namespace meanshift::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(long long items) { return static_cast<unsigned>((items + kThreads - 1) / kThreads); }

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
    for (int d = 0; d < k; ++d) {
        const float s0 = a[p.per_point ? d : 0];
        supported |= s0 > 0.0f;
        y[d] = ms_finish_dim(y[d], s0, a[s0n + d], metric ? metric[d] : 1.0f, &shift2);
    }
    const int status = ms_mode_status(supported, shift2, p.tol2);
    p.records[i] = ModeRecord{mode, shift2, status};
    p.keep[i] = status == MS_STATUS_ACTIVE ? 1 : 0;
}

}  // namespace

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

}  // namespace meanshift::cuda
