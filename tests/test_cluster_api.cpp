// cluster() / Clusterer semantics on the serial backend: result shapes, seeds, fixed-iteration and
// max-iteration modes, per-mode convergence, progress and cancellation, merge_eps in bandwidth
// units, the raw-pointer overload and strided input.
#include "checks.hpp"

#include "skeleton/src/core/parallel.hpp"
#include "skeleton/src/approx/seeding.hpp"

#include <meanshift/meanshift.hpp>

#include <random>

using namespace meanshift;
using namespace mstest;

namespace {

Options serial_options(double h = 1.0)
{
    Options o;
    o.exact = true;  // these tests count per-point modes and pairs of the exact kernel
    o.backend = "serial";
    o.bandwidth = Bandwidth::isotropic(h);
    return o;
}

}  // namespace

TEST_CASE("cluster: three blobs in 2-D, result shape, labels, centres, timing")
{
    auto rng = make_rng("api-three-blobs");
    MSTEST_SEED_INFO();
    const std::vector<double> sigma{0.7, 0.7, 0.7};
    Blobs b = make_blobs(rng, 2, {90, 70, 50}, sigma, 12.0);
    Options o = serial_options();
    Result r = cluster(b.data, o);
    check_result_shape(r, b.data.rows(), 2, o.max_iterations);
    check_blobs_recovered(r, b, blob_tolerance(b, sigma), {1.0, 1.0});
    CHECK(r.cluster_sizes == std::vector<Index>{90, 70, 50});
    CHECK(r.backend == "serial");
    CHECK(r.topology.ppus == 1);
    CHECK(r.topology.f_vppu == 1);
    CHECK(r.timing.iterations >= 2);
    CHECK(r.timing.iterations <= o.max_iterations);
    CHECK(r.timing.pair_interactions >= double(b.data.rows()) * double(b.data.rows()));
    CHECK(r.timing.seconds_total >= r.timing.seconds_iterate);
    for (bool c : r.converged) CHECK(c);
}

TEST_CASE("cluster: n = 1, n = 2 and k = 1")
{
    Options o = serial_options();
    MatrixF one(1, 3);
    one << 4.0f, -2.5f, 1e3f;
    Result r = cluster(one, o);
    check_result_shape(r, 1, 3, o.max_iterations);
    CHECK(r.labels == std::vector<int>{0});
    CHECK(r.modes == one);
    CHECK(r.centres == one);

    MatrixF two(2, 1);
    two << -6.0f, 6.0f;
    Result r2 = cluster(two, o);
    check_result_shape(r2, 2, 1, o.max_iterations);
    CHECK(r2.cluster_sizes.size() == 2);
    CHECK(r2.labels[0] != r2.labels[1]);
    CHECK(r2.modes(0, 0) == doctest::Approx(-6.0).epsilon(1e-6));
    CHECK(r2.modes(1, 0) == doctest::Approx(6.0).epsilon(1e-6));

    two << -0.5f, 0.5f;  // 1 h apart: one mode in the middle
    Result r3 = cluster(two, o);
    CHECK(r3.cluster_sizes == std::vector<Index>{2});
    CHECK(std::abs(r3.centres(0, 0)) < 1e-3);
}

TEST_CASE("cluster: seeds distinct from the data")
{
    auto rng = make_rng("api-seeds");
    MSTEST_SEED_INFO();
    const std::vector<double> sigma{0.5, 0.5, 0.5};
    Blobs b = make_blobs(rng, 3, {80, 60, 40}, sigma, 12.0);
    MatrixF seeds(11, 3);
    std::uniform_real_distribution<double> U(-1.0, 1.0);
    for (Index q = 0; q < seeds.rows(); ++q)
        for (int d = 0; d < 3; ++d) seeds(q, d) = float(b.centres(q % 2, d) + U(rng));  // blobs 0 and 1 only
    Options o = serial_options();
    const Eigen::Ref<const MatrixF> sr(seeds);
    Result r = cluster(b.data, o, &sr);
    check_result_shape(r, 11, 3, o.max_iterations);
    CHECK(r.cluster_sizes == std::vector<Index>{6, 5});
    for (Index q = 0; q < seeds.rows(); ++q) {
        CHECK(r.labels[std::size_t(q)] == (q % 2 == 0 ? 0 : 1));
        for (int d = 0; d < 3; ++d) CHECK(std::abs(r.modes(q, d) - b.centres(q % 2, d)) < 0.5);
    }
    // Raw-pointer overload with seeds gives the same answer.
    Result p = cluster(b.data.data(), b.data.rows(), 3, o, seeds.data(), seeds.rows());
    CHECK(p.modes == r.modes);
    CHECK(p.labels == r.labels);
}

