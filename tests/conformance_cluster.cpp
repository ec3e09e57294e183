// Conformance through the public API: meanshift::cluster() on the backend under test, against
// known modes of well-separated Gaussian blobs (one at the origin) and against the same call on
// the serial oracle, for every bandwidth model, data far from the origin, seeds distinct from the
// data, fixed-iteration mode, ragged n and every topology the backend accepts.
//
// Mode tolerance (tolerance mode, t_d = 1e-4 bandwidths): near a blob's mode the update contracts
// distances by ρ = σ²/(σ² + h²) ≤ 0.5 here, so a run stops within t_d·ρ/(1-ρ) ≤ t_d of its fixed
// point, and a float32 backend's fixed point is within step_tolerance/(1-ρ) ≤ 2·step_tolerance of
// the float64 one. Backend and oracle modes therefore agree within 2·t_d + 2·step_tolerance; we
// allow twice that, plus float32 rounding of the returned coordinates (2^-23 |x|).
#include "conformance.hpp"

using namespace meanshift;
using namespace mstest;

namespace {

/// Prepared-unit extent R of data with bandwidth h (centred on the bounding box, whitened).
double prepared_extent(const MatrixF& x, const std::vector<double>& h)
{
    double r = 0;
    for (Index d = 0; d < x.cols(); ++d)
        r = std::max(r, 0.5 * double(x.col(d).maxCoeff() - x.col(d).minCoeff()) / h[std::size_t(d)]);
    return r;
}

/// Backend vs oracle: same partition, modes and centres within tol_bw bandwidths (+ output rounding).
void check_against_oracle(const Result& got, const Result& want, const std::vector<double>& h, double tol_bw)
{
    CHECK(got.backend == conf::backend());
    CHECK(same_partition(got.labels, want.labels));
    CHECK(got.cluster_sizes == want.cluster_sizes);
    auto worst = [&](const MatrixF& a, const MatrixF& b) {
        double w = 0;
        if (a.rows() != b.rows() || a.cols() != b.cols()) return 1e300;
        for (Index i = 0; i < a.rows(); ++i)
            for (Index d = 0; d < a.cols(); ++d) {
                const double allowed = tol_bw * h[std::size_t(d)] + std::ldexp(std::abs(double(b(i, d))), -23);
                w = std::max(w, std::abs(double(a(i, d)) - double(b(i, d))) / allowed);
            }
        return w;
    };
    INFO("tolerance " << tol_bw << " bandwidths");
    CHECK(worst(got.modes, want.modes) <= 1.0);
    if (got.cluster_sizes == want.cluster_sizes) {
        // Centres are compared through the partition (labels may differ where sizes tie).
        MatrixF mapped(want.centres.rows(), want.centres.cols());
        for (std::size_t i = 0; i < got.labels.size(); ++i) mapped.row(want.labels[i]) = got.centres.row(got.labels[i]);
        CHECK(worst(mapped, want.centres) <= 1.0);
    }
}

double mode_tolerance(double t_d, double R)
{
    return 4.0 * (t_d + conf::step_tolerance(R));
}

/// Runs blobs through the backend under test and the oracle; checks known modes and agreement.
void run_blobs(const Blobs& b, const std::vector<double>& sigma, const Bandwidth& bw, const std::vector<double>& h,
               const Eigen::Ref<const MatrixF>* seeds = nullptr)
{
    const Options o = conf::options(bw);
    const Result got = cluster(b.data, o, seeds);
    const Result want = cluster(b.data, conf::options(bw, "serial"), seeds);
    const Index m = seeds ? seeds->rows() : b.data.rows();
    check_result_shape(got, m, int(b.data.cols()), o.max_iterations);
    for (bool c : got.converged) CHECK(c);
    if (!seeds) check_blobs_recovered(got, b, blob_tolerance(b, sigma), h);
    check_against_oracle(got, want, h, mode_tolerance(o.tolerance, prepared_extent(b.data, h)));
}

}  // namespace

