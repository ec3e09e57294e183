// The brute-force k-nearest-neighbour search (kernels/meanshift_knn.h, one source with OpenCL's
// kernels/knn.cl): one query per thread, the points staged in shared-memory tiles per block.
#include "backends/cuda/knn_kernel.hpp"
#include "backends/gpu/knn_limits.hpp"
#include "meanshift_knn.h"

namespace meanshift::cuda {
namespace {

static_assert(gpu::kKnnMaxCount == MS_KNN_MAX && gpu::kKnnMaxDims == MS_KNN_TILE, "host and kernel limits disagree");

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads)
    knn_kernel(const float* points, int n, const float* queries, long long m, int k, int count, float* out)
{
    __shared__ float tile[MS_KNN_TILE];
    const long q = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
    ms_knn_query(points, n, queries, m, k, count, tile, threadIdx.x, blockDim.x, q, out);
}

}  // namespace

cudaError_t launch_knn(const float* points, int n, const float* queries, long long m, int k, int count, float* out,
                       cudaStream_t stream)
{
    const long long blocks = (m + kThreads - 1) / kThreads;
    knn_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(points, n, queries, m, k, count, out);
    return cudaGetLastError();
}

}  // namespace meanshift::cuda
