// The serial backend (the oracle of the conformance suite) against the independent float64
// reference of reference.hpp, which shares no code with the library. Single steps on random
// PreparedData, and whole cluster() runs (so centring, whitening, per-point weights and the
// mapping back to data units are checked too) for every bandwidth model.
//
// Tolerances: both sides compute in float64, so one step agrees to ~1e-12 relative; cluster()
// returns float32 positions, so modes agree to float32 rounding of the output (2^-23 |x|) plus
// 1e-6 bandwidths.
#include "checks.hpp"
#include "reference.hpp"
#include "step_support.hpp"

#include <meanshift/meanshift.hpp>

using namespace meanshift;
using namespace mstest;

namespace {

/// Variances (n × k, prepared units) of a PreparedData as the reference wants them.
MatrixD prepared_variances(const PreparedData& D)
{
    if (D.model == KernelModel::Shared) return MatrixD::Ones(D.n(), D.k());
    return D.precision.cwiseInverse();
}

/// |a - b| per coordinate ≤ tol_bw · h_d + 2^-23 |b| (float32 rounding of the output).
void check_modes_close(const MatrixF& got, const MatrixD& want, const std::vector<double>& h, double tol_bw)
{
    REQUIRE(got.rows() == want.rows());
    REQUIRE(got.cols() == want.cols());
    double worst = 0;
    Index where = -1;
    for (Index i = 0; i < got.rows(); ++i)
        for (Index d = 0; d < got.cols(); ++d) {
            const double allowed = tol_bw * h[std::size_t(d)] + std::ldexp(std::abs(want(i, d)), -23);
            const double excess = std::abs(double(got(i, d)) - want(i, d)) / allowed;
            if (excess > worst) {
                worst = excess;
                where = i;
            }
        }
    INFO("worst mode " << where << ": error / allowed = " << worst);
    CHECK(worst <= 1.0);
}

}  // namespace

TEST_CASE("serial vs reference: one step on random data, shared and per-point kernels")
{
    auto rng = make_rng("serial-ref-step");
    MSTEST_SEED_INFO();
    auto be = make_backend("serial");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        for (Index n : {1, 2, 7, 64, 65, 300}) {
            for (int k : {1, 2, 3, 5, 17, 64}) {
                INFO("model " << std::string(model == KernelModel::Shared ? "shared" : "per-point") << ", n = " << n
                              << ", k = " << k);
                const PreparedData D = random_prepared(rng, n, k, model);
                const MatrixD Q = random_queries(rng, D, 9);
                const MatrixD out = run_step(*be, D, Topology{}, Q);  // poisoned: every entry must be written
                const ref::Model M(D.points, prepared_variances(D));
                MatrixD want(Q.rows(), k);
                for (Index q = 0; q < Q.rows(); ++q) ref::step(M, Q.row(q).data(), want.row(q).data());
                const double R = std::max(D.points.cwiseAbs().maxCoeff(), Q.cwiseAbs().maxCoeff());
                CHECK(max_abs_diff(out, want) <= 1e-11 * (1.0 + R));
            }
        }
    }
}

