#pragma once
// Internal: turns user data + bandwidth model into the PreparedData a backend binds, and maps
// positions between data units and prepared units.

#include <meanshift/backend.hpp>
#include <meanshift/bandwidth.hpp>

namespace meanshift::detail {

struct Prepared {
    PreparedData data;
    VectorD centre;  ///< k: subtracted from every coordinate (bounding-box centre of the data)
    VectorD scale;   ///< k: prepared = (x - centre) * scale
    /// Prepared units are whitened: for a shared H by 1/h_d, for per-point H_i by the geometric mean
    /// of sqrt(1/H_i,dd) over the points. Euclidean distance in prepared units is therefore the
    /// Mahalanobis distance in bandwidth units (exact for a shared H, the typical bandwidth otherwise).
};

/// Validates data (n × k row-major, finite, n ≥ 1, k ≥ 1) and bandwidth against it; throws InvalidArgument.
Prepared prepare(const float* data, Index n, int k, const Bandwidth& bandwidth);

/// Validates seeds (m × k, finite) and maps them to prepared units.
MatrixD to_prepared(const Prepared& p, const float* points, Index m, const char* what);

/// Maps prepared positions back to data units (float32).
MatrixF from_prepared(const Prepared& p, const MatrixD& y);

}  // namespace meanshift::detail
