// Fast kernels, per-point diagonal covariance model (eq. 5-6).
#include "backends/cuda/fast_kernel.cuh"

namespace meanshift::cuda {
const void* fast_kernel_per_point(int k, int r, bool preload, int tile, int variant)
{
    return fast_kernel_table<true>(k, r, preload, tile, variant);
}
}  // namespace meanshift::cuda
