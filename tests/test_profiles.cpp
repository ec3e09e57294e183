// Kernel profiles (kernel_profile.hpp) on the host backends: closed forms of one step (flat = the
// mean of the points within the radius; Epanechnikov and biweight = weighted means by hand, shared
// and per-point bandwidths), the centre of symmetric unimodal data, von Mises-Fisher ascents on the
// circle and the sphere against a float64 direct reference of y <- Σ exp(κ y·x) x / |Σ exp(κ y·x) x|,
// and the errors (vMF with non-unit rows or a per-point bandwidth, unknown names).
#include "test_data.hpp"
#include "test_support.hpp"

#include <meanshift/meanshift.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace meanshift;
using namespace mstest;

namespace {

std::vector<std::string> host_backends()
{
    std::vector<std::string> out;
    for (const std::string& b : compiled_backends())
        if (b == "serial" || b == "openmp") out.push_back(b);
    return out;
}

/// One exact step of every seed (fixed_iterations = 1, no grouping), data units.
MatrixF one_step(const MatrixF& x, const MatrixF& seeds, KernelProfile p, const Bandwidth& bw, const std::string& be,
                 int iterations = 1)
{
    Options o;
    o.backend = be;
    o.kernel = p;
    o.bandwidth = bw;
    o.exact = true;
    o.fixed_iterations = iterations;
    o.grouping = GroupingMethod::None;
    const Eigen::Ref<const MatrixF> s(seeds);
    return cluster(x, o, &s).modes;
}

MatrixF uniform_points(std::mt19937_64& rng, Index n, int k, double lo, double hi)
{
    std::uniform_real_distribution<double> u(lo, hi);
    MatrixF x(n, k);
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d) x(i, d) = static_cast<float>(u(rng));
    return x;
}

/// Σ g(q_i) x_i / Σ g(q_i) in float64, q_i = |y − x_i|² / h²; nullopt-like NaN row when a point
/// lies within 1e-5 of the radius (float32 may put it on either side).
std::vector<double> weighted_mean(const MatrixF& x, const float* y, double h, KernelProfile p, bool& near_edge)
{
    const int k = static_cast<int>(x.cols());
    std::vector<double> s1(static_cast<std::size_t>(k), 0.0);
    double s0 = 0;
    for (Index i = 0; i < x.rows(); ++i) {
        double q = 0;
        for (int d = 0; d < k; ++d) q += (double(y[d]) - x(i, d)) * (double(y[d]) - x(i, d));
        q /= h * h;
        if (std::abs(q - 1.0) < 1e-5) near_edge = true;
        const double g = profile_weight(p, q);
        s0 += g;
        for (int d = 0; d < k; ++d) s1[std::size_t(d)] += g * x(i, d);
    }
    for (double& v : s1) v /= s0;
    return s1;
}

}  // namespace

TEST_CASE("profiles: names, supports and reference weights")
{
    CHECK(parse_profile("Flat") == KernelProfile::Flat);
    CHECK(parse_profile("uniform") == KernelProfile::Flat);
    CHECK(parse_profile("von-mises-fisher") == KernelProfile::VonMisesFisher);
    for (KernelProfile p : kernel_profiles()) CHECK(parse_profile(profile_name(p)) == p);
    CHECK_THROWS_KEYWORD(InvalidArgument, parse_profile("triangle"), "triangle");
    for (KernelProfile p : kernel_profiles()) {  // every row of the profile list
        CHECK_THROWS_KEYWORD(InvalidArgument, parse_profile("triangle"), profile_name(p));  // the message lists it
        CHECK(profile_weight(p, 0.0) == 1.0);
        if (is_compact(p)) CHECK(profile_weight(p, 1.0 + 1e-9) == 0.0);
    }
    CHECK(profile_weight(KernelProfile::Epanechnikov, 0.25) == doctest::Approx(0.75));
    CHECK(profile_weight(KernelProfile::Biweight, 0.5) == doctest::Approx(0.25));
    CHECK(profile_weight(KernelProfile::Triweight, 0.5) == doctest::Approx(0.125));
    CHECK(profile_weight(KernelProfile::Triweight, 1.5) == 0.0);
    CHECK(profile_weight(KernelProfile::Tricube, 0.25) == doctest::Approx(0.669921875));  // (1 - 1/8)^3
    CHECK(profile_weight(KernelProfile::Flat, 1.0001) == 0.0);
    CHECK(is_compact(KernelProfile::Biweight));
    CHECK(!is_compact(KernelProfile::VonMisesFisher));
}

