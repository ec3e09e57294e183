// Blurring mean shift (Options::blurring): the stopping rule's entropy on closed forms, cluster()
// against a float64 blurring reference written here (shared and per-point bandwidths, Gaussian and,
// where the backend has it, flat), known behaviour on separated blobs, and the PoCL OpenCL backend
// where one is usable.
#include "test_data.hpp"
#include "test_support.hpp"

#include "skeleton/src/core/blurring.hpp"

#include <meanshift/meanshift.hpp>

#include <cmath>
#include <set>

using namespace meanshift;

namespace {

struct Reference {
    MatrixD points;  ///< final positions (data units)
    int iterations = 0;
};

/// X <- D^-1 W X in data units with per-point diagonal standard deviations H (n × k; one row
/// repeated = a shared bandwidth), weights e_i = g(D_i²) |H_i|^{-1/2} and per-dimension
/// precisions (eq. 5-6), the profile's float64 weight; stops by the library's rule.
Reference blur(const MatrixD& X0, const MatrixD& H, KernelProfile profile, double tol, int max_it)
{
    // VonMisesFisher: exp(κ y·x) ∝ exp(−κ|y − x|²/2) on the unit sphere, then the projection.
    const bool sphere = profile == KernelProfile::VonMisesFisher;
    const Index n = X0.rows(), k = X0.cols();
    MatrixD X = X0, W = H.cwiseProduct(H).cwiseInverse();
    VectorD c(n);
    for (Index i = 0; i < n; ++i) c[i] = 0.5 * W.row(i).array().log().sum();
    Reference r;
    double previous = -1;
    for (int it = 0; it < max_it; ++it) {
        MatrixD next(n, k);
        std::vector<double> shift(static_cast<std::size_t>(n));
        double max_shift = 0;
        for (Index a = 0; a < n; ++a) {
            Eigen::RowVectorXd s0 = Eigen::RowVectorXd::Zero(k), s1 = Eigen::RowVectorXd::Zero(k);
            for (Index i = 0; i < n; ++i) {
                const double q = ((X.row(a) - X.row(i)).array().square() * W.row(i).array()).sum();
                const double e = profile_weight(profile, q) * std::exp(c[i]);
                s0.array() += e * W.row(i).array();
                s1.array() += e * W.row(i).array() * X.row(i).array();
            }
            next.row(a) = s1.array() / s0.array();
            if (sphere) next.row(a).normalize();
            // Shifts in bandwidth units of the first row (the shared case; the rule's scale).
            shift[std::size_t(a)] = ((next.row(a) - X.row(a)).array() / H.row(0).array()).matrix().norm();
            max_shift = std::max(max_shift, shift[std::size_t(a)]);
        }
        X = next;
        r.iterations = it + 1;
        const double h = detail::shift_entropy(shift);
        const bool stop = detail::blurring_converged(h, previous, max_shift, tol);
        previous = h;
        if (stop) break;
    }
    r.points = X;
    return r;
}

MatrixD shared(Index n, std::vector<double> h)
{
    MatrixD H(n, Index(h.size()));
    for (Index i = 0; i < n; ++i)
        for (Index d = 0; d < H.cols(); ++d) H(i, d) = h[std::size_t(d)];
    return H;
}

bool usable(const std::string& name, KernelProfile p)
{
    try {
        auto b = make_backend(name);
        return b->supports_profile(p);
    } catch (const Error&) {
        return false;
    }
}

}  // namespace

TEST_CASE("blurring: entropy of the shift histogram (0.1 n bins over [0, max])")
{
    CHECK(detail::shift_entropy({}) == 0);
    CHECK(detail::shift_entropy(std::vector<double>(50, 0.3)) == 0);
    // 20 shifts -> 2 bins; half in each: ln 2.
    std::vector<double> s(20, 0.1);
    for (int i = 10; i < 20; ++i) s[std::size_t(i)] = 1.0;
    CHECK(detail::shift_entropy(s) == doctest::Approx(std::log(2.0)).epsilon(1e-14));
    // 40 shifts spread evenly over 4 bins: ln 4.
    std::vector<double> u;
    for (int i = 0; i < 40; ++i) u.push_back(0.01 + i / 40.0);
    CHECK(detail::shift_entropy(u) == doctest::Approx(std::log(4.0)).epsilon(1e-14));
    CHECK(detail::blurring_converged(1.0, -1, 0.5, 1e-3) == false);
    CHECK(detail::blurring_converged(1.0, 1.0 + 5e-9, 0.5, 1e-3) == true);
    CHECK(detail::blurring_converged(1.0, 1.1, 1e-4, 1e-3) == true);
}

