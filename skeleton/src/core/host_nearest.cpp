// The host k-nearest-neighbour search (host_nearest.hpp): nanoflann's kd-tree or brute force.
#include "skeleton/src/core/host_nearest.hpp"

#include "skeleton/src/core/array_scan.hpp"

#include <meanshift/errors.hpp>

#include <nanoflann.hpp>

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

namespace meanshift::detail {
namespace {

// Row-major float points as nanoflann sees them.
struct Cloud {
    const MatrixF& data;
    std::size_t kdtree_get_point_count() const { return std::size_t(data.rows()); }
    double kdtree_get_pt(std::size_t i, std::size_t d) const { return data(Index(i), Index(d)); }
    template <class Box>
    bool kdtree_get_bbox(Box&) const
    {
        return false;
    }
};

using KdIndex =
    nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<double, Cloud>, Cloud, -1, std::size_t>;

}  // namespace

struct HostNearest::Tree {
    Cloud cloud;
    KdIndex index;
    explicit Tree(const MatrixF& p)
        : cloud{p}, index(int(p.cols()), cloud, nanoflann::KDTreeSingleIndexAdaptorParams(10))
    {
        index.buildIndex();
    }
};

HostNearest::HostNearest(const MatrixF& points) : points_(points)
{
    if (points.cols() <= kHostTreeMaxDims) {
        tree_ = std::make_unique<Tree>(points);
        return;
    }
    // Brute force by matrix products: centred float64 copies (|q − p|² = |q|² + |p|² − 2 q·p
    // cancels less the nearer the data are to their mean) and the points' squared norms.
    centre_ = points.cast<double>().colwise().mean();
    centred_ = (points.cast<double>().rowwise() - centre_).cast<float>();
    norms_ = centred_.rowwise().squaredNorm();
}

HostNearest::~HostNearest() = default;

void HostNearest::query_rows(const MatrixF& queries, int count, Index begin, Index end, MatrixD& out) const
{
    if (!tree_) {
        brute_rows(queries, count, begin, end, out);
        return;
    }
    const Index k = points_.cols();
    std::vector<double> q(static_cast<std::size_t>(k));
    std::vector<std::size_t> idx(static_cast<std::size_t>(count));
    std::vector<double> d2(static_cast<std::size_t>(count));
    for (Index i = begin; i < end; ++i) {
        for (Index d = 0; d < k; ++d) q[std::size_t(d)] = queries(i, d);
        const std::size_t got = tree_->index.knnSearch(q.data(), std::size_t(count), idx.data(), d2.data());
        for (std::size_t j = 0; j < std::size_t(count); ++j) out(i, Index(j)) = d2[std::min(j, got - 1)];
    }
}

void HostNearest::brute_rows(const MatrixF& queries, int count, Index begin, Index end, MatrixD& out) const
{
    // Blocks of points against the rows' block: G = Q·Pᵀ by Eigen's float32 GEMM (one thread inside
    // the caller's parallel loop) screens the candidates; per row a max-heap keeps the count + 16
    // smallest estimates, which are then recomputed exactly as Σ (q − p)² in float64 (an identical
    // point is exactly 0). The screening's error is bounded (float32 rounding of the expansion); when
    // the bound cannot exclude a point outside the heap from the `count` nearest, the row is redone by
    // the exact float64 loop (rare: a near tie at the heap's edge).
    constexpr Index kPointBlock = 1024;
    constexpr int kExtra = 16;
    using Entry = std::pair<float, Index>;
    const Index n = centred_.rows(), k = centred_.cols(), rows = end - begin;
    const std::size_t c = static_cast<std::size_t>(std::min<Index>(n, count + kExtra));
    const MatrixF Q = (queries.middleRows(begin, rows).cast<double>().rowwise() - centre_).cast<float>();
    const VectorF qn = Q.rowwise().squaredNorm();
    std::vector<Entry> heaps(static_cast<std::size_t>(rows) * c, Entry{std::numeric_limits<float>::infinity(), -1});
    MatrixF G;
    for (Index p0 = 0; p0 < n; p0 += kPointBlock) {
        const Index np = std::min(kPointBlock, n - p0);
        G.noalias() = Q * centred_.middleRows(p0, np).transpose();
        for (Index i = 0; i < rows; ++i) {
            Entry* h = heaps.data() + static_cast<std::size_t>(i) * c;
            const float* g = G.row(i).data();
            for (Index j = 0; j < np; ++j) {
                const float d = qn[i] + norms_[p0 + j] - 2.0f * g[j];
                if (d < h[0].first) {
                    std::pop_heap(h, h + c);
                    h[c - 1] = {d, p0 + j};
                    std::push_heap(h, h + c);
                }
            }
        }
    }
    auto exact = [&](Index i, Index j) {
        double s = 0;
        for (Index d = 0; d < k; ++d) {
            const double t = double(queries(begin + i, d)) - double(points_(j, d));
            s += t * t;
        }
        return s;
    };
    // |estimate − D²| ≤ ~(2k + 8) float32 roundings of |q'|² + |p'|² (the magnitudes cancelled); doubled.
    const double eps = 2.0 * (2.0 * double(k) + 8.0) * std::ldexp(1.0, -24);
    const double pn_max = n > 0 ? double(norms_.maxCoeff()) : 0.0;
    std::vector<double> d2(c);
    for (Index i = 0; i < rows; ++i) {
        const Entry* h = heaps.data() + static_cast<std::size_t>(i) * c;
        for (std::size_t j = 0; j < c; ++j) d2[j] = exact(i, h[j].second);
        std::sort(d2.begin(), d2.end());
        const double bound = eps * (double(qn[i]) + pn_max);
        // Every point outside the heap has an estimate ≥ the heap's largest (h[0]): certain when
        // that minus the bound is at least the count-th exact distance (or no point is outside).
        const bool certain = static_cast<Index>(c) == n || double(h[0].first) - bound >= d2[std::size_t(count - 1)];
        if (!certain) {
            std::vector<double> all(static_cast<std::size_t>(n));
            for (Index j = 0; j < n; ++j) all[std::size_t(j)] = exact(i, j);
            std::partial_sort(all.begin(), all.begin() + count, all.end());
            std::copy(all.begin(), all.begin() + count, d2.begin());
        }
        for (int j = 0; j < count; ++j) out(begin + i, Index(j)) = d2[std::size_t(j)];
    }
}

void check_nearest_arguments(const MatrixF& points, const MatrixF& queries, int count, int max_count,
                             const std::string& who)
{
    if (points.rows() < 1 || points.cols() < 1 || queries.rows() < 1)
        throw InvalidArgument(who + ": nearest_distances needs n >= 1 points and m >= 1 queries of k >= 1 dimensions");
    if (queries.cols() != points.cols())
        throw InvalidArgument(who + ": nearest_distances: the queries have " + std::to_string(queries.cols()) +
                              " dimensions, the points " + std::to_string(points.cols()));
    const Index limit = std::min<Index>(points.rows(), max_count);
    if (count < 1 || count > limit)
        throw InvalidArgument(who + ": nearest_distances: count must be in [1, " + std::to_string(limit) + "], got " +
                              std::to_string(count));
    if (!all_finite(points.data(), points.size()) || !all_finite(queries.data(), queries.size()))
        throw InvalidArgument(who + ": nearest_distances: the points and queries must be finite");
}

}  // namespace meanshift::detail