TEST_CASE("conformance cluster: known modes of 3-5 isotropic blobs, one at the origin, k = 1 ... 16")
{
    auto rng = make_rng("conf-blobs-iso");
    MSTEST_SEED_INFO();
    for (int k : {1, 2, 3, 7, 16}) {
        const int nb = 3 + k % 3;
        const std::vector<int> all_sizes{110, 90, 70, 50, 30};
        const std::vector<int> sizes(all_sizes.begin(), all_sizes.begin() + nb);
        // Keep typical neighbour distances (√(2k) σ) near 2 bandwidths in any k, so that a blob is one
        // mode of the kernel density estimate and not a cloud of isolated points.
        const std::vector<double> sigma(std::size_t(nb), std::min(0.7, 1.4 / std::sqrt(double(k))));
        INFO("k = " << k << ", " << nb << " blobs");
        run_blobs(make_blobs(rng, k, sizes, sigma, 12.0), sigma, Bandwidth::isotropic(1.0),
                  std::vector<double>(std::size_t(k), 1.0));
    }
}

TEST_CASE("conformance cluster: diagonal bandwidth (different units per dimension)")
{
    auto rng = make_rng("conf-blobs-diag");
    MSTEST_SEED_INFO();
    const std::vector<double> h{1.0, 5.0, 0.2};
    const std::vector<double> sigma{0.7, 0.7, 0.7, 0.7};
    run_blobs(make_blobs(rng, 3, {100, 80, 60, 40}, sigma, 12.0, 0.0, h), sigma, Bandwidth::diagonal(h), h);
}

TEST_CASE("conformance cluster: per-point bandwidths")
{
    auto rng = make_rng("conf-blobs-perpoint");
    MSTEST_SEED_INFO();
    for (int k : {2, 5}) {
        INFO("k = " << k);
        const std::vector<double> sigma{0.6, 0.6, 0.6};
        const Blobs b = make_blobs(rng, k, {90, 70, 50}, sigma, 12.0);
        std::uniform_real_distribution<double> U(0.8, 1.25);
        MatrixD hp(b.data.rows(), k);
        for (Index i = 0; i < hp.rows(); ++i)
            for (int d = 0; d < k; ++d) hp(i, d) = U(rng);
        run_blobs(b, sigma, Bandwidth::per_point(hp), std::vector<double>(std::size_t(k), 1.0));
    }
}

TEST_CASE("conformance cluster: exponential_last (paper Sec. IV)")
{
    auto rng = make_rng("conf-blobs-explast");
    MSTEST_SEED_INFO();
    const std::vector<double> sigma{0.6, 0.6, 0.6};
    // Blobs spread along x; the last coordinate (which sets H_i) stays within ±0.9.
    const Blobs b = make_blobs(rng, 3, {90, 70, 50}, sigma, 12.0, 0.0, {1.0, 1.0, 0.3});
    run_blobs(b, sigma, Bandwidth::exponential_last({1.0, 0.8, 0.09}), {1.0, 1.0, 0.3});
}

TEST_CASE("conformance cluster: data far from the origin (offset 1e4)")
{
    auto rng = make_rng("conf-blobs-far");
    MSTEST_SEED_INFO();
    const std::vector<double> sigma{0.7, 0.7, 0.7};
    run_blobs(make_blobs(rng, 2, {90, 70, 50}, sigma, 12.0, 1e4), sigma, Bandwidth::isotropic(1.0), {1.0, 1.0});
    const Blobs b = make_blobs(rng, 3, {90, 70, 50}, sigma, 12.0, -1e4);
    MatrixD hp = MatrixD::Constant(b.data.rows(), 3, 1.0);
    for (Index i = 0; i < hp.rows(); i += 2) hp.row(i).setConstant(1.2);
    run_blobs(b, sigma, Bandwidth::per_point(hp), {1.0, 1.0, 1.0});
}

