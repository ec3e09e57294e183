// Fast kernels, shared (isotropic / whitened) model. Split from the per-point model only so the
// two compile in parallel.
#include "backends/cuda/fast_kernel.cuh"

namespace meanshift::cuda {
const void* fast_kernel_shared(int k, int r, bool preload, int tile, int variant)
{
    return fast_kernel_table<false>(k, r, preload, tile, variant);
}
}  // namespace meanshift::cuda
