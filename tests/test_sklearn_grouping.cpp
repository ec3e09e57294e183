// GroupingMethod::ScikitLearn: the kd-tree implementation (skeleton/src/core/sklearn_grouping.cpp)
// against a direct float64 transcription of sklearn.cluster.MeanShift's fit() written here (flat
// ascent from every point, intensities, reverse sort of (intensity, centre), greedy suppression,
// nearest-centre labels), on its edge cases and on blobs; and end to end through cluster() with
// the flat profile where the serial backend has it.
#include "test_data.hpp"
#include "test_support.hpp"

#include "skeleton/src/core/sklearn_grouping.hpp"

#include <meanshift/meanshift.hpp>

#include <algorithm>
#include <map>
#include <numeric>

using namespace meanshift;

namespace {

/// scikit-learn's result, written from its fit() with O(m·n) loops.
struct SkResult {
    MatrixD centres;
    std::vector<int> labels;
};

Index within(const MatrixD& X, const Eigen::RowVectorXd& y, double h)
{
    Index c = 0;
    for (Index i = 0; i < X.rows(); ++i) c += (X.row(i) - y).norm() <= h;
    return c;
}

/// _mean_shift_single_seed: mean of the points within h until the shift is ≤ 1e-3 h.
Eigen::RowVectorXd flat_ascent(const MatrixD& X, Eigen::RowVectorXd y, double h, int max_iter = 300)
{
    for (int it = 0;; ++it) {
        Eigen::RowVectorXd s = Eigen::RowVectorXd::Zero(X.cols());
        Index c = 0;
        for (Index i = 0; i < X.rows(); ++i)
            if ((X.row(i) - y).norm() <= h) {
                s += X.row(i);
                ++c;
            }
        if (c == 0) return y;
        const Eigen::RowVectorXd old = y;
        y = s / double(c);
        if ((y - old).norm() <= 1e-3 * h || it == max_iter) return y;
    }
}

/// fit()'s post-processing on given modes (intensity counted at the mode itself).
SkResult sk_postprocess(const MatrixD& X, const MatrixD& modes, double h, double eps)
{
    std::vector<std::pair<Index, std::vector<double>>> items;
    for (Index j = 0; j < modes.rows(); ++j) {
        const Index c = within(X, modes.row(j), h);
        if (c > 0) items.push_back({c, std::vector<double>(modes.row(j).data(), modes.row(j).data() + modes.cols())});
    }
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a > b; });  // reverse=True
    std::vector<std::vector<double>> kept;
    for (const auto& it : items) {
        bool unique = true;
        for (const auto& c : kept) {
            double d2 = 0;
            for (std::size_t d = 0; d < c.size(); ++d) d2 += (c[d] - it.second[d]) * (c[d] - it.second[d]);
            unique = unique && std::sqrt(d2) > eps;
        }
        if (unique) kept.push_back(it.second);
    }
    SkResult r;
    r.centres.resize(Index(kept.size()), modes.cols());
    for (std::size_t c = 0; c < kept.size(); ++c)
        for (Index d = 0; d < modes.cols(); ++d) r.centres(Index(c), d) = kept[c][std::size_t(d)];
    for (Index i = 0; i < X.rows(); ++i) {
        Index best = 0;
        for (Index c = 1; c < r.centres.rows(); ++c)
            if ((X.row(i) - r.centres.row(c)).squaredNorm() < (X.row(i) - r.centres.row(best)).squaredNorm()) best = c;
        r.labels.push_back(int(best));
    }
    return r;
}

MatrixD all_ascents(const MatrixD& X, double h)
{
    MatrixD Y(X.rows(), X.cols());
    for (Index i = 0; i < X.rows(); ++i) Y.row(i) = flat_ascent(X, X.row(i), h);
    return Y;
}

}  // namespace

TEST_CASE("sklearn grouping: radius counts are inclusive, modes without points or support are dropped")
{
    MatrixD X(4, 1);
    X << 0.0, 1.0, 2.0, 10.0;
    MatrixD Y(3, 1);
    Y << 0.0, 5.0, 10.0;
    const auto c = detail::count_within(X, Y, 1.0);
    CHECK(c == std::vector<Index>{2, 0, 1});  // 0 and 1 at distance exactly 1 from 0
    // 5.0 has no point within reach, 10.0 is flagged NoSupport: only 0.0 survives.
    const Grouping g = detail::group_like_sklearn(Y, {false, false, true}, X, 1.0);
    REQUIRE(g.centres.rows() == 1);
    CHECK(g.centres(0, 0) == 0.0);
    CHECK(g.labels == std::vector<int>{0, 0, 0, 0});
    CHECK(g.sizes == std::vector<Index>{4});
    CHECK_THROWS_AS(detail::group_like_sklearn(Y, {true, true, true}, X, 1.0), InvalidArgument);
    CHECK_THROWS_AS(group_modes(Y, 1.0, GroupingMethod::ScikitLearn), InvalidArgument);
}

