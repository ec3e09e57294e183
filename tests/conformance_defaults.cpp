// Conformance of the DEFAULT options against the exact answer: where the exact answer costs little
// (seeds × points × k within the driver's exact budget) the defaults must compute it; where they
// approximate (truncated kernel, bin seeding) on a larger set, the clusters must be the exact
// ones and the centres within 0.02 bandwidths. Small, sparse and per-point sets, and positions
// after a fixed number of iterations. The exact reference runs on the float64 serial oracle.
#include "conformance.hpp"

#include <cmath>
#include <random>

using namespace meanshift;
using namespace mstest;

namespace {

constexpr double kCentreTolerance = 0.02;  // bandwidths

/// The options a user gets without setting anything but the bandwidth and the backend under test.
Options defaults(const Bandwidth& bw)
{
    Options o;
    o.backend = conf::backend();
    o.bandwidth = bw;
    return o;
}

Options exact_oracle(const Bandwidth& bw)
{
    Options o;
    o.backend = "serial";
    o.bandwidth = bw;
    o.exact = true;
    return o;
}

/// Largest |a - b| over matched rows, in bandwidths `h` (per dimension).
double worst_bw(const MatrixF& a, const MatrixF& b, const std::vector<double>& h)
{
    if (a.rows() != b.rows() || a.cols() != b.cols()) return 1e300;
    double w = 0;
    for (Index i = 0; i < a.rows(); ++i)
        for (Index d = 0; d < a.cols(); ++d)
            w = std::max(w, std::abs(double(a(i, d)) - double(b(i, d))) / h[std::size_t(d)]);
    return w;
}

/// Same partition, same sizes, centres (matched through the partition) within kCentreTolerance.
void check_same_clusters(const Result& got, const Result& want, const std::vector<double>& h)
{
    CHECK(got.backend == conf::backend());
    REQUIRE(got.labels.size() == want.labels.size());
    CHECK(same_partition(got.labels, want.labels));
    CHECK(got.cluster_sizes == want.cluster_sizes);
    if (got.cluster_sizes != want.cluster_sizes) return;
    MatrixF mapped(want.centres.rows(), want.centres.cols());
    for (std::size_t i = 0; i < got.labels.size(); ++i) mapped.row(want.labels[i]) = got.centres.row(got.labels[i]);
    const double w = worst_bw(mapped, want.centres, h);
    INFO("largest centre difference " << w << " bandwidths");
    CHECK(w <= kCentreTolerance);
}

/// Defaults on a set inside the exact budget: the run says it is exact, and matches the oracle.
void check_small(const MatrixF& x, const Bandwidth& bw, const std::vector<double>& h)
{
    const Result got = cluster(x, defaults(bw));
    const Result want = cluster(x, exact_oracle(bw));
    INFO("search: " << got.search << "; seeding: " << got.seeding);
    CHECK(std::isinf(got.cutoff));
    CHECK(got.seed_count == x.rows());  // every point a seed, no bins
    check_same_clusters(got, want, h);
}

}  // namespace

TEST_CASE("conformance defaults: small sets (20-300 points) give the exact clusters and centres")
{
    auto rng = make_rng("conf-defaults-small");
    MSTEST_SEED_INFO();
    struct Case {
        int k;
        std::vector<int> sizes;
        double sigma, spacing;
    };
    // Far-apart blobs, and blobs 3-4 bandwidths apart where the cutoff and the bins moved centres.
    const std::vector<Case> cases{{2, {12, 8}, 0.7, 10.0},
                                  {2, {60, 50, 40}, 1.0, 4.0},
                                  {3, {90, 80, 70, 60}, 0.8, 3.5},
                                  {5, {40, 35, 25}, 0.9, 4.0},
                                  {1, {30, 20}, 0.6, 3.0}};
    for (const Case& c : cases) {
        INFO("k = " << c.k << ", spacing " << c.spacing);
        const Blobs b = make_blobs(rng, c.k, c.sizes, std::vector<double>(c.sizes.size(), c.sigma), c.spacing);
        check_small(b.data, Bandwidth::isotropic(1.0), std::vector<double>(std::size_t(c.k), 1.0));
    }
}

TEST_CASE("conformance defaults: sparse sets (points a few bandwidths apart) and per-point H_i")
{
    auto rng = make_rng("conf-defaults-sparse");
    MSTEST_SEED_INFO();
    for (int k : {2, 3}) {
        INFO("k = " << k);
        // 60 points uniform in a box 25 bandwidths wide: mostly singletons and small groups.
        std::uniform_real_distribution<double> U(0.0, 12.5);
        MatrixF x(60, k);
        for (Index i = 0; i < x.rows(); ++i)
            for (int d = 0; d < k; ++d) x(i, d) = float(U(rng));
        check_small(x, Bandwidth::isotropic(0.5), std::vector<double>(std::size_t(k), 0.5));
    }
    // Per-point bandwidths within a factor 3 of each other, as a crown-shaped cloud has them.
    const Blobs b = make_blobs(rng, 3, {80, 70, 50}, {0.7, 0.7, 0.7}, 5.0);
    std::uniform_real_distribution<double> U(0.6, 1.8);
    MatrixD hp(b.data.rows(), 3);
    for (Index i = 0; i < hp.rows(); ++i) {
        const double s = U(rng);
        hp.row(i) << s, s, 2 * s;
    }
    // Centres in units of the geometric-mean bandwidth per dimension.
    std::vector<double> h(3);
    for (int d = 0; d < 3; ++d) h[std::size_t(d)] = std::exp(hp.col(d).array().log().mean());
    check_small(b.data, Bandwidth::per_point(hp), h);
}

TEST_CASE("conformance defaults: positions after a fixed number of iterations equal the exact ones")
{
    auto rng = make_rng("conf-defaults-fixed");
    MSTEST_SEED_INFO();
    const Blobs b = make_blobs(rng, 2, {70, 60, 50}, {1.0, 1.0, 1.0}, 3.5);
    for (int its : {1, 4}) {
        INFO(its << " iterations");
        Options o = defaults(Bandwidth::isotropic(1.0)), e = exact_oracle(Bandwidth::isotropic(1.0));
        o.fixed_iterations = its;
        e.fixed_iterations = its;
        const Result got = cluster(b.data, o), want = cluster(b.data, e);
        CHECK(std::isinf(got.cutoff));
        const double w = worst_bw(got.modes, want.modes, {1.0, 1.0});
        INFO("largest position difference " << w << " bandwidths");
        // The exact kernel on both: only float32 rounding separates a float32 backend from the oracle.
        CHECK(w <= conf::step_tolerance(20.0) * its);
    }
}

TEST_CASE("conformance defaults: a set beyond the exact budget approximates within 0.02 bandwidths")
{
    auto rng = make_rng("conf-defaults-large");
    MSTEST_SEED_INFO();
    // 3,000 x 2: seeds x points x k = 1.8e7 > 2^24, so the defaults truncate and seed from bins.
    const Blobs b = make_blobs(rng, 2, {1200, 1000, 800}, {0.7, 0.7, 0.7}, 10.0);
    const Bandwidth bw = Bandwidth::isotropic(1.0);
    const Result got = cluster(b.data, defaults(bw));
    const Result want = cluster(b.data, exact_oracle(bw));
    INFO("search: " << got.search << "; seeding: " << got.seeding);
    CHECK(got.seed_count < b.data.rows());  // bin seeding ran
    check_same_clusters(got, want, {1.0, 1.0});
}