TEST_CASE("blurring: cluster() equals the float64 blurring reference (serial, openmp; shared and per-point H)")
{
    MSTEST_SEED_INFO();
    auto rng = mstest::make_rng("blurring-reference");
    const auto b = mstest::make_blobs(rng, 2, {40, 30, 20}, {0.5, 0.4, 0.6}, 3.0, 2.0);
    const MatrixD X = b.data.cast<double>();
    const Index n = X.rows();
    MatrixD Hpp(n, 2);
    for (Index i = 0; i < n; ++i) {
        Hpp(i, 0) = 0.6 + 0.4 * double(i % 5) / 4.0;
        Hpp(i, 1) = 0.7 + 0.3 * double(i % 3) / 2.0;
    }
    struct Case {
        const char* what;
        Bandwidth bandwidth;
        MatrixD H;
        KernelProfile profile;
    };
    const std::vector<Case> cases{
        {"gaussian isotropic", Bandwidth::isotropic(0.8), shared(n, {0.8, 0.8}), KernelProfile::Gaussian},
        {"gaussian diagonal", Bandwidth::diagonal({0.7, 1.0}), shared(n, {0.7, 1.0}), KernelProfile::Gaussian},
        {"gaussian per point", Bandwidth::per_point(Hpp), Hpp, KernelProfile::Gaussian},
        {"flat isotropic", Bandwidth::isotropic(1.2), shared(n, {1.2, 1.2}), KernelProfile::Flat},
        {"epanechnikov isotropic", Bandwidth::isotropic(1.5), shared(n, {1.5, 1.5}), KernelProfile::Epanechnikov},
    };
    for (const auto& c : cases) {
        INFO("case " << std::string(c.what));
        const bool per_point = c.bandwidth.kind() == BandwidthKind::PerPoint;
        const Reference ref = blur(X, c.H, c.profile, 1e-3, 100);
        for (const char* name : {"serial", "openmp"}) {
            INFO("backend " << std::string(name));
            if (!usable(name, c.profile)) {
                MESSAGE(std::string(name)
                        << " has no " << std::string(profile_name(c.profile)) << " profile yet: skipped");
                continue;
            }
            Options o;
            o.backend = name;
            o.bandwidth = c.bandwidth;
            o.kernel = c.profile;
            o.blurring = true;
            o.tolerance = 1e-3;
            o.max_iterations = 100;
            o.merge_eps = 0.5;
            const Result r = cluster(b.data, o);
            REQUIRE(r.modes.rows() == n);
            // The per-point run stops by shifts in prepared units (the typical bandwidth), the
            // reference by the first row's: compare positions after the same iterations only then.
            if (!per_point) CHECK(r.timing.iterations == ref.iterations);
            if (r.timing.iterations == ref.iterations)
                CHECK((r.modes.cast<double>() - ref.points).cwiseAbs().maxCoeff() < 1e-4);
            CHECK(r.iterations == std::vector<int>(std::size_t(n), r.timing.iterations));
            CHECK(r.labels.size() == std::size_t(n));
            CHECK(r.timing.seconds_iterate > 0);
            CHECK(r.timing.pair_interactions > 0);
        }
    }
}

TEST_CASE("blurring: the vmf profile keeps the moved points on the unit sphere and follows the reference")
{
    MSTEST_SEED_INFO();
    if (!usable("serial", KernelProfile::VonMisesFisher)) {
        MESSAGE("serial has no vmf profile yet: skipped");
        return;
    }
    auto rng = mstest::make_rng("blurring-vmf");
    const auto b = mstest::make_blobs(rng, 3, {40, 40}, {0.15, 0.15}, 1.5, 0.0);
    MatrixF X = b.data;
    for (Index i = 0; i < X.rows(); ++i) X.row(i) += Eigen::RowVector3f(0.f, 0.f, 1.f), X.row(i).normalize();
    const double h = 0.3;
    const Reference ref = blur(X.cast<double>(), shared(X.rows(), {h, h, h}), KernelProfile::VonMisesFisher, 1e-3, 100);
    for (const char* name : {"serial", "openmp"}) {
        INFO("backend " << std::string(name));
        Options o;
        o.backend = name;
        o.bandwidth = Bandwidth::isotropic(h);
        o.kernel = KernelProfile::VonMisesFisher;
        o.blurring = true;
        const Result r = cluster(X, o);
        CHECK(r.timing.iterations == ref.iterations);
        CHECK((r.modes.cast<double>() - ref.points).cwiseAbs().maxCoeff() < 1e-4);
        for (Index i = 0; i < r.modes.rows(); ++i) CHECK(std::abs(r.modes.row(i).norm() - 1.f) < 1e-5f);
        CHECK(r.cluster_sizes.size() == 2);
    }
    Options bad;
    bad.backend = "serial";
    bad.kernel = KernelProfile::VonMisesFisher;
    bad.blurring = true;
    MatrixF off = X * 2.f;
    CHECK_THROWS_AS(cluster(off, bad), InvalidArgument);
}

