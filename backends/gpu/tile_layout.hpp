#pragma once
// Internal: the GPU tile-record format, built once on the host for both GPU backends (CUDA and
// OpenCL). The record layouts themselves are defined in kernels/meanshift_device.h (the device
// side reads them); this module is the one host writer of them.
//
// API (namespace meanshift::gpu):
//   int record_floats(k, per_point)          floats of one record: k + 1 (shared H), 2k + 1 (per-point H)
//   int record_stride(k, per_point)          record_floats rounded up to whole float4: THE stride, in floats
//   int log_weight_slot(k, per_point)        where a record keeps its log2 weight (k shared, 0 per-point);
//                                            padding records hold MS_PAD_LOG2W there
//   std::size_t tile_bytes(k, per_point, W)  bytes of W records (a preload batch in local/shared memory)
//   std::vector<Index> spatial_order(points, W)   the ordering (k-d order, see below)
//   TileLayout build_tile_layout(data, W, form)    records + centres + radii + permutation
//
// Layout (TileLayout): the n points in spatial_order, cut into tiles = ⌈n/W⌉ tiles of W records;
// record slot s = t·W + i (tile t, entry i) holds point original[s] relative to the tile's
// reference centre c_t (p' = x − c_t), in the layout of meanshift_device.h for the data's
// KernelModel and the exponent form asked for (L = log2 e = MS_LOG2E, the device's own constant,
// so host and device terms of the expanded exponent cancel with the same L):
//   shared,    direct  : [p'_0 .. p'_{k-1}, 0]
//   shared,    expanded: [p'_0 .. p'_{k-1}, -L/2 |p'|²]
//   per-point, direct  : [L c_i, p'_0 .. p'_{k-1}, w_0 .. w_{k-1}]
//   per-point, expanded: [L c_i - L/2 Σ w_d p'_d², L w_d p'_d (k), -L/2 w_d (k)]
// then zeros up to record_stride. Slots s ≥ n (the last tile's tail) are padding: all zeros with
// MS_PAD_LOG2W in log_weight_slot, so they never get weight. centres (tiles × k float32) is the
// bounding-box centre of the tile's points, rounded to float32 before the records are taken
// relative to it (the kernels subtract exactly that float); radii (tiles) = max |x − c_t| over the
// tile (Euclidean, prepared units), rounded up by 1e-6 relative (kernels use it in bounds).
// Everything is computed in float64 and rounded to float32 once.
//
// Ordering: k-d order (recursive split of the widest dimension of the current point set, at a
// tile boundary near the median). Chosen over Morton order because every tile is then a cell of
// a k-d tree, compact in every dimension for any k and any distribution (Morton quantises at most
// 21 dimensions with 63/k bits each, so at large k it degrades to a coarse grid in the first
// dimensions, and a tile can straddle a jump of the Z-curve); the expanded exponent's rounding
// error and the tile-radius bounds both scale with the tile's extent. Cost O(n·k·log(n/W)).
// The kernels' sums do not depend on the order (only their rounding does).

#include <meanshift/backend.hpp>
#include <meanshift/tuning.hpp>

#include <cstddef>
#include <vector>

namespace meanshift::gpu {

/// Floats of one point record before padding: k + 1 (shared H), 2k + 1 (per-point H).
int record_floats(int k, bool per_point) noexcept;
/// Floats per record in device memory: record_floats rounded up to a multiple of 4 (float4 loads).
int record_stride(int k, bool per_point) noexcept;
/// Index of the log2-weight entry of a record (where padding holds MS_PAD_LOG2W): k or 0.
int log_weight_slot(int k, bool per_point) noexcept;
/// Bytes of `tile` records (e.g. one preload batch in local / shared memory).
std::size_t tile_bytes(int k, bool per_point, int tile) noexcept;

/// The spatial order of the n points (a permutation of 0 .. n-1): k-d order with splits at
/// multiples of `tile`, so each tile of `tile` consecutive entries is compact. tile ≥ 1.
std::vector<Index> spatial_order(const MatrixD& points, int tile);

struct TileLayout {
    int k = 0;
    bool per_point = false;  ///< data.model == KernelModel::PerPoint
    ExponentForm form = ExponentForm::Expanded;
    int tile = 0;  ///< W, records per tile
    int stride = 0;  ///< record_stride(k, per_point)
    Index n = 0;  ///< points (slots 0 .. n-1 are real, the rest padding)
    Index tiles = 0;  ///< ⌈n / W⌉
    std::vector<float> records;  ///< tiles × W × stride
    std::vector<float> centres;  ///< tiles × k, c_t
    std::vector<float> radii;  ///< tiles, max |x − c_t| (rounded up)
    std::vector<Index> original;  ///< n: original index (row of data.points) of slot s < n
};

/// Builds the layout of `data` (its KernelModel picks the record kind) for tiles of `tile` ≥ 1
/// records, in exponent form `form`. Throws InvalidArgument for tile < 1, n < 1 or per-point data
/// without precision / log_weight of n rows.
TileLayout build_tile_layout(const PreparedData& data, int tile, ExponentForm form = ExponentForm::Expanded);

}  // namespace meanshift::gpu
