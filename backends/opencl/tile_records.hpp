#pragma once
// Internal: the device layout of the data points: spatially compact tiles (k-d order) of TILE
// point records relative to each
// tile's reference point (layouts in kernels/meanshift_device.h), built once per bind() in
// float64 and rounded to float32 at the end.

#include "backends/opencl/kernel_config.hpp"

#include <meanshift/backend.hpp>

#include <vector>

namespace meanshift::detail {

struct TileRecords {
    int ntiles = 0;
    std::vector<float> records;  ///< ntiles · tile · stride
    std::vector<float> refs;     ///< ntiles · (k + 1): r_t (bounding-box centre of the tile's points), radius
};

/// Padding entries of the last tile get log-weight MS_PAD_LOG2W, so they never get weight.
TileRecords build_tile_records(const PreparedData& data, const KernelConfig& cfg);

}  // namespace meanshift::detail
