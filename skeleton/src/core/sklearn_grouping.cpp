// GroupingMethod::ScikitLearn (sklearn_grouping.hpp): sklearn.cluster.MeanShift's ranking,
// suppression and labelling, with kd-trees instead of its per-mode radius queries in Python.
#include "skeleton/src/core/sklearn_grouping.hpp"

#include "skeleton/src/core/parallel.hpp"

#include <meanshift/errors.hpp>

#include <nanoflann.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace meanshift::detail {
namespace {

/// Rows of a row-major float64 matrix as nanoflann reads them.
struct Rows {
    const MatrixD& m;
    std::size_t kdtree_get_point_count() const { return std::size_t(m.rows()); }
    double kdtree_get_pt(std::size_t i, std::size_t d) const { return m(Index(i), Index(d)); }
    template <class Box>
    bool kdtree_get_bbox(Box&) const
    {
        return false;
    }
};
using Tree = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<double, Rows>, Rows, -1, std::size_t>;

/// nanoflann result set that only counts the points with squared distance ≤ r2. nanoflann admits
/// a leaf point when dist < worstDist(), so worstDist() is the next double above r2 and the
/// inclusive test (scikit-learn's radius_neighbors keeps d ≤ r) is made here.
struct CountWithin {
    double r2;
    double above;
    Index count = 0;
    explicit CountWithin(double radius2)
        : r2(radius2), above(std::nextafter(radius2, std::numeric_limits<double>::infinity()))
    {
    }
    void init() {}
    void clear() { count = 0; }
    std::size_t size() const { return std::size_t(count); }
    bool full() const { return true; }
    bool addPoint(double dist, std::size_t)
    {
        if (dist <= r2) ++count;
        return true;
    }
    double worstDist() const { return above; }
};

/// Leaf size of the trees: small leaves suit the short radius queries of mean shift's modes.
constexpr std::size_t kLeaf = 16;

}  // namespace

std::vector<Index> count_within(const MatrixD& points, const MatrixD& queries, double radius)
{
    std::vector<Index> count(static_cast<std::size_t>(queries.rows()), 0);
    if (points.rows() == 0 || queries.rows() == 0) return count;
    Rows rows{points};
    Tree tree(int(points.cols()), rows, nanoflann::KDTreeSingleIndexAdaptorParams(kLeaf));
    tree.buildIndex();
    const double r2 = radius * radius;
    const Index m = queries.rows();
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 64) num_threads(host_threads()) if (m * points.cols() >= 4096)
#endif
    for (Index j = 0; j < m; ++j) {
        CountWithin within(r2);
        tree.findNeighbors(within, queries.row(j).data(), nanoflann::SearchParams());
        count[std::size_t(j)] = within.count;
    }
    return count;
}

std::vector<int> nearest_rows(const MatrixD& centres, const MatrixD& queries)
{
    std::vector<int> nearest(static_cast<std::size_t>(queries.rows()), 0);
    if (centres.rows() <= 1 || queries.rows() == 0) return nearest;
    Rows rows{centres};
    Tree tree(int(centres.cols()), rows, nanoflann::KDTreeSingleIndexAdaptorParams(kLeaf));
    tree.buildIndex();
    const Index n = queries.rows();
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(host_threads()) if (n * centres.cols() >= 4096)
#endif
    for (Index i = 0; i < n; ++i) {
        std::size_t idx = 0;
        double d2 = 0;
        tree.knnSearch(queries.row(i).data(), 1, &idx, &d2);
        nearest[std::size_t(i)] = static_cast<int>(idx);
    }
    return nearest;
}

