#include "skeleton/src/approx/spatial_order.hpp"
#include "skeleton/src/core/array_scan.hpp"
#include "skeleton/src/core/parallel.hpp"
#include "skeleton/src/approx/radix_sort.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <string>

namespace meanshift::detail {
namespace {

/// Sub-ranges at least this long are split as OpenMP tasks.
constexpr Index kTaskMinPoints = Index{1} << 15;

void split(const MatrixD& x, std::vector<Index>& idx, Index lo, Index hi, int leaf)
{
    const Index count = hi - lo;
    if (count <= leaf) return;
    const int k = static_cast<int>(x.cols());
    // The range's extent per dim, row by row (rows are contiguous; a dim-by-dim walk read one
    // value per row stride: at k = 1,024 and 262,144 points that pass took ~16 s of an OpenCL
    // binding on the GPU machine, 37 % of a PoCL run's host samples here). Same widest dim.
    Eigen::RowVectorXd a = x.row(idx[static_cast<std::size_t>(lo)]), b = a;
    for (Index i = lo + 1; i < hi; ++i) {
        const auto r = x.row(idx[static_cast<std::size_t>(i)]);
        a = a.cwiseMin(r);
        b = b.cwiseMax(r);
    }
    int widest = 0;
    double best = -1;
    for (int d = 0; d < k; ++d)
        if (b[d] - a[d] > best) best = b[d] - a[d], widest = d;
    const Index leaves = (count + leaf - 1) / leaf;
    const Index mid = lo + (leaves / 2) * leaf;
    std::nth_element(idx.begin() + lo, idx.begin() + mid, idx.begin() + hi,
                     [&](Index a, Index b) { return x(a, widest) < x(b, widest); });
    // The halves are independent: large ones become tasks (the order does not depend on the
    // threads; 10^7 points took ~1 s on one thread, which the GPU backends' binding waited for).
#if defined(_OPENMP)
    if (count >= kTaskMinPoints) {
        MS_PRAGMA(omp task default(shared) firstprivate(lo, mid, leaf))
        split(x, idx, lo, mid, leaf);
        MS_PRAGMA(omp task default(shared) firstprivate(mid, hi, leaf))
        split(x, idx, mid, hi, leaf);
        MS_PRAGMA(omp taskwait)
        return;
    }
#endif
    split(x, idx, lo, mid, leaf);
    split(x, idx, mid, hi, leaf);
}

}  // namespace

std::vector<Index> kd_order(const MatrixD& points, int leaf)
{
    if (leaf < 1) throw InvalidArgument("kd_order: leaf size must be >= 1, got " + std::to_string(leaf));
    const Index n = points.rows();
    std::vector<Index> order(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
#if defined(_OPENMP)
    if (n >= 2 * kTaskMinPoints && host_threads() > 1) {
        MS_PRAGMA(omp parallel num_threads(host_threads()))
        MS_PRAGMA(omp single)
        split(points, order, 0, n, leaf);
        return order;
    }
#endif
    split(points, order, 0, n, leaf);
    return order;
}

std::vector<Index> morton_order(const MatrixD& points)
{
    const Index m = points.rows();
    const int k = static_cast<int>(points.cols());
    const int dims = std::min(k, 63);
    const int bits = dims > 0 ? std::min(21, 63 / dims) : 0;
    std::vector<std::pair<std::uint64_t, Index>> keyed(static_cast<std::size_t>(m));
    if (m == 0) return {};
    Eigen::RowVectorXd lo, hi;
    column_range(points, dims, lo, hi);
    const double cells = static_cast<double>((std::uint64_t(1) << bits) - 1);
    for (Index i = 0; i < m; ++i) {
        std::uint64_t key = 0;
        for (int d = 0; d < dims; ++d) {
            const double span = hi[d] - lo[d];
            const double t = span > 0 ? (points(i, d) - lo[d]) / span : 0.0;
            // Integer arithmetic only below: 2^63 - 1 is not representable in a double.
            const auto c = static_cast<std::uint64_t>(std::min(cells, std::max(0.0, t * cells)));
            for (int b = 0; b < bits; ++b) key |= ((c >> b) & 1u) << (b * dims + d);
        }
        keyed[static_cast<std::size_t>(i)] = {key, i};
    }
    radix_sort(keyed, bits * dims);  // stable: equal keys stay in row order
    std::vector<Index> order(static_cast<std::size_t>(m));
    for (Index i = 0; i < m; ++i) order[static_cast<std::size_t>(i)] = keyed[static_cast<std::size_t>(i)].second;
    return order;
}

}  // namespace meanshift::detail