TEST_CASE("conformance cluster: seeds distinct from the data")
{
    auto rng = make_rng("conf-seeds");
    MSTEST_SEED_INFO();
    const std::vector<double> sigma{0.7, 0.7, 0.7, 0.7};
    const Blobs b = make_blobs(rng, 3, {100, 80, 60, 40}, sigma, 12.0);
    MatrixF seeds(37, 3);
    std::uniform_real_distribution<double> U(-1.0, 1.0);
    for (Index q = 0; q < seeds.rows(); ++q)
        for (int d = 0; d < 3; ++d) seeds(q, d) = float(b.centres(q % 4, d) + U(rng));
    const Eigen::Ref<const MatrixF> sr(seeds);
    run_blobs(b, sigma, Bandwidth::isotropic(1.0), {1, 1, 1}, &sr);
    const Result got = cluster(b.data, conf::options(Bandwidth::isotropic(1.0)), &sr);
    CHECK(got.cluster_sizes == std::vector<Index>{10, 9, 9, 9});
    for (Index q = 0; q < seeds.rows(); ++q)
        for (int d = 0; d < 3; ++d) CHECK(std::abs(got.modes(q, d) - b.centres(q % 4, d)) < 0.6);
}

TEST_CASE("conformance cluster: fixed-iteration mode, every mode exactly N iterations")
{
    auto rng = make_rng("conf-fixed");
    MSTEST_SEED_INFO();
    const int N = 12;
    const std::vector<double> sigma{0.05, 0.7, 0.4};
    const Blobs b = make_blobs(rng, 2, {80, 60, 40}, sigma, 12.0);
    for (const Bandwidth& bw : {Bandwidth::isotropic(1.0), Bandwidth::per_point(MatrixD::Constant(180, 2, 0.9))}) {
        Options o = conf::options(bw);
        o.fixed_iterations = N;
        Options w = o;
        w.backend = "serial";
        const Result got = cluster(b.data, o);
        const Result want = cluster(b.data, w);
        check_result_shape(got, 180, 2, N);
        Index not_n = 0;
        for (int it : got.iterations) not_n += it != N;
        CHECK(not_n == 0);
        for (bool c : got.converged) CHECK(c);
        CHECK(got.timing.iterations == N);
        check_blobs_recovered(got, b, blob_tolerance(b, sigma), {1, 1});
        // Errors of N steps add up at most linearly (the map contracts around the modes).
        const double tol = N * conf::step_tolerance(prepared_extent(b.data, {1, 1}));
        check_against_oracle(got, want, {1, 1}, tol);
        // And directly against plain Gaussian mean shift written in the test (reference.hpp).
        const MatrixD x = b.data.cast<double>();
        const MatrixD var =
            bw.shared() ? ref::variances_shared(x.rows(), {1.0, 1.0}) : ref::variances_per_point(bw.per_point_values());
        const ref::Run r = ref::run(ref::Model(x, var), x, N, -1, {1, 1});
        INFO("against the independent reference, tolerance " << tol << " bandwidths");
        CHECK(max_abs_diff(got.modes, r.modes) <= tol);
    }
}

TEST_CASE("conformance cluster: ragged n (1, 2, 7, 63, 64, 65, 1000, 1023)")
{
    auto rng = make_rng("conf-ragged");
    MSTEST_SEED_INFO();
    for (int n : {1, 2, 7, 63, 64, 65, 1000, 1023}) {
        INFO("n = " << n);
        const int nb = std::min(n, 3);
        std::vector<int> sizes;
        for (int j = 0, left = n; j < nb; ++j) {
            const int s = j + 1 == nb ? left : std::max(1, n / (j + 2));
            sizes.push_back(s);
            left -= s;
        }
        const std::vector<double> sigma(std::size_t(nb), 0.2);
        const Blobs b = make_blobs(rng, 2, sizes, sigma, 12.0);
        const Options o = conf::options(Bandwidth::isotropic(1.0));
        const Result got = cluster(b.data, o);
        const Result want = cluster(b.data, conf::options(Bandwidth::isotropic(1.0), "serial"));
        check_result_shape(got, n, 2, o.max_iterations);
        check_blobs_recovered(got, b, blob_tolerance(b, sigma), {1, 1}, false);
        check_against_oracle(got, want, {1, 1}, mode_tolerance(o.tolerance, prepared_extent(b.data, {1, 1})));
    }
}

