#pragma once
// Internal: one-pass scans of the host's arrays. Eigen's colwise() reductions walk a row-major
// matrix one column at a time (k passes over n × k values: 41 ms of the preparation of 65,536 × 64
// points), and allFinite() did not vectorise; these read each value once, in memory order.

#include "parallel.hpp"

#include <meanshift/types.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace meanshift::detail {

/// Whether x[0..count) holds no NaN or ±Inf (no early exit, so the loop vectorises).
template <class T>
bool all_finite(const T* x, std::size_t count)
{
    bool bad = false;
    for (std::size_t i = 0; i < count; ++i) bad |= !(std::fabs(x[i]) <= std::numeric_limits<T>::max());
    return !bad;
}

/// Per-column minimum `lo` and maximum `hi` of the first `cols` columns of A (rows ≥ 1), in one
/// pass over its rows.
inline void column_range(const MatrixD& A, Index cols, Eigen::RowVectorXd& lo, Eigen::RowVectorXd& hi)
{
    lo = A.row(0).head(cols);
    hi = lo;
    for (Index i = 1; i < A.rows(); ++i) {
        lo = lo.cwiseMin(A.row(i).head(cols));
        hi = hi.cwiseMax(A.row(i).head(cols));
    }
}

/// Per-column minimum `lo` and maximum `hi` of x (rows × cols row-major, rows ≥ 1) in one pass;
/// false when some value is NaN or ±Inf (lo and hi are then meaningless).
inline bool float_column_range(const float* x, std::size_t rows, std::size_t cols, std::vector<float>& lo,
                               std::vector<float>& hi)
{
    lo.assign(x, x + cols);
    hi = lo;
    float* l = lo.data();
    float* h = hi.data();
    bool bad = false;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(min : l[:cols]) reduction(max : h[:cols]) reduction(|| : bad) \
    num_threads(host_threads()) if (rows * cols >= static_cast<std::size_t>(kParallelMinValues))
#endif
    for (std::size_t i = 0; i < rows; ++i) {
        const float* r = x + i * cols;
        for (std::size_t d = 0; d < cols; ++d) {
            bad = bad || !(std::fabs(r[d]) <= std::numeric_limits<float>::max());
            l[d] = std::min(l[d], r[d]);
            h[d] = std::max(h[d], r[d]);
        }
    }
    return !bad;
}

}  // namespace meanshift::detail
