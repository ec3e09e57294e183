#pragma once
// Internal: one-pass scans of the host's arrays. Eigen's colwise() reductions walk a row-major
// matrix one column at a time (k passes over n × k values: 41 ms of the preparation of 65,536 × 64
// points), and allFinite() did not vectorise; these read each value once, in memory order.

#include "skeleton/src/core/parallel.hpp"

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

/// max |x[i]| over x[0..count) (0 for none; NaN-free input), on the host threads for large counts.
/// A maximum is exact in any order, so the result does not depend on the thread count.
inline double max_abs(const double* x, std::size_t count)
{
    double m = 0;
#if defined(_OPENMP)
#pragma omp parallel for simd schedule(static) reduction(max                                                           \
                                                         : m)                                                          \
    num_threads(host_threads()) if (count >= static_cast <std::size_t>(kParallelMinValues))
#endif
    for (std::size_t i = 0; i < count; ++i) m = std::max(m, std::fabs(x[i]));
    return m;
}

/// max x[i] over x[0..count) (count >= 1; NaN-free input), on the host threads for large counts:
/// Eigen's maxCoeff(), whose value does not depend on the order.
inline double max_value(const double* x, Index count)
{
    double m = x[0];
#if defined(_OPENMP)
#pragma omp parallel for simd schedule(static) reduction(max                                                           \
                                                         : m)                                                          \
    num_threads(host_threads()) if (count >= kParallelMinValues)
#endif
    for (Index i = 1; i < count; ++i) m = std::max(m, x[i]);
    return m;
}

/// out = in.cast<float>() (resized to in's shape), converted on the host threads for large sizes:
/// each value is rounded on its own, so the copy is the same for any thread count.
template <class In, class Out>
void to_float(const In& in, Out& out)
{
    out.resize(in.rows(), in.cols());
    const double* x = in.data();
    float* y = out.data();
    const Index count = in.size();
    MS_PARALLEL_FOR(count)
    for (Index i = 0; i < count; ++i) y[i] = static_cast<float>(x[i]);
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
///
/// No per-thread copies on the stack: an OpenMP array reduction (`reduction(min : l[:cols])`)
/// keeps one copy of lo and hi per thread on that thread's stack, which overflowed it for one row
/// of 1,500,000 columns. Narrow rows give each thread a heap copy of lo/hi
/// (at most kWideColumns values each); wide rows are split by columns instead, so no thread
/// needs a copy at all and the extra memory stays O(threads · kWideColumns) for any width.
inline bool float_column_range(const float* x, std::size_t rows, std::size_t cols, std::vector<float>& lo,
                               std::vector<float>& hi)
{
    constexpr std::size_t kWideColumns = 256;
    lo.assign(x, x + cols);
    hi = lo;
    float* l = lo.data();
    float* h = hi.data();
    auto scan = [x, cols](std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1, float* lp, float* hp) {
        bool bad = false;
        for (std::size_t i = r0; i < r1; ++i) {
            const float* r = x + i * cols;
            for (std::size_t d = c0; d < c1; ++d) {
                bad |= !(std::fabs(r[d]) <= std::numeric_limits<float>::max());
                lp[d - c0] = std::min(lp[d - c0], r[d]);
                hp[d - c0] = std::max(hp[d - c0], r[d]);
            }
        }
        return bad;
    };
    bool bad = false;
#if defined(_OPENMP)
    const bool parallel = rows * cols >= static_cast<std::size_t>(kParallelMinValues);
    if (cols > kWideColumns) {
        // Tiles of a column block × a slice of rows, each with its own lo/hi of the block's columns.
        // Rows are sliced only as far as the blocks leave threads idle (384 columns are 2 blocks:
        // 2 of 16 threads scanned 100,000 × 384 values, 0.13 s), so the copies stay
        // O(threads · kWideColumns) values for any width.
        const std::size_t blocks = (cols + kWideColumns - 1) / kWideColumns;
        const std::size_t T = parallel ? static_cast<std::size_t>(host_threads()) : 1;
        const std::size_t slices = std::max<std::size_t>(1, std::min(rows, (2 * T + blocks - 1) / blocks));
        std::vector<float> tl(slices * cols), th(slices * cols);
#pragma omp parallel for schedule(dynamic, 1) reduction(|| : bad) num_threads(host_threads()) if (parallel)
        for (std::size_t task = 0; task < slices * blocks; ++task) {
            const std::size_t s = task / blocks, b = task % blocks;
            const std::size_t c0 = b * kWideColumns, c1 = std::min(cols, c0 + kWideColumns);
            const std::size_t r0 = rows * s / slices, r1 = rows * (s + 1) / slices;
            float* lp = tl.data() + s * cols + c0;
            float* hp = th.data() + s * cols + c0;
            std::copy(x + r0 * cols + c0, x + r0 * cols + c1, lp);
            std::copy(x + r0 * cols + c0, x + r0 * cols + c1, hp);
            bad = scan(r0, r1, c0, c1, lp, hp) || bad;
        }
        for (std::size_t s = 0; s < slices; ++s)
            for (std::size_t d = 0; d < cols; ++d) {
                l[d] = std::min(l[d], tl[s * cols + d]);
                h[d] = std::max(h[d], th[s * cols + d]);
            }
        return !bad;
    }
#pragma omp parallel num_threads(host_threads()) if (parallel) reduction(|| : bad)
    {
        std::vector<float> tl(lo), th(hi);  // this thread's copy, on the heap
        const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
        const std::size_t T = static_cast<std::size_t>(omp_get_num_threads());
        const std::size_t r0 = rows * t / T, r1 = rows * (t + 1) / T;
        bad = scan(r0, r1, 0, cols, tl.data(), th.data()) || bad;
#pragma omp critical(meanshift_float_column_range)
        for (std::size_t d = 0; d < cols; ++d) {
            l[d] = std::min(l[d], tl[d]);
            h[d] = std::max(h[d], th[d]);
        }
    }
#else
    bad = scan(0, rows, 0, cols, l, h);
#endif
    return !bad;
}

}  // namespace meanshift::detail