TEST_CASE("conformance cluster: every accepted topology gives the oracle's answer")
{
    auto rng = make_rng("conf-topologies");
    MSTEST_SEED_INFO();
    const std::vector<double> sigma{0.7, 0.7, 0.7};
    const Blobs b = make_blobs(rng, 3, {130, 97, 70}, sigma, 12.0);
    auto be = make_backend(conf::backend());
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        // A stand-in PreparedData of the same shape to ask the backend which topologies it takes.
        const PreparedData shape = random_prepared(rng, b.data.rows(), 3, model);
        const Bandwidth bw = model == KernelModel::Shared
                                 ? Bandwidth::isotropic(1.0)
                                 : Bandwidth::per_point(MatrixD::Constant(b.data.rows(), 3, 1.1));
        const Result want = cluster(b.data, conf::options(bw, "serial"));
        for (const Topology& t : conf::topologies(*be, shape)) {
            INFO("topology " << t.to_string());
            Options o = conf::options(bw);
            o.topology = t;
            const Result got = cluster(b.data, o);
            CHECK(got.topology.to_string() == t.to_string());
            check_blobs_recovered(got, b, blob_tolerance(b, sigma), {1, 1, 1});
            check_against_oracle(got, want, {1, 1, 1}, mode_tolerance(o.tolerance, prepared_extent(b.data, {1, 1, 1})));
        }
    }
}

TEST_CASE("conformance cluster: per-mode convergence never loses a cluster")
{
    auto rng = make_rng("conf-per-mode");
    MSTEST_SEED_INFO();
    // A very tight blob (converges in one or two steps), a wide one, a medium one and a 5-point
    // cluster: modes that finish early must not stop the others (or be moved after stopping).
    const std::vector<double> sigma{0.02, 0.8, 0.4, 0.15};
    const Blobs b = make_blobs(rng, 2, {150, 100, 60, 5}, sigma, 14.0);
    Options o = conf::options(Bandwidth::isotropic(1.0));
    o.tolerance = 1e-3;
    const Result got = cluster(b.data, o);
    check_result_shape(got, b.data.rows(), 2, o.max_iterations);
    check_blobs_recovered(got, b, blob_tolerance(b, sigma), {1, 1});
    const auto [lo, hi] = std::minmax_element(got.iterations.begin(), got.iterations.end());
    CHECK(*lo < *hi);
    for (bool c : got.converged) CHECK(c);
}

TEST_CASE("conformance cluster: a reused Clusterer re-binds new data correctly")
{
    auto rng = make_rng("conf-clusterer");
    MSTEST_SEED_INFO();
    const std::vector<double> sigma{0.6, 0.6, 0.6};
    const Blobs a = make_blobs(rng, 3, {70, 50, 30}, sigma, 12.0);
    const Blobs b = make_blobs(rng, 2, {41, 23, 11}, sigma, 12.0, 300.0);
    Clusterer c(conf::options(Bandwidth::isotropic(1.0)));
    CHECK(c.backend().name() == conf::backend());
    const Result ra = c.fit(a.data);
    const Result rb = c.fit(b.data);
    const Result ra2 = c.fit(a.data);
    check_blobs_recovered(ra, a, blob_tolerance(a, sigma), {1, 1, 1});
    check_blobs_recovered(rb, b, blob_tolerance(b, sigma), {1, 1});
    check_blobs_recovered(ra2, a, blob_tolerance(a, sigma), {1, 1, 1});
    const Result wa = cluster(a.data, conf::options(Bandwidth::isotropic(1.0), "serial"));
    check_against_oracle(ra2, wa, {1, 1, 1}, mode_tolerance(1e-4, prepared_extent(a.data, {1, 1, 1})));
}

TEST_CASE("conformance cluster: after fit() the Clusterer's binding still steps on the fitted data")
{
    // Regression: the backend used to keep a raw pointer to data on fit()'s stack.
    auto rng = make_rng("conf-clusterer-binding");
    MSTEST_SEED_INFO();
    const std::vector<double> sigma{0.6, 0.6};
    const Blobs a = make_blobs(rng, 2, {60, 40}, sigma, 10.0);
    Clusterer c(conf::options(Bandwidth::isotropic(1.0)));
    CHECK_THROWS_AS(c.binding(), Error);
    (void)c.fit(a.data);
    Binding& b = c.binding();
    const PreparedData& D = b.data();
    CHECK(D.n() == 100);
    const MatrixD Q = D.points.topRows(17);
    CHECK(max_abs_diff(conf::step(b, Q), oracle_step(D, Q)) <= conf::step_tolerance(conf::extent(D.points, Q)));
}

