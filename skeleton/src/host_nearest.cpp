// The host k-nearest-neighbour search (host_nearest.hpp): nanoflann's kd-tree or brute force.
#include "skeleton/src/host_nearest.hpp"

#include "skeleton/src/array_scan.hpp"

#include <meanshift/errors.hpp>

#include <nanoflann.hpp>

#include <algorithm>
#include <vector>

namespace meanshift::detail {
namespace {

// Row-major float points as nanoflann sees them.
struct Cloud {
    const MatrixF& data;
    std::size_t kdtree_get_point_count() const { return std::size_t(data.rows()); }
    double kdtree_get_pt(std::size_t i, std::size_t d) const { return data(Index(i), Index(d)); }
    template <class Box>
    bool kdtree_get_bbox(Box&) const { return false; }
};

using KdIndex = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<double, Cloud>, Cloud, -1, std::size_t>;

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
    if (points.cols() <= kHostTreeMaxDims) tree_ = std::make_unique<Tree>(points);
}

HostNearest::~HostNearest() = default;

void HostNearest::query_rows(const MatrixF& queries, int count, Index begin, Index end, MatrixD& out) const
{
    const Index k = points_.cols(), n = points_.rows();
    std::vector<double> q(static_cast<std::size_t>(k));
    std::vector<std::size_t> idx(static_cast<std::size_t>(count));
    std::vector<double> d2(tree_ ? static_cast<std::size_t>(count) : static_cast<std::size_t>(n));
    for (Index i = begin; i < end; ++i) {
        for (Index d = 0; d < k; ++d) q[std::size_t(d)] = queries(i, d);
        if (tree_) {
            const std::size_t got = tree_->index.knnSearch(q.data(), std::size_t(count), idx.data(), d2.data());
            for (std::size_t j = 0; j < std::size_t(count); ++j) out(i, Index(j)) = d2[std::min(j, got - 1)];
            continue;
        }
        for (Index j = 0; j < n; ++j) {
            double s = 0;
            for (Index d = 0; d < k; ++d) {
                const double t = q[std::size_t(d)] - double(points_(j, d));
                s += t * t;
            }
            d2[std::size_t(j)] = s;
        }
        std::partial_sort(d2.begin(), d2.begin() + count, d2.end());
        for (int j = 0; j < count; ++j) out(i, j) = d2[std::size_t(j)];
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