TEST_CASE("cluster: fixed-iteration mode makes every mode take exactly N steps")
{
    auto rng = make_rng("api-fixed");
    MSTEST_SEED_INFO();
    Blobs b = make_blobs(rng, 2, {40, 30, 20}, {0.05, 0.8, 0.5}, 12.0);
    Options o = serial_options();
    o.fixed_iterations = 7;
    o.tolerance = 10.0;  // would stop everything after one step if it were used
    Result r = cluster(b.data, o);
    check_result_shape(r, b.data.rows(), 2, 7);
    for (int it : r.iterations) CHECK(it == 7);
    for (bool c : r.converged) CHECK(c);
    CHECK(r.timing.iterations == 7);
    CHECK(r.timing.pair_interactions == doctest::Approx(7.0 * 90 * 90));
}

TEST_CASE("cluster: max_iterations caps every mode, tolerance 0 never stops early by accident")
{
    auto rng = make_rng("api-maxit");
    MSTEST_SEED_INFO();
    Blobs b = make_blobs(rng, 2, {40, 30}, {1.0, 1.0}, 12.0);
    Options o = serial_options();
    o.max_iterations = 3;
    o.tolerance = 0.0;
    Result r = cluster(b.data, o);
    check_result_shape(r, b.data.rows(), 2, 3);
    for (std::size_t i = 0; i < r.iterations.size(); ++i) CHECK((r.iterations[i] == 3 || r.converged[i]));
    CHECK(r.timing.iterations == 3);
}

TEST_CASE("cluster: per-mode convergence; fast modes stop early, no cluster is lost")
{
    auto rng = make_rng("api-per-mode");
    MSTEST_SEED_INFO();
    // A tight blob (converges in a step or two), a wide one, and a 5-point cluster far away.
    const std::vector<double> sigma{0.02, 0.9, 0.2};
    Blobs b = make_blobs(rng, 2, {120, 80, 5}, sigma, 15.0);
    Options o = serial_options();
    Result r = cluster(b.data, o);
    check_result_shape(r, b.data.rows(), 2, o.max_iterations);
    check_blobs_recovered(r, b, blob_tolerance(b, sigma), {1.0, 1.0});
    const auto [lo, hi] = std::minmax_element(r.iterations.begin(), r.iterations.end());
    CHECK(*lo < *hi);
    CHECK(r.timing.pair_interactions < double(r.timing.iterations) * 205.0 * 205.0);  // active set shrinks
    for (bool c : r.converged) CHECK(c);
}

TEST_CASE("cluster: progress callback and cancellation")
{
    auto rng = make_rng("api-progress");
    MSTEST_SEED_INFO();
    Blobs b = make_blobs(rng, 2, {30, 20}, {0.5, 0.5}, 12.0);
    Options o = serial_options();
    int calls = 0;
    Index last_active = b.data.rows();
    bool monotone = true, total_ok = true;
    o.progress = [&](int it, Index active, Index total) {
        ++calls;
        monotone = monotone && active <= last_active && it == calls;
        total_ok = total_ok && total == 50;
        last_active = active;
        return true;
    };
    Result r = cluster(b.data, o);
    CHECK(calls == r.timing.iterations);
    CHECK(monotone);
    CHECK(total_ok);
    CHECK(last_active == 0);

    o.progress = [](int it, Index, Index) { return it < 2; };
    CHECK_THROWS_KEYWORD(Error, cluster(b.data, o), "cancel");
}

TEST_CASE("cluster: merge_eps is measured in bandwidth units (diagonal bandwidth)")
{
    // Two tight blobs 30 apart along y, where h_y = 10: 3 bandwidths apart, so two modes.
    MatrixF x(40, 2);
    auto rng = make_rng("api-merge");
    MSTEST_SEED_INFO();
    std::normal_distribution<double> N(0.0, 0.05);
    for (Index i = 0; i < 40; ++i) x.row(i) << float(N(rng)), float((i < 20 ? 0.0 : 30.0) + N(rng));
    Options o = serial_options();
    o.bandwidth = Bandwidth::diagonal({1.0, 10.0});
    for (GroupingMethod g : {GroupingMethod::Sequential, GroupingMethod::ConnectedComponents}) {
        o.grouping = g;
        o.merge_eps = 0.5;
        Result two = cluster(x, o);
        CHECK(two.cluster_sizes == std::vector<Index>{20, 20});
        o.merge_eps = 5.0;  // 5 bandwidths: the modes (< 3 bandwidths apart) merge
        Result one = cluster(x, o);
        CHECK(one.cluster_sizes == std::vector<Index>{40});
        o.merge_eps = 0.5;
        o.bandwidth = Bandwidth::diagonal({1.0, 1.0});  // now 30 bandwidths apart
        CHECK(cluster(x, o).cluster_sizes.size() == 2);
        o.bandwidth = Bandwidth::diagonal({1.0, 10.0});
    }
}