TEST_CASE("conformance cluster: seeds far from all data are reported without support")
{
    auto rng = make_rng("conf-no-support");
    MSTEST_SEED_INFO();
    const std::vector<double> sigma{0.5, 0.5};
    const Blobs b = make_blobs(rng, 2, {50, 50}, sigma, 10.0);
    MatrixF seeds(3, 2);
    seeds.row(0) = b.data.row(0);
    seeds.row(1) << 1e5f, -1e5f;  // every weight underflows
    seeds.row(2) = b.data.row(60);
    const Options o = conf::options(Bandwidth::isotropic(1.0));
    const Eigen::Ref<const MatrixF> s(seeds);
    const Result r = cluster(b.data, o, &s);
    REQUIRE(r.no_support.size() == 3);
    CHECK_FALSE(r.no_support[0]);
    CHECK(r.no_support[1]);
    CHECK_FALSE(r.no_support[2]);
    CHECK(r.modes_without_support == 1);
    CHECK_FALSE(r.converged[1]);
    CHECK(r.converged[0]);
    CHECK(r.iterations[1] == 1);
    CHECK(r.modes(1, 0) == 1e5f);
    CHECK(r.modes(1, 1) == -1e5f);
}

TEST_CASE("conformance cluster: Alg. 7 preloading on blobs far from the origin")
{
    auto rng = make_rng("conf-preload");
    MSTEST_SEED_INFO();
    const std::vector<double> sigma{0.7, 0.7, 0.7};
    const Blobs b = make_blobs(rng, 3, {130, 97, 70}, sigma, 12.0, 1e4);
    for (const Bandwidth& bw : {Bandwidth::isotropic(1.0), Bandwidth::per_point(MatrixD::Constant(297, 3, 0.9))}) {
        Options o = conf::options(bw);
        o.backend_options.preload = Preload::On;
        const Result got = cluster(b.data, o);
        const Result want = cluster(b.data, conf::options(bw, "serial"));
        check_blobs_recovered(got, b, blob_tolerance(b, sigma), {1, 1, 1});
        check_against_oracle(got, want, {1, 1, 1}, mode_tolerance(o.tolerance, prepared_extent(b.data, {1, 1, 1})));
    }
}

TEST_CASE("conformance cluster: degenerate data (identical points, a constant dimension, duplicates)")
{
    auto rng = make_rng("conf-degenerate");
    MSTEST_SEED_INFO();
    const Options o = conf::options(Bandwidth::isotropic(1.0));
    SUBCASE("all points identical")
    {
        const MatrixF x = MatrixF::Constant(77, 3, -2.5f);
        const Result got = cluster(x, o);
        check_result_shape(got, 77, 3, o.max_iterations);
        CHECK(got.cluster_sizes == std::vector<Index>{77});
        CHECK((got.modes.array() == -2.5f).all());
        CHECK((got.centres.array() == -2.5f).all());
    }
    SUBCASE("a constant dimension and every point duplicated")
    {
        const std::vector<double> sigma{0.5, 0.5, 0.5};
        Blobs b = make_blobs(rng, 2, {60, 40, 20}, sigma, 12.0);
        MatrixF x(2 * b.data.rows(), 3);
        for (Index i = 0; i < b.data.rows(); ++i) {
            x.row(2 * i) << b.data(i, 0), 7.0f, b.data(i, 1);
            x.row(2 * i + 1) = x.row(2 * i);
        }
        const Result got = cluster(x, o);
        const Result want = cluster(x, conf::options(Bandwidth::isotropic(1.0), "serial"));
        check_result_shape(got, x.rows(), 3, o.max_iterations);
        CHECK(got.cluster_sizes == std::vector<Index>{120, 80, 40});
        for (Index i = 0; i < x.rows(); ++i) CHECK(got.modes(i, 1) == doctest::Approx(7.0).epsilon(1e-6));
        check_against_oracle(got, want, {1, 1, 1}, mode_tolerance(o.tolerance, prepared_extent(x, {1, 1, 1})));
    }
}