Grouping group_like_sklearn(const MatrixD& modes, const std::vector<bool>& no_support, const MatrixD& points,
                            double eps)
{
    if (!std::isfinite(eps) || eps < 0)
        throw InvalidArgument("scikit-learn grouping: eps must be finite and >= 0, got " + std::to_string(eps));
    if (modes.cols() != points.cols())
        throw InvalidArgument("scikit-learn grouping: modes and points differ in dimension");
    const Index m = modes.rows(), k = modes.cols();
    // Seeds that reach the same basin often end on bitwise the same mode (the flat profile's last
    // step averages the same points): the lexicographic sort that breaks scikit-learn's ties also
    // gathers those duplicates, so each distinct mode is counted, ranked and tested once.
    std::vector<Index> order;
    order.reserve(std::size_t(m));
    for (Index j = 0; j < m; ++j)
        if (no_support.empty() || !no_support[std::size_t(j)]) order.push_back(j);
    auto lex_greater = [&](Index a, Index b) {
        for (Index d = 0; d < k; ++d)
            if (modes(a, d) != modes(b, d)) return modes(a, d) > modes(b, d);
        return false;
    };
    std::sort(order.begin(), order.end(),
              [&](Index a, Index b) { return lex_greater(a, b) || (!lex_greater(b, a) && a < b); });
    std::vector<Index> distinct;  // first index of each run of equal modes, lexicographically descending
    for (std::size_t r = 0; r < order.size(); ++r)
        if (r == 0 || lex_greater(order[r - 1], order[r])) distinct.push_back(order[r]);
    MatrixD U(static_cast<Index>(distinct.size()), k);
    MS_PARALLEL_FOR(U.size())
    for (Index u = 0; u < U.rows(); ++u) U.row(u) = modes.row(distinct[std::size_t(u)]);
    // 1. Intensities over the data; modes without a point within one bandwidth are dropped.
    const std::vector<Index> intensity = count_within(points, U, 1.0);
    std::vector<Index> ranked;
    ranked.reserve(distinct.size());
    for (Index u = 0; u < U.rows(); ++u)
        if (intensity[std::size_t(u)] > 0) ranked.push_back(u);
    if (ranked.empty())
        throw InvalidArgument("scikit-learn grouping: no data point lies within one bandwidth of any mode "
                              "(scikit-learn raises ValueError here); use other seeds or a larger bandwidth");
    // 2. sorted((intensity, centre), reverse=True): intensity descending, ties by the coordinates,
    //    lexicographically descending, which is the order the distinct modes already have.
    std::stable_sort(ranked.begin(), ranked.end(),
                     [&](Index a, Index b) { return intensity[std::size_t(a)] > intensity[std::size_t(b)]; });
    MatrixD sorted(static_cast<Index>(ranked.size()), k);
    MS_PARALLEL_FOR(sorted.size())
    for (Index r = 0; r < sorted.rows(); ++r) sorted.row(r) = U.row(ranked[std::size_t(r)]);
    // 3. Greedy suppression. A mode survives iff no earlier survivor lies within eps: that is the
    //    test by which Alg. 6 opens a new group (a mode joins the first group whose representative,
    //    its first mode, is within eps), so the survivors are the groups' first modes. (A duplicate
    //    of a survivor, at distance 0, never survives: dropping them above changes nothing.)
    const Grouping seq = group_modes(sorted, eps, GroupingMethod::Sequential);
    std::vector<char> seen(seq.sizes.size(), 0);
    std::vector<Index> kept;
    kept.reserve(seq.sizes.size());
    for (Index r = 0; r < sorted.rows(); ++r) {
        const int g = seq.labels[std::size_t(r)];
        if (!seen[std::size_t(g)]) {
            seen[std::size_t(g)] = 1;
            kept.push_back(r);  // rank order: first modes appear in increasing rank
        }
    }
    Grouping out;
    out.centres.resize(static_cast<Index>(kept.size()), k);
    for (std::size_t c = 0; c < kept.size(); ++c) out.centres.row(Index(c)) = sorted.row(kept[c]);
    // 4. Labels of the data points: their nearest kept centre.
    out.labels = nearest_rows(out.centres, points);
    out.sizes.assign(kept.size(), 0);
    for (int l : out.labels) ++out.sizes[std::size_t(l)];
    return out;
}

Grouping group_like_sklearn(const MatrixD& modes, const std::vector<bool>& no_support, const Prepared& prep,
                            const float* data, Index n, double eps)
{
    const Index k = prep.centre.size();
    MatrixD points(n, k);
    MS_PARALLEL_FOR(n * k)
    for (Index i = 0; i < n; ++i)
        for (Index d = 0; d < k; ++d) points(i, d) = (double(data[i * k + d]) - prep.centre[d]) * prep.scale[d];
    return group_like_sklearn(modes, no_support, points, eps);
}

}  // namespace meanshift::detail