TEST_CASE("profiles: one step of flat, Epanechnikov and biweight is the weighted mean of the points within the radius")
{
    auto rng = make_rng("profiles-closed-form");
    MSTEST_SEED_INFO();
    for (int k : {1, 2, 3, 5, 9}) {
        const MatrixF x = uniform_points(rng, 400, k, -3.0, 3.0);
        const MatrixF seeds = uniform_points(rng, 37, k, -2.0, 2.0);
        const double h = 1.3;
        for (KernelProfile p : {KernelProfile::Flat, KernelProfile::Epanechnikov, KernelProfile::Biweight})
            for (const std::string& be : host_backends()) {
                INFO("k = " << k << ", profile " << profile_name(p) << ", backend " << be);
                const MatrixF got = one_step(x, seeds, p, Bandwidth::isotropic(h), be);
                double worst = 0;
                for (Index q = 0; q < seeds.rows(); ++q) {
                    bool edge = false;
                    const std::vector<double> want = weighted_mean(x, seeds.row(q).data(), h, p, edge);
                    if (edge) continue;
                    for (int d = 0; d < k; ++d) worst = std::max(worst, std::abs(got(q, d) - want[std::size_t(d)]));
                }
                CHECK(worst <= (be == "serial" ? 1e-6 : 2e-5) * h);
            }
    }
}

TEST_CASE("profiles: per-point bandwidths weigh exp(c_i) g(D_i^2) with the per-dimension precisions")
{
    auto rng = make_rng("profiles-per-point");
    MSTEST_SEED_INFO();
    const int k = 2;
    const MatrixF x = uniform_points(rng, 300, k, -2.0, 2.0);
    const MatrixF seeds = uniform_points(rng, 20, k, -1.0, 1.0);
    std::uniform_real_distribution<double> u(0.6, 1.4);
    MatrixD H(x.rows(), k);
    for (Index i = 0; i < x.rows(); ++i)
        for (int d = 0; d < k; ++d) H(i, d) = u(rng);
    for (KernelProfile p : {KernelProfile::Flat, KernelProfile::Epanechnikov, KernelProfile::Biweight})
        for (const std::string& be : host_backends()) {
            INFO("profile " << profile_name(p) << ", backend " << be);
            const MatrixF got = one_step(x, seeds, p, Bandwidth::per_point(H), be);
            double worst = 0;
            for (Index q = 0; q < seeds.rows(); ++q) {
                std::vector<double> s0(k, 0.0), s1(k, 0.0);
                bool edge = false;
                for (Index i = 0; i < x.rows(); ++i) {
                    double D2 = 0, logdet = 0;
                    for (int d = 0; d < k; ++d) {
                        const double t = double(seeds(q, d)) - x(i, d);
                        D2 += t * t / (H(i, d) * H(i, d));
                        logdet -= std::log(H(i, d));  // log |H_i|^{-1/2}
                    }
                    if (std::abs(D2 - 1.0) < 1e-5) edge = true;
                    const double e = std::exp(logdet) * profile_weight(p, D2);
                    for (int d = 0; d < k; ++d) {
                        const double w = 1.0 / (H(i, d) * H(i, d));
                        s0[std::size_t(d)] += e * w;
                        s1[std::size_t(d)] += e * w * x(i, d);
                    }
                }
                if (edge) continue;
                for (int d = 0; d < k; ++d)
                    worst = std::max(worst, std::abs(got(q, d) - s1[std::size_t(d)] / s0[std::size_t(d)]));
            }
            CHECK(worst <= (be == "serial" ? 1e-6 : 2e-5));
        }
}

TEST_CASE("profiles: symmetric unimodal data have their centre as the mode for every profile")
{
    auto rng = make_rng("profiles-symmetric");
    MSTEST_SEED_INFO();
    const int k = 3;
    const std::vector<double> c{4.0, -2.0, 7.5};
    std::normal_distribution<double> N(0.0, 0.5);
    const Index half = 300;
    MatrixF x(2 * half, k);
    for (Index i = 0; i < half; ++i)
        for (int d = 0; d < k; ++d) {
            const double v = N(rng);
            x(i, d) = static_cast<float>(c[std::size_t(d)] + v);
            x(half + i, d) = static_cast<float>(c[std::size_t(d)] - v);  // mirrored through c
        }
    MatrixF seeds(1, k);
    for (int d = 0; d < k; ++d) seeds(0, d) = static_cast<float>(c[std::size_t(d)] + 0.2);
    for (KernelProfile p :
         {KernelProfile::Gaussian, KernelProfile::Flat, KernelProfile::Epanechnikov, KernelProfile::Biweight})
        for (const std::string& be : host_backends()) {
            INFO("profile " << profile_name(p) << ", backend " << be);
            Options o;
            o.backend = be;
            o.kernel = p;
            o.bandwidth = Bandwidth::isotropic(1.5);
            o.tolerance = 1e-6;
            o.max_iterations = 500;
            const Eigen::Ref<const MatrixF> s(seeds);
            const Result r = cluster(x, o, &s);
            for (int d = 0; d < k; ++d) CHECK(std::abs(r.modes(0, d) - c[std::size_t(d)]) <= 1e-3);
            if (is_compact(p)) CHECK(r.cutoff == 1.0);
        }
}