TEST_CASE("cluster: strided Eigen input, raw pointers and a reused Clusterer agree")
{
    auto rng = make_rng("api-strided");
    MSTEST_SEED_INFO();
    Blobs b = make_blobs(rng, 3, {30, 25, 20}, {0.5, 0.5, 0.5}, 12.0);
    Options o = serial_options();
    Result dense = cluster(b.data, o);

    MatrixF big = MatrixF::Constant(b.data.rows() + 3, 5, 777.0f);
    big.block(2, 1, b.data.rows(), 3) = b.data;
    const Eigen::Ref<const MatrixF> view = big.block(2, 1, b.data.rows(), 3);
    Result strided = cluster(view, o);
    CHECK(strided.modes == dense.modes);
    CHECK(strided.labels == dense.labels);

    Result raw = cluster(b.data.data(), b.data.rows(), 3, o);
    CHECK(raw.modes == dense.modes);

    Clusterer c(o);
    Blobs other = make_blobs(rng, 2, {15, 10}, {0.3, 0.3}, 12.0);
    Result a1 = c.fit(b.data);
    Result o1 = c.fit(other.data);
    Result a2 = c.fit(b.data);
    CHECK(a1.modes == dense.modes);
    CHECK(a2.modes == dense.modes);
    CHECK(o1.cluster_sizes == std::vector<Index>{15, 10});
    CHECK(c.backend().name() == "serial");
}

TEST_CASE("label_points_by_seed: the host threads give the one-thread labels, modes, sizes and flags")
{
    // 300,000 rows (past kParallelMinValues), 5,000 seeds in 37 groups, flags at every 64-bit word border.
    const Index n = 300000, S = 5000;
    const int k = 3, c = 37;
    std::mt19937_64 rng(20261127);
    detail::Prepared prep;
    prep.centre = VectorD::Constant(k, 1.5);
    prep.scale = VectorD::Constant(k, 0.5);
    Grouping g;
    g.centres = MatrixD::Random(c, k);
    g.sizes.assign(std::size_t(c), 0);
    detail::SeedAscents a;
    a.modes = MatrixD::Random(S, k);
    for (Index s = 0; s < S; ++s) {
        const int l = static_cast<int>(rng() % c);
        g.labels.push_back(l);
        ++g.sizes[std::size_t(l)];
        a.iterations.push_back(static_cast<int>(rng() % 100));
        a.converged.push_back(rng() % 3 != 0);
        a.no_support.push_back(rng() % 7 == 0);
    }
    std::vector<Index> point_seed(static_cast<std::size_t>(n));
    for (auto& s : point_seed) s = static_cast<Index>(rng() % S);

    Result one, many;
    {
        const detail::HostThreads t(1);
        detail::label_points_by_seed(one, prep, g, a, point_seed);
    }
    {
        const detail::HostThreads t(0);
        detail::label_points_by_seed(many, prep, g, a, point_seed);
    }
    CHECK(many.labels == one.labels);
    CHECK(many.cluster_sizes == one.cluster_sizes);
    CHECK(many.iterations == one.iterations);
    CHECK(many.converged == one.converged);
    CHECK(many.no_support == one.no_support);
    CHECK(many.modes == one.modes);
    CHECK(many.centres == one.centres);
    // Against the definition: row i carries seed point_seed[i]'s flags, and the labels are ranks by size.
    Index mismatches = 0;
    for (Index i = 0; i < n; ++i) {
        const std::size_t s = std::size_t(point_seed[std::size_t(i)]);
        mismatches += one.converged[std::size_t(i)] != a.converged[s] ||
                      one.no_support[std::size_t(i)] != a.no_support[s] ||
                      one.iterations[std::size_t(i)] != a.iterations[s];
    }
    CHECK(mismatches == 0);
    Index total = 0;
    for (std::size_t j = 0; j < one.cluster_sizes.size(); ++j) {
        total += one.cluster_sizes[j];
        if (j > 0) CHECK(one.cluster_sizes[j - 1] >= one.cluster_sizes[j]);
        CHECK(Index(std::count(one.labels.begin(), one.labels.end(), int(j))) == one.cluster_sizes[j]);
    }
    CHECK(total == n);
}
