#pragma once
// Internal: Binding::accumulate's partial sums (backend.hpp), the parts every backend shares: the
// argument checks, and the GPU bindings' conversion of their accumulators (float32, S1 relative to
// the query: backends/cuda/kernel_params.hpp, kernels/approx_mode_common.clh) into the interface's
// float64 sums with S1 = Σ e (w) x.

#include <meanshift/backend.hpp>

namespace meanshift::detail {

/// accumulate()'s argument checks (InvalidArgument): count ≥ 0, positions and sums given when
/// count > 0, finite positions (count × data.k()).
void check_accumulate(const PreparedData& data, const double* positions, Index count, const double* sums);

/// The common factor of a GPU kernel's per-point S0 and S1 in the expanded exponent form: its
/// records hold L w_d p'_d and −L/2 w_d (L = log2 e, backends/gpu/tile_layout.hpp), so its sums
/// are L·Σ e w (x − y) and L·Σ e w. A step's ratio S1/S0 cancels it; sums added to other ranks'
/// must not carry it, so they are multiplied by this (the direct forms and the shared model: 1).
constexpr double kExpandedPerPointSumScale = 1.0 / 1.4426950408889634;

/// Adds a GPU binding's sums of `count` queries to accumulate()'s `sums` (count × (NS0 + k),
/// [S0 | S1], row-major; NS0 = k per-point, else 1). `acc` holds `segments` consecutive blocks of
/// count × (NS0 + k) floats (the sums of disjoint point sets, added here in float64), each with
/// S1 relative to the query y: S1_d = S1_rel_d + y_d S0_d (S0_d = S0 for the shared model), y the
/// float32 rounding of `positions` (count × k), the point the kernels evaluated. Both sums are
/// multiplied by `scale` (kExpandedPerPointSumScale, or 1).
void add_relative_sums(const float* acc, Index segments, const double* positions, Index count, int k, bool per_point,
                       double scale, double* sums);

}  // namespace meanshift::detail