TEST_CASE("profiles: von Mises-Fisher ascents stay on the unit sphere and match exp(kappa y.x) by hand")
{
    auto rng = make_rng("profiles-vmf");
    MSTEST_SEED_INFO();
    std::normal_distribution<double> N(0.0, 1.0);
    for (int k : {2, 3}) {
        const Index n = 200;
        MatrixF x(n, k);
        for (Index i = 0; i < n; ++i) {
            std::vector<double> v(static_cast<std::size_t>(k));
            double s = 0;
            for (int d = 0; d < k; ++d) {
                v[std::size_t(d)] = (d == i % k ? 1.0 : 0.0) + 0.3 * N(rng);
                s += v[std::size_t(d)] * v[std::size_t(d)];
            }
            for (int d = 0; d < k; ++d) x(i, d) = static_cast<float>(v[std::size_t(d)] / std::sqrt(s));
        }
        const MatrixF seeds = x.topRows(25);
        const double h = 0.4, kappa = 1.0 / (h * h);
        const int iterations = 6;
        // The reference: y <- Σ exp(κ y·x) x / |Σ exp(κ y·x) x|, float64.
        MatrixD want(seeds.rows(), k);
        for (Index q = 0; q < seeds.rows(); ++q) {
            std::vector<double> y(static_cast<std::size_t>(k));
            for (int d = 0; d < k; ++d) y[std::size_t(d)] = seeds(q, d);
            for (int it = 0; it < iterations; ++it) {
                std::vector<double> s(static_cast<std::size_t>(k), 0.0);
                for (Index i = 0; i < n; ++i) {
                    double dot = 0;
                    for (int d = 0; d < k; ++d) dot += y[std::size_t(d)] * x(i, d);
                    const double e = std::exp(kappa * (dot - 1.0));  // e^{-κ} cancels
                    for (int d = 0; d < k; ++d) s[std::size_t(d)] += e * x(i, d);
                }
                double norm = 0;
                for (double v : s) norm += v * v;
                for (int d = 0; d < k; ++d) y[std::size_t(d)] = s[std::size_t(d)] / std::sqrt(norm);
            }
            for (int d = 0; d < k; ++d) want(q, d) = y[std::size_t(d)];
        }
        for (const std::string& be : host_backends()) {
            INFO("k = " << k << ", backend " << be);
            const MatrixF got =
                one_step(x, seeds, KernelProfile::VonMisesFisher, Bandwidth::isotropic(h), be, iterations);
            CHECK(max_abs_diff(got, want) <= (be == "serial" ? 1e-6 : 1e-4));
            for (Index q = 0; q < got.rows(); ++q) CHECK(std::abs(double(got.row(q).norm()) - 1.0) <= 1e-6);
        }
    }
}

TEST_CASE("profiles: vmf refuses non-unit rows and non-isotropic bandwidths by name")
{
    MatrixF x(3, 2);
    x << 1, 0, 0, 1, 0.6f, 0.9f;  // row 2 has norm 1.08
    Options o;
    o.backend = "serial";
    o.kernel = KernelProfile::VonMisesFisher;
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "row 2");
    x(2, 1) = 0.8f;
    CHECK_NOTHROW(cluster(x, o));
    o.bandwidth = Bandwidth::per_point(MatrixD::Constant(3, 2, 0.5));
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "isotropic");
    o.bandwidth = Bandwidth::diagonal({0.5, 0.7});
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "isotropic");
}

TEST_CASE("profiles: compact profiles run exactly with cutoff 1 whatever Options::cutoff and exact say")
{
    auto rng = make_rng("profiles-cutoff");
    const MatrixF x = uniform_points(rng, 500, 2, -4.0, 4.0);
    for (const std::string& be : host_backends()) {
        Options a;
        a.backend = be;
        a.kernel = KernelProfile::Epanechnikov;
        a.seeding = Seeding::AllPoints;
        a.cutoff = 0.5;
        Options b = a;
        b.exact = true;
        const Result ra = cluster(x, a), rb = cluster(x, b);
        CHECK(ra.cutoff == 1.0);
        CHECK(rb.cutoff == 1.0);
        CHECK(max_abs_diff(ra.modes, rb.modes) <= 1e-5);
        CHECK(same_partition(ra.labels, rb.labels));
    }
}