TEST_CASE("serial vs reference: cluster() with every bandwidth model, fixed iterations")
{
    auto rng = make_rng("serial-ref-cluster");
    MSTEST_SEED_INFO();
    const int N = 10;
    Options o;
    o.exact = true;  // the reference is the exact kernel with every point a seed
    o.backend = "serial";
    o.fixed_iterations = N;

    SUBCASE("isotropic h = 1.5, 5 blobs in 3-D, one at the origin")
    {
        Blobs b = make_blobs(rng, 3, {50, 40, 30, 20, 10}, {1, 1, 1, 1, 1}, 12.0);
        o.bandwidth = Bandwidth::isotropic(1.5);
        Result r = cluster(b.data, o);
        const MatrixD x = b.data.cast<double>();
        ref::Run want = ref::run(ref::Model(x, ref::variances_shared(x.rows(), {1.5, 1.5, 1.5})), x, N, -1, {1, 1, 1});
        check_modes_close(r.modes, want.modes, {1.5, 1.5, 1.5}, 1e-6);
    }
    SUBCASE("diagonal h = (1, 5, 0.2)")
    {
        const std::vector<double> h{1.0, 5.0, 0.2};
        Blobs b = make_blobs(rng, 3, {40, 30, 20}, {0.8, 0.8, 0.8}, 12.0, 0.0, h);
        o.bandwidth = Bandwidth::diagonal(h);
        Result r = cluster(b.data, o);
        const MatrixD x = b.data.cast<double>();
        ref::Run want = ref::run(ref::Model(x, ref::variances_shared(x.rows(), h)), x, N, -1, h);
        check_modes_close(r.modes, want.modes, h, 1e-6);
    }
    SUBCASE("per point, data far from the origin (offset 1e4)")
    {
        Blobs b = make_blobs(rng, 2, {40, 30, 20}, {0.8, 0.8, 0.8}, 12.0, 1e4);
        std::uniform_real_distribution<double> U(0.7, 1.4);
        MatrixD hp(b.data.rows(), 2);
        for (Index i = 0; i < hp.rows(); ++i) hp.row(i) << U(rng), U(rng);
        o.bandwidth = Bandwidth::per_point(hp);
        Result r = cluster(b.data, o);
        const MatrixD x = b.data.cast<double>();
        ref::Run want = ref::run(ref::Model(x, ref::variances_per_point(hp)), x, N, -1, {1, 1});
        check_modes_close(r.modes, want.modes, {1.0, 1.0}, 1e-6);
    }
    SUBCASE("exponential_last (paper Sec. IV), data off-centre so centring must not change H_i")
    {
        Blobs b = make_blobs(rng, 3, {40, 30, 20}, {0.8, 0.8, 0.8}, 12.0, 0.0, {1.0, 1.0, 0.3});
        for (Index i = 0; i < b.data.rows(); ++i) b.data(i, 2) += 1.0f;  // H_i depends on y_i,3 in data units
        const std::vector<double> sigma{0.8, 1.2, 0.09};
        o.bandwidth = Bandwidth::exponential_last(sigma);
        Result r = cluster(b.data, o);
        const MatrixD x = b.data.cast<double>();
        ref::Run want = ref::run(ref::Model(x, ref::variances_exponential_last(x, sigma)), x, N, -1, {1, 1, 1});
        check_modes_close(r.modes, want.modes, {1.0, 1.0, 0.3}, 1e-6);
    }
    SUBCASE("seeds distinct from the data, isotropic and per point")
    {
        Blobs b = make_blobs(rng, 2, {40, 30, 20}, {0.8, 0.8, 0.8}, 12.0, 50.0);
        MatrixF seeds(13, 2);
        std::uniform_real_distribution<double> U(-2.0, 2.0);
        for (Index q = 0; q < seeds.rows(); ++q)
            seeds.row(q) << float(b.centres(q % 3, 0) + U(rng)), float(b.centres(q % 3, 1) + U(rng));
        const Eigen::Ref<const MatrixF> sr(seeds);
        const MatrixD x = b.data.cast<double>();
        const MatrixD s = seeds.cast<double>();
        o.bandwidth = Bandwidth::isotropic(1.2);
        Result r = cluster(b.data, o, &sr);
        ref::Run want = ref::run(ref::Model(x, ref::variances_shared(x.rows(), {1.2, 1.2})), s, N, -1, {1, 1});
        check_modes_close(r.modes, want.modes, {1.2, 1.2}, 1e-6);

        MatrixD hp = MatrixD::Constant(x.rows(), 2, 0.9);
        for (Index i = 0; i < hp.rows(); i += 3) hp(i, 1) = 1.6;
        o.bandwidth = Bandwidth::per_point(hp);
        Result rp = cluster(b.data, o, &sr);
        ref::Run wantp = ref::run(ref::Model(x, ref::variances_per_point(hp)), s, N, -1, {1, 1});
        check_modes_close(rp.modes, wantp.modes, {1.0, 1.0}, 1e-6);
    }
}

