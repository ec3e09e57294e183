#pragma once
// Host-side preparation of the points for the fast kernels (fast_kernel.cuh): the points are
// put in a space-filling-curve (Morton) order and cut into tiles of W points; each tile gets a
// centre c_t (float32) and stores, per point, the record of the expanded exponent taken relative
// to c_t, in the layout kernels/meanshift_device.h defines (shared with the OpenCL backend). Because the points of a tile are close together, every pair whose weight
// matters has both |x - c_t| and |y - c_t| small, so the expanded form keeps the accuracy of
// the direct form even for data with a large extent (a whole image in pixel units).
// The order of the points does not change the result (only the rounding of the sums).

#include <meanshift/backend.hpp>

#include <vector>

namespace meanshift::cuda {

struct TiledLayout {
    int k = 0;
    int tile = 0;                 ///< W, points per tile
    int stride = 0;               ///< floats per point (fast_stride)
    Index tiles = 0;              ///< ⌈n / W⌉
    std::vector<float> data;      ///< tiles × W × stride records; padding records have weight 0
    std::vector<float> centres;   ///< tiles × k
    std::vector<float> radii;     ///< tiles: max |x - c_t| over the tile (rounded up)
};

/// Morton (Z-order) permutation of the n × k points: a tile of consecutive indices is compact.
std::vector<Index> morton_order(const MatrixD& points);

/// Builds the layout for `data` (KernelModel of data decides the coefficients). tile ≥ 1.
TiledLayout build_tiled_layout(const PreparedData& data, int tile);

}  // namespace meanshift::cuda