TEST_CASE("blurring: scikit-learn's grouping of the moved points labels every original point")
{
    auto rng = mstest::make_rng("blurring-sklearn");
    const auto b = mstest::make_blobs(rng, 2, {80, 60}, {0.5, 0.5}, 6.0);
    Options o;
    o.backend = "serial";
    o.bandwidth = Bandwidth::isotropic(0.8);
    o.blurring = true;
    o.grouping = GroupingMethod::ScikitLearn;
    o.merge_eps = 1.0;
    const Result r = cluster(b.data, o);
    REQUIRE(r.cluster_sizes.size() == 2);
    CHECK(r.cluster_sizes == std::vector<Index>{80, 60});  // ranked by intensity: the larger blob first
    CHECK(mstest::same_partition(r.labels, b.truth));
}

TEST_CASE("blurring: two separated blobs collapse to two points in far fewer iterations than mean shift")
{
    MSTEST_SEED_INFO();
    auto rng = mstest::make_rng("blurring-blobs");
    // Blobs wide against the bandwidth (σ = 1.25 h): mean shift contracts by σ²/(σ² + h²) = 0.61 a step
    // near a mode, blurring mean shift shrinks the blobs themselves, faster every step.
    const auto b = mstest::make_blobs(rng, 2, {150, 150}, {1.0, 1.0}, 12.0);
    for (const char* name : {"serial", "openmp"}) {
        INFO("backend " << std::string(name));
        Options o;
        o.backend = name;
        o.bandwidth = Bandwidth::isotropic(0.8);
        o.seeding = Seeding::AllPoints;
        o.exact = true;
        o.tolerance = 1e-3;
        o.max_iterations = 300;
        const Result plain = cluster(b.data, o);
        o.blurring = true;
        const Result blurred = cluster(b.data, o);
        REQUIRE(blurred.cluster_sizes.size() == 2);
        CHECK(mstest::same_partition(blurred.labels, b.truth));
        CHECK(mstest::same_partition(blurred.labels, plain.labels));
        // Every moved point sits on its cluster's centre (collapsed), the centres near the blobs'.
        for (Index i = 0; i < blurred.modes.rows(); ++i)
            CHECK((blurred.modes.row(i) - blurred.centres.row(blurred.labels[std::size_t(i)])).norm() < 1e-2);
        MESSAGE(std::string(name) << ": blurring " << blurred.timing.iterations << " iterations, "
                                  << blurred.timing.seconds_total << " s; mean shift " << plain.timing.iterations
                                  << " iterations, " << plain.timing.seconds_total << " s");
        CHECK(blurred.timing.iterations * 2 < plain.timing.iterations);
    }
}

TEST_CASE("blurring: explicit seeds are refused; grouping None leaves labels empty")
{
    MatrixF X(3, 1);
    X << 0.f, 0.1f, 5.f;
    Options o;
    o.backend = "serial";
    o.blurring = true;
    const Eigen::Ref<const MatrixF> s(X);
    CHECK_THROWS_AS(cluster(X, o, &s), InvalidArgument);
    o.grouping = GroupingMethod::None;
    const Result r = cluster(X, o);
    CHECK(r.labels.empty());
    CHECK(r.modes.rows() == 3);
}

TEST_CASE("blurring: the OpenCL backend (PoCL) follows the float64 reference")
{
    if (!usable("opencl", KernelProfile::Gaussian)) {
        MESSAGE("no usable OpenCL device: skipped");
        return;
    }
    auto rng = mstest::make_rng("blurring-opencl");
    const auto b = mstest::make_blobs(rng, 3, {50, 40}, {0.4, 0.5}, 4.0, 1.0);
    const Reference ref =
        blur(b.data.cast<double>(), shared(b.data.rows(), {0.9, 0.9, 0.9}), KernelProfile::Gaussian, 1e-3, 100);
    Options o;
    o.backend = "opencl";
    o.bandwidth = Bandwidth::isotropic(0.9);
    o.blurring = true;
    const Result r = cluster(b.data, o);
    // float32 on the device: the entropy test may stop an iteration apart; the positions agree.
    CHECK(std::abs(r.timing.iterations - ref.iterations) <= 1);
    if (r.timing.iterations == ref.iterations)
        CHECK((r.modes.cast<double>() - ref.points).cwiseAbs().maxCoeff() < 1e-4);
    CHECK(r.cluster_sizes.size() == 2);
}