TEST_CASE("sklearn grouping: equal intensities go to the lexicographically larger mode")
{
    // Two modes 0.6 apart with one point each: scikit-learn's reverse sort keeps the larger one.
    MatrixD X(2, 2);
    X << 0.0, 0.0, 0.6, 0.0;
    MatrixD Y = X;
    const Grouping g = detail::group_like_sklearn(Y, {}, X, 1.0);
    REQUIRE(g.centres.rows() == 1);
    CHECK(g.centres(0, 0) == 0.6);
    // Ties in the first coordinate fall to the second.
    MatrixD X2(2, 2);
    X2 << 1.0, -0.3, 1.0, 0.2;
    const Grouping g2 = detail::group_like_sklearn(X2, {}, X2, 1.0);
    REQUIRE(g2.centres.rows() == 1);
    CHECK(g2.centres(0, 1) == 0.2);
    // Greedy, not transitive: 0, 0.9, 1.8 with eps 1 keep 0 and 1.8 when 0 ranks first.
    MatrixD X3(7, 1);
    X3 << -0.5, 0.0, 0.0, 0.5, 0.9, 1.8, 1.8;
    MatrixD Y3(3, 1);
    Y3 << 0.0, 0.9, 1.8;
    const SkResult ref = sk_postprocess(X3, Y3, 1.0, 1.0);
    const Grouping g3 = detail::group_like_sklearn(Y3, {}, X3, 1.0);
    REQUIRE(g3.centres.rows() == ref.centres.rows());
    CHECK(g3.centres.isApprox(ref.centres));
    CHECK(g3.labels == ref.labels);
}

TEST_CASE("sklearn grouping: equals the direct transcription of scikit-learn on blobs (k = 2, 3, 5)")
{
    MSTEST_SEED_INFO();
    for (int k : {2, 3, 5}) {
        CAPTURE(k);
        auto rng = mstest::make_rng("sklearn-blobs-" + std::to_string(k));
        const auto b = mstest::make_blobs(rng, k, {120, 90, 60, 30}, {0.4, 0.5, 0.3, 0.6}, 3.0);
        const MatrixD X = b.data.cast<double>();
        for (double h : {0.8, 1.3}) {
            CAPTURE(h);
            const MatrixD modes = all_ascents(X, h);
            const SkResult ref = sk_postprocess(X, modes, h, h);
            // The library works in bandwidth units: data / h, eps 1.
            const Grouping g = detail::group_like_sklearn(modes / h, {}, X / h, 1.0);
            REQUIRE(g.centres.rows() == ref.centres.rows());
            CHECK((g.centres * h - ref.centres).cwiseAbs().maxCoeff() < 1e-12);
            CHECK(g.labels == ref.labels);
            const Index total = std::accumulate(g.sizes.begin(), g.sizes.end(), Index(0));
            CHECK(total == X.rows());
        }
    }
}

TEST_CASE("sklearn grouping: cluster() with the flat profile from every point matches scikit-learn's fit")
{
    MSTEST_SEED_INFO();
    auto backend = make_backend("serial");
    if (!backend->supports_profile(KernelProfile::Flat)) {
        MESSAGE("serial backend has no flat profile yet: end-to-end check skipped");
        return;
    }
    for (const char* name : {"serial", "openmp"}) {
        INFO("backend " << std::string(name));
        auto rng = mstest::make_rng("sklearn-e2e");
        const auto b = mstest::make_blobs(rng, 2, {100, 100, 100}, {0.4, 0.4, 0.4}, 3.0, 5.0);
        const MatrixD X = b.data.cast<double>();
        const double h = 1.1;
        const SkResult ref = sk_postprocess(X, all_ascents(X, h), h, h);
        Options o;
        o.backend = name;
        o.bandwidth = Bandwidth::isotropic(h);
        o.kernel = KernelProfile::Flat;
        o.seeding = Seeding::AllPoints;
        o.tolerance = 1e-3;
        o.max_iterations = 300;
        o.grouping = GroupingMethod::ScikitLearn;
        o.merge_eps = 1.0;
        const Result r = cluster(b.data, o);
        REQUIRE(r.centres.rows() == ref.centres.rows());
        CHECK((r.centres.cast<double>() - ref.centres).cwiseAbs().maxCoeff() < 1e-3 * h);
        CHECK(r.labels == ref.labels);
        CHECK(r.labels.size() == std::size_t(X.rows()));
    }
}

TEST_CASE("sklearn grouping: scikit-learn's test_cluster_intensity_tie, through cluster() with the flat profile")
{
    // sklearn/cluster/tests/test_mean_shift.py: two groups of three points, equal intensities;
    // scikit-learn labels them [1,1,1,0,0,0] and, with the rows swapped, [0,0,0,1,1,1].
    if (!make_backend("serial")->supports_profile(KernelProfile::Flat)) {
        MESSAGE("serial backend has no flat profile yet: skipped");
        return;
    }
    MatrixF a(6, 2), b(6, 2);
    a << 1, 1, 2, 1, 1, 0, 4, 7, 3, 5, 3, 6;
    b << 4, 7, 3, 5, 3, 6, 1, 1, 2, 1, 1, 0;
    Options o;
    o.backend = "serial";
    o.bandwidth = Bandwidth::isotropic(2.0);
    o.kernel = KernelProfile::Flat;
    o.seeding = Seeding::AllPoints;
    o.max_iterations = 300;
    o.grouping = GroupingMethod::ScikitLearn;
    o.merge_eps = 1.0;
    CHECK(cluster(a, o).labels == std::vector<int>{1, 1, 1, 0, 0, 0});
    CHECK(cluster(b, o).labels == std::vector<int>{0, 0, 0, 1, 1, 1});
}