TEST_CASE("serial vs reference: converged modes (tolerance mode) for shared and per-point H")
{
    auto rng = make_rng("serial-ref-converged");
    MSTEST_SEED_INFO();
    const std::vector<double> sigma{0.8, 0.6, 0.4, 0.3};
    Blobs b = make_blobs(rng, 2, {60, 45, 30, 15}, sigma, 12.0);
    const MatrixD x = b.data.cast<double>();
    Options o;
    o.exact = true;  // the reference is the exact kernel with every point a seed
    o.backend = "serial";
    o.tolerance = 1e-7;
    o.max_iterations = 1000;

    o.bandwidth = Bandwidth::isotropic(1.0);
    Result r = cluster(b.data, o);
    ref::Run want = ref::run(ref::Model(x, ref::variances_shared(x.rows(), {1, 1})), x, 1000, 1e-9, {1, 1});
    check_modes_close(r.modes, want.modes, {1, 1}, 1e-5);
    check_blobs_recovered(r, b, blob_tolerance(b, sigma), {1, 1});
    for (bool c : r.converged) CHECK(c);

    MatrixD hp(x.rows(), 2);
    std::uniform_real_distribution<double> U(0.8, 1.25);
    for (Index i = 0; i < hp.rows(); ++i) hp.row(i) << U(rng), U(rng);
    o.bandwidth = Bandwidth::per_point(hp);
    Result rp = cluster(b.data, o);
    ref::Run wantp = ref::run(ref::Model(x, ref::variances_per_point(hp)), x, 1000, 1e-9, {1, 1});
    check_modes_close(rp.modes, wantp.modes, {1, 1}, 1e-5);
    check_blobs_recovered(rp, b, blob_tolerance(b, sigma), {1, 1});
}

TEST_CASE("serial vs reference: image-like 640x480 grid, spatial bandwidth 4 + colour")
{
    auto rng = make_rng("serial-ref-image");
    MSTEST_SEED_INFO();
    const Image im = make_image(rng);
    const std::vector<double> h{4.0, 4.0, 0.1, 0.1, 0.1};
    // 8 seeds off the pixel grid, with colours 0.05 away from their quadrant's colour.
    MatrixF seeds(8, 5);
    std::uniform_real_distribution<double> ux(24.0, 296.0), uy(24.0, 216.0);
    for (Index q = 0; q < seeds.rows(); ++q) {
        const double sx = ux(rng) + (q % 2 ? 320.0 : 0.0) + 0.37, sy = uy(rng) + (q % 4 >= 2 ? 240.0 : 0.0) + 0.61;
        const auto c = Image::colour(im.quadrant(sx, sy));
        seeds.row(q) << float(sx), float(sy), float(c[0] + 0.05), float(c[1] - 0.05), float(c[2] + 0.05);
    }
    Options o;
    o.exact = true;  // the reference is the exact kernel with every point a seed
    o.backend = "serial";
    o.bandwidth = Bandwidth::diagonal(h);
    o.fixed_iterations = 4;
    const Eigen::Ref<const MatrixF> sr(seeds);
    Result r = cluster(im.data, o, &sr);
    const ref::Model M(im.data.cast<double>(), ref::variances_shared(im.data.rows(), h));
    ref::Run want = ref::run(M, seeds.cast<double>(), 4, -1, h);
    check_modes_close(r.modes, want.modes, h, 1e-6);
    for (Index q = 0; q < seeds.rows(); ++q) {
        const auto c = Image::colour(im.quadrant(seeds(q, 0), seeds(q, 1)));
        for (int d = 0; d < 3; ++d) CHECK(std::abs(r.modes(q, 2 + d) - c[std::size_t(d)]) < 0.01);
        CHECK(std::abs(r.modes(q, 0) - seeds(q, 0)) < 0.5);
        CHECK(std::abs(r.modes(q, 1) - seeds(q, 1)) < 0.5);
    }
}
