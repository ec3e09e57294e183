#pragma once
// Internal: Binding::accumulate's partial sums (backend.hpp), the parts every backend shares: the
// argument checks, and the GPU bindings' conversion of their accumulators (float32, S1 relative to
// the query: backends/cuda/kernel_params.hpp, kernels/approx_mode_common.clh) into the interface's
// float64 sums with S1 = Σ e (w) x; and when the GPU kernels shift each mode's per-point log2 weights
// (kernels/meanshift_device.h, "per-mode log2 shift"), the host's side of it.

#include <meanshift/backend.hpp>

#include <cstdint>

namespace meanshift::detail {

/// accumulate()'s argument checks (InvalidArgument): count ≥ 0, positions and sums given when
/// count > 0, finite positions (count × data.k()).
void check_accumulate(const PreparedData& data, const double* positions, Index count, const double* sums);

/// The common factor of a GPU kernel's per-point S0 and S1 in the expanded exponent form: its
/// records hold L w_d p'_d and −L/2 w_d (L = log2 e, backends/gpu/tile_layout.hpp), so its sums
/// are L·Σ e w (x − y) and L·Σ e w. A step's ratio S1/S0 cancels it; sums added to other ranks'
/// must not carry it, so they are multiplied by this (the direct forms and the shared model: 1).
constexpr double kExpandedPerPointSumScale = 1.0 / 1.4426950408889634;

/// Per-point log-weights within this many log2 units of 0 need no per-mode shift: every point's
/// own weight (D² = 0) is then ≥ 2^-64, so a mode's weights underflow float32 (2^-126) only beyond
/// D² ≈ 86 from every point, as the shared model's do beyond D² ≈ 175 (a seed far from all data).
constexpr double kLog2WeightFreeRange = 64.0;

/// Whether the GPU kernels must shift each mode's log2 weights by its own maximum (a max-only pass
/// over the points first): per-point data whose log2 weights L c_i leave [-64, 64] (|H_i|^-1/2
/// spanning more than 2^64, e.g. bandwidths 8x apart in 22 dimensions), where float32 weights of
/// whole clusters would underflow. Otherwise the kernels run unchanged (no pass, no shift).
bool needs_log2_shift(const PreparedData& data);

/// The shift (log2 units) a GPU kernel applied to a mode from its max pass's ordered maximum
/// (ms_log2_shift of kernels/meanshift_device.h); -inf when the mode has no support (maximum
/// below -1074, or no candidate): its sums are then 0.
double log2_shift_value(std::int32_t ordered_max);

/// Adds a GPU binding's sums of `count` queries to accumulate()'s `sums` (count × (NS0 + k),
/// [S0 | S1], row-major; NS0 = k per-point, else 1). `acc` holds `segments` consecutive blocks of
/// count × (NS0 + k) floats (the sums of disjoint point sets, added here in float64), each with
/// S1 relative to the query y: S1_d = S1_rel_d + y_d S0_d (S0_d = S0 for the shared model), y the
/// float32 rounding of `positions` (count × k), the point the kernels evaluated. Both sums are
/// multiplied by `scale` (kExpandedPerPointSumScale, or 1) and, when `ordered_max` is given (count
/// values: the kernels shifted each query's log2 weights), by 2^shift_q in float64, so that they are
/// absolute (sums of other ranks and backends add to them).
void add_relative_sums(const float* acc, Index segments, const double* positions, Index count, int k, bool per_point,
                       double scale, double* sums, const std::int32_t* ordered_max = nullptr);

}  // namespace meanshift::detail
