// Conformance of the k-nearest-neighbour search (Backend::nearest_distances): the
// backend under test against a float64 brute force written here, in 1-70 dimensions, with the
// query among the points (distance 0), duplicates, queries apart from the points, data far from
// the origin; the bandwidth selection through the backend against the serial (host) search; and
// bad arguments.
#include "conformance.hpp"

#include <meanshift/bandwidth_selection.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace meanshift;
using namespace mstest;

namespace {

/// The count smallest squared distances of every query to the points, float64 brute force.
MatrixD brute(const MatrixF& points, const MatrixF& queries, int count)
{
    MatrixD out(queries.rows(), count);
    std::vector<double> d2(static_cast<std::size_t>(points.rows()));
    for (Index i = 0; i < queries.rows(); ++i) {
        for (Index j = 0; j < points.rows(); ++j)
            d2[std::size_t(j)] = (queries.row(i).cast<double>() - points.row(j).cast<double>()).squaredNorm();
        std::sort(d2.begin(), d2.end());
        for (int c = 0; c < count; ++c) out(i, c) = d2[std::size_t(c)];
    }
    return out;
}

/// Worst |got - want| relative to the query's scale: float32 differences of coordinates of size
/// |x| lose ~|x|·2^-24 each, so squared distances carry an error of ~2·sqrt(D²)·|x|·k·2^-24.
double worst_error(const MatrixD& got, const MatrixD& want, double coordinate_scale, int k)
{
    double worst = 0;
    for (Index i = 0; i < got.rows(); ++i)
        for (Index c = 0; c < got.cols(); ++c) {
            const double allowed = 1e-12 + 4e-6 * want(i, c) +
                                   4.0 * k * coordinate_scale * std::ldexp(1.0, -24) *
                                       (std::sqrt(want(i, c)) + coordinate_scale * std::ldexp(1.0, -24));
            worst = std::max(worst, std::abs(got(i, c) - want(i, c)) / allowed);
        }
    return worst;
}

}  // namespace

TEST_CASE("conformance knn: nearest_distances against float64 brute force, 1-70 dimensions, counts 1-64")
{
    auto be = make_backend(conf::backend());
    if (be->max_neighbours() == 0) {
        MESSAGE("skipped: backend '" << conf::backend() << "' has no nearest-neighbour search");
        return;
    }
    auto rng = make_rng("conf-knn");
    MSTEST_SEED_INFO();
    std::normal_distribution<float> N(0.0f, 1.0f);
    for (int k : {1, 2, 3, 7, 16, 17, 70})
        for (double offset : {0.0, 1e4}) {
            const Index n = 700;
            MatrixF points(n, k);
            for (Index i = 0; i < n; ++i)
                for (int d = 0; d < k; ++d) points(i, d) = float(offset) + float(3 * (i % 5)) + N(rng);
            for (Index i = 0; i < 20; ++i) points.row(n - 1 - i) = points.row(i);  // duplicates
            MatrixF queries(130, k);
            queries.topRows(100) = points.topRows(100);  // queries among the points: themselves at 0
            for (Index i = 100; i < 130; ++i)
                for (int d = 0; d < k; ++d) queries(i, d) = float(offset) + 4.0f * N(rng);
            for (int count : {1, 7, 51, std::min(64, be->max_neighbours())}) {
                INFO("k = " << k << ", offset " << offset << ", count " << count);
                const MatrixD got = be->nearest_distances(points, queries, count);
                const MatrixD want = brute(points, queries, count);
                REQUIRE(got.rows() == queries.rows());
                REQUIRE(got.cols() == count);
                for (Index i = 0; i < 100; ++i) CHECK(got(i, 0) == 0.0);
                for (Index i = 0; i < got.rows(); ++i)
                    for (int c = 1; c < count; ++c) CHECK(got(i, c) >= got(i, c - 1));
                CHECK(worst_error(got, want, std::max(1.0, offset), k) <= 1.0);
            }
        }
}

TEST_CASE("conformance knn: adaptive bandwidths and knn_distances through the backend equal the host search's")
{
    auto rng = make_rng("conf-knn-adaptive");
    MSTEST_SEED_INFO();
    const Blobs b = make_blobs(rng, 3, {300, 200, 100}, {0.3, 1.0, 3.0}, 12.0);
    for (int k : {1, 10, 40}) {
        INFO("k = " << k);
        const std::vector<double> host = knn_distances(b.data, k);
        const std::vector<double> got = knn_distances(b.data, k, {}, conf::backend());
        REQUIRE(got.size() == host.size());
        double worst = 0;
        for (std::size_t i = 0; i < got.size(); ++i)
            worst = std::max(worst, std::abs(got[i] - host[i]) / (1e-6 + host[i]));
        CHECK(worst <= 1e-4);
    }
    // The default rank of 600 points (25: the exact search) and a sampled one (200 > sample_k = 50).
    for (int k : {0, 200}) {
        INFO("adaptive k = " << k);
        AdaptiveBandwidthOptions o;
        o.k = k;
        const MatrixD host = adaptive_bandwidths(b.data, o);
        o.backend = conf::backend();
        const MatrixD got = adaptive_bandwidths(b.data, o);
        REQUIRE(got.rows() == host.rows());
        CHECK(((got - host).array().abs() / host.array()).maxCoeff() <= 1e-4);
    }
}

TEST_CASE("conformance knn: bad arguments are InvalidArgument")
{
    auto be = make_backend(conf::backend());
    if (be->max_neighbours() == 0) return;
    MatrixF p = MatrixF::Random(10, 3), q = MatrixF::Random(4, 3);
    CHECK_THROWS_AS(be->nearest_distances(p, q, 0), InvalidArgument);
    CHECK_THROWS_AS(be->nearest_distances(p, q, 11), InvalidArgument);  // count > n
    CHECK_THROWS_AS(be->nearest_distances(p, MatrixF::Random(4, 2), 1), InvalidArgument);
    CHECK_THROWS_AS(be->nearest_distances(MatrixF(0, 3), q, 1), InvalidArgument);
    MatrixF bad = q;
    bad(2, 1) = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_AS(be->nearest_distances(p, bad, 1), InvalidArgument);
    if (be->max_neighbours() < std::numeric_limits<int>::max()) {
        MatrixF big = MatrixF::Random(be->max_neighbours() + 5, 3);
        CHECK_THROWS_AS(be->nearest_distances(big, q, be->max_neighbours() + 1), InvalidArgument);
    }
}
