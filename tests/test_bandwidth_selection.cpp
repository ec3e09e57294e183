// Bandwidth selection (bandwidth_selection.hpp): normal-reference rules against their closed
// forms, the quantile estimate against scikit-learn's definition and a brute-force reference,
// k-NN distances against brute force, adaptive bandwidths, and bad input.
#include "test_support.hpp"

#include <meanshift/bandwidth_selection.hpp>

#include <Eigen/QR>

#include <cmath>
#include <limits>
#include <random>

using namespace meanshift;

namespace {

MatrixF normal_sample(Index n, const std::vector<double>& sigma, const std::string& tag)
{
    auto rng = mstest::make_rng(tag);
    std::normal_distribution<double> z(0.0, 1.0);
    MatrixF x(n, Index(sigma.size()));
    for (Index i = 0; i < n; ++i)
        for (Index d = 0; d < x.cols(); ++d) x(i, d) = float(3.0 + sigma[std::size_t(d)] * z(rng));
    return x;
}

// Distance to the rank-th nearest other point, from every pairwise distance sorted.
std::vector<double> brute_knn(const MatrixF& x, int rank)
{
    std::vector<double> out;
    for (Index i = 0; i < x.rows(); ++i) {
        std::vector<double> d;
        for (Index j = 0; j < x.rows(); ++j)
            if (j != i) d.push_back((x.row(i).cast<double>() - x.row(j).cast<double>()).norm());
        std::sort(d.begin(), d.end());
        out.push_back(d[std::size_t(rank - 1)]);
    }
    return out;
}

}  // namespace

TEST_CASE("bandwidth selection: Scott and Silverman against the closed forms")
{
    SUBCASE("formula with the sample standard deviation, per dimension and isotropic")
    {
        const MatrixF x = normal_sample(500, {1.0, 4.0, 0.25}, "bwsel-formula");
        const double n = 500, k = 3;
        std::vector<double> s;
        for (Index d = 0; d < 3; ++d) {
            const Eigen::VectorXd c = x.col(d).cast<double>();
            const double m = c.mean();
            s.push_back(std::sqrt((c.array() - m).square().sum() / (n - 1)));
        }
        const auto scott = rule_bandwidths(x, BandwidthRule::Scott);
        const auto silver = rule_bandwidths(x, BandwidthRule::Silverman);
        for (std::size_t d = 0; d < 3; ++d) {
            CHECK(scott[d] == doctest::Approx(std::pow(n, -1 / (k + 4)) * s[d]).epsilon(1e-9));
            CHECK(silver[d] == doctest::Approx(std::pow(n * (k + 2) / 4, -1 / (k + 4)) * s[d]).epsilon(1e-9));
        }
        const double rms = std::sqrt((s[0] * s[0] + s[1] * s[1] + s[2] * s[2]) / 3);
        CHECK(rule_bandwidth(x, BandwidthRule::Scott) ==
              doctest::Approx(std::pow(n, -1 / (k + 4)) * rms).epsilon(1e-9));
    }
    SUBCASE("1-D normal: Silverman is 1.06 sigma n^-1/5 (the textbook rule), Scott sigma n^-1/5")
    {
        const double sigma = 2.5;
        const MatrixF x = normal_sample(20000, {sigma}, "bwsel-1d");
        const double base = sigma * std::pow(20000.0, -0.2);
        CHECK(rule_bandwidth(x, BandwidthRule::Silverman) == doctest::Approx(1.0592 * base).epsilon(0.03));
        CHECK(rule_bandwidth(x, BandwidthRule::Scott) == doctest::Approx(base).epsilon(0.03));
    }
    SUBCASE("bad input")
    {
        MatrixF one(1, 2);
        one << 1, 2;
        CHECK_THROWS_AS(rule_bandwidth(one, BandwidthRule::Scott), InvalidArgument);
        MatrixF constant_col(3, 2);
        constant_col << 1, 5, 2, 5, 3, 5;
        CHECK_THROWS_WITH_AS(rule_bandwidths(constant_col, BandwidthRule::Silverman),
                             doctest::Contains("dimension 1 is constant"), InvalidArgument);
        CHECK(rule_bandwidth(constant_col, BandwidthRule::Silverman) > 0);  // the rms spread is not 0
        MatrixF nan = constant_col;
        nan(1, 0) = std::numeric_limits<float>::quiet_NaN();
        CHECK_THROWS_AS(rule_bandwidths(nan, BandwidthRule::Scott), InvalidArgument);
        CHECK_THROWS_AS(rule_bandwidth(MatrixF(0, 2), BandwidthRule::Scott), InvalidArgument);
    }
}

TEST_CASE("bandwidth selection: estimate_bandwidth is scikit-learn's quantile estimate")
{
    // scikit-learn 1.x: estimate_bandwidth(np.array([[0],[1],[3],[7],[15]]), quantile=q)
    // gives 3.2 for q = 0.4 (2 neighbours, the point itself first) and 12.8 for q = 1.
    MatrixF x(5, 1);
    x << 0, 1, 3, 7, 15;
    CHECK(estimate_bandwidth(x, 0.4) == doctest::Approx(3.2));
    CHECK(estimate_bandwidth(x, 1.0) == doctest::Approx(12.8));
    CHECK(estimate_bandwidth(x, 0.1) == 0.0);  // 1 neighbour: the point itself

    SUBCASE("against a brute-force reference, 3-D")
    {
        const MatrixF y = normal_sample(300, {1.0, 2.0, 0.5}, "bwsel-quantile");
        const int m = int(300 * 0.3);  // 90 neighbours including the point: the 89th other one
        const auto ref = brute_knn(y, m - 1);
        double mean = 0;
        for (double v : ref) mean += v;
        mean /= 300;
        CHECK(estimate_bandwidth(y, 0.3) == doctest::Approx(mean).epsilon(1e-9));
    }
    SUBCASE("a sample stands for large data: close to the full value, deterministic")
    {
        const MatrixF y = normal_sample(3000, {1.0, 1.0}, "bwsel-sample");
        const double full = estimate_bandwidth(y, 0.2);
        const double sampled = estimate_bandwidth(y, 0.2, 1000, 7);
        CHECK(sampled == doctest::Approx(full).epsilon(0.05));
        CHECK(sampled == estimate_bandwidth(y, 0.2, 1000, 7));
    }
    SUBCASE("bad input")
    {
        for (double q : {0.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN()})
            CHECK_THROWS_WITH_AS(estimate_bandwidth(x, q), doctest::Contains("quantile"), InvalidArgument);
        CHECK_THROWS_AS(estimate_bandwidth(x, 0.3, 0), InvalidArgument);
        CHECK_THROWS_AS(estimate_bandwidth(MatrixF(0, 1), 0.3), InvalidArgument);
    }
}

TEST_CASE("bandwidth selection: k-NN distances against brute force (kd-tree and brute-force paths)")
{
    for (int dims : {1, 2, 5, 20}) {  // 20 > 16: the brute-force path
        CAPTURE(dims);
        const MatrixF x =
            normal_sample(400, std::vector<double>(std::size_t(dims), 1.0), "bwsel-knn" + std::to_string(dims));
        for (int k : {1, 7, 50}) {
            CAPTURE(k);
            const auto got = knn_distances(x, k);
            const auto ref = brute_knn(x, k);
            for (std::size_t i = 0; i < ref.size(); ++i) REQUIRE(got[i] == doctest::Approx(ref[i]).epsilon(1e-6));
        }
    }
    SUBCASE("scale: distances in standardised units")
    {
        const MatrixF x = normal_sample(200, {1.0, 100.0}, "bwsel-scale");
        MatrixF scaled = x;
        scaled.col(1) /= 100.0f;
        const auto got = knn_distances(x, 5, {1.0, 100.0});
        const auto ref = brute_knn(scaled, 5);
        for (std::size_t i = 0; i < ref.size(); ++i) CHECK(got[i] == doctest::Approx(ref[i]).epsilon(1e-5));
        CHECK_THROWS_AS(knn_distances(x, 5, {1.0}), InvalidArgument);
        CHECK_THROWS_AS(knn_distances(x, 5, {1.0, 0.0}), InvalidArgument);
    }
    SUBCASE("duplicates are neighbours at distance 0; k >= n is an error")
    {
        MatrixF d(4, 2);
        d << 1, 1, 1, 1, 1, 1, 4, 5;
        const auto got = knn_distances(d, 2);
        CHECK(got[0] == 0.0);
        CHECK(got[3] == doctest::Approx(5.0));
        CHECK_THROWS_WITH_AS(knn_distances(d, 4), doctest::Contains("k must be in [1, n-1]"), InvalidArgument);
        CHECK_THROWS_AS(knn_distances(d, 0), InvalidArgument);
    }
}

TEST_CASE("bandwidth selection: adaptive per-point bandwidths")
{
    SUBCASE("sigma_i = c max(a d^-beta d_k(x_i), b s_i) against its definition, isotropic and per dimension")
    {
        // The oracle: every pairwise distance sorted (float64), Levina-Bickel's estimate written out,
        // and s_i by bisection (the library uses Newton's method on the log of the sum).
        const MatrixF x = normal_sample(300, {1.0, 10.0}, "bwsel-adaptive");
        const int k = 8;
        AdaptiveBandwidthOptions o;
        o.k = k;
        o.c = 0.9;
        const AdaptiveBandwidths got = adaptive_bandwidths_detailed(x, o);
        std::vector<std::vector<double>> nb(300);
        double inv_sum = 0;
        for (Index i = 0; i < 300; ++i) {
            for (Index j = 0; j < 300; ++j)
                if (j != i)
                    nb[std::size_t(i)].push_back(std::hypot(double(x(i, 0)) - x(j, 0), double(x(i, 1)) - x(j, 1)));
            std::sort(nb[std::size_t(i)].begin(), nb[std::size_t(i)].end());
            nb[std::size_t(i)].resize(k);
            double l = 0;
            for (int j = 0; j + 1 < k; ++j)
                l += std::log(nb[std::size_t(i)][k - 1] / nb[std::size_t(i)][std::size_t(j)]);
            inv_sum += l / (k - 1);
        }
        const double dhat = std::clamp(300 / inv_sum, 1.0, 2.0);
        CHECK(got.intrinsic_dimension == doctest::Approx(dhat).epsilon(1e-6));
        CHECK(got.intrinsic_dimension > 1.6);  // a 2-D sample
        REQUIRE(got.sigma.rows() == 300);
        REQUIRE(got.sigma.cols() == 2);
        int floor_decides = 0;
        for (Index i = 0; i < 300; ++i) {
            const std::vector<double>& d = nb[std::size_t(i)];
            double lo = 1e-6 * d.back(), hi = 1e3 * d.back();
            for (int it = 0; it < 200; ++it) {
                const double mid = std::sqrt(lo * hi);
                double sum = 0;
                for (double v : d) sum += std::exp(-v * v / (2 * mid * mid));
                (sum > 1 ? hi : lo) = mid;
            }
            const double by_density = kAdaptiveDensityFactor * std::pow(dhat, -kAdaptiveDimensionExponent) * d.back();
            const double by_floor = kAdaptiveSelfWeightFactor * std::sqrt(lo * hi);
            floor_decides += by_floor > by_density ? 1 : 0;
            CHECK(got.sigma(i, 0) == doctest::Approx(0.9 * std::max(by_density, by_floor)).epsilon(1e-6));
            CHECK(got.sigma(i, 1) == got.sigma(i, 0));
        }
        CHECK(got.self_weight_share == doctest::Approx(floor_decides / 300.0));
        o.per_dimension = true;
        const MatrixD hp = adaptive_bandwidths(x, o);
        for (Index i = 0; i < 300; ++i) CHECK(hp(i, 1) / hp(i, 0) == doctest::Approx(10.0).epsilon(0.15));
        CHECK_NOTHROW(Bandwidth::per_point(hp));
    }
    SUBCASE("intrinsic dimension: a 3-D cube and a 2-D Gaussian, rotated into 12 dimensions")
    {
        auto rng = mstest::make_rng("bwsel-intrinsic");
        std::uniform_real_distribution<double> u(0.0, 1.0);
        std::normal_distribution<double> z(0.0, 1.0);
        Eigen::MatrixXd basis = Eigen::MatrixXd::NullaryExpr(12, 12, [&] { return z(rng); });
        const Eigen::MatrixXd q = Eigen::HouseholderQR<Eigen::MatrixXd>(basis).householderQ();
        for (const int dim : {3, 2}) {
            MatrixF x(2000, 12);
            for (Index i = 0; i < x.rows(); ++i) {
                Eigen::VectorXd p = Eigen::VectorXd::Zero(12);
                for (int d = 0; d < dim; ++d) p(d) = dim == 3 ? u(rng) : z(rng);
                x.row(i) = (q * p).cast<float>().transpose();
            }
            const double dhat = adaptive_bandwidths_detailed(x, {}).intrinsic_dimension;
            INFO("dim " << dim << ": estimate " << dhat);
            CHECK(std::abs(dhat - dim) < 0.35);
        }
    }
    SUBCASE("the self-weight floor: k neighbours at one distance r give s = r / sqrt(2 ln k)")
    {
        // The origin and the 8 points ±e_d of 4 dimensions: the origin's 8 neighbours are all at 1.
        MatrixF x = MatrixF::Zero(9, 4);
        for (int d = 0; d < 4; ++d) {
            x(1 + 2 * d, d) = 1;
            x(2 + 2 * d, d) = -1;
        }
        AdaptiveBandwidthOptions o;
        o.k = 8;
        o.intrinsic_dimension = 1000;  // the density term 1.6 · 1000^-0.8 · d_8 is far below the floor
        const AdaptiveBandwidths got = adaptive_bandwidths_detailed(x, o);
        CHECK(got.intrinsic_dimension == 1000);
        CHECK(got.sigma(0, 0) ==
              doctest::Approx(kAdaptiveSelfWeightFactor / std::sqrt(2 * std::log(8.0))).epsilon(1e-9));
        CHECK(got.self_weight_share == 1.0);
    }
    SUBCASE("defaults: k = round(sqrt(n)), at least 5, at most n - 1")
    {
        CHECK(default_adaptive_k(10) == 5);
        CHECK(default_adaptive_k(4) == 3);
        CHECK(default_adaptive_k(400) == 20);
        CHECK(default_adaptive_k(1000000) == 1000);
    }
    SUBCASE("k above sample_k: d_k from a sample agrees with the exact d_k")
    {
        // 2-D and 20-D (the brute-force path): the sampled estimate (r = 50 of m = n·50/k rows) has a
        // relative spread of about 1/(dim·sqrt(50)); its median ratio to the exact d_k is near 1.
        for (const Index dim : {Index(2), Index(20)}) {
            const Index n = 8000;
            auto rng = mstest::make_rng("bwsel-sampled-knn");
            std::normal_distribution<double> z(0.0, 1.0);
            MatrixF x(n, dim);
            for (Index i = 0; i < n; ++i)
                for (Index d = 0; d < dim; ++d) x(i, d) = float(z(rng) + (i % 2) * 6.0);
            AdaptiveBandwidthOptions o;
            o.k = 400;
            o.c = 1;
            const MatrixD sampled = adaptive_bandwidths(x, o);
            o.sample_k = 0;  // exact
            const MatrixD exact = adaptive_bandwidths(x, o);
            std::vector<double> ratio(static_cast<std::size_t>(n));
            for (Index i = 0; i < n; ++i) ratio[std::size_t(i)] = sampled(i, 0) / exact(i, 0);
            std::sort(ratio.begin(), ratio.end());
            INFO("dim = " << dim << ": ratio quantiles 5 % " << ratio[std::size_t(n / 20)] << ", median "
                          << ratio[std::size_t(n / 2)] << ", 95 % " << ratio[std::size_t(n - n / 20)]);
            CHECK(std::abs(ratio[std::size_t(n / 2)] - 1) < 0.03);
            CHECK(ratio[std::size_t(n / 20)] > 0.8);
            CHECK(ratio[std::size_t(n - n / 20)] < 1.2);
        }
        AdaptiveBandwidthOptions bad;
        bad.sample_k = -1;
        CHECK_THROWS_AS(adaptive_bandwidths(MatrixF::Random(20, 2), bad), InvalidArgument);
    }
    SUBCASE("duplicates: the documented floor, or an error without it")
    {
        MatrixF d(6, 1);
        d << 0, 0, 0, 1, 3, 6;
        AdaptiveBandwidthOptions o;
        o.k = 2;
        o.c = 1.0;
        // d_2 = 0, 0, 0, 1, 3, 5: the median of the positive ones is 3, the floor 0.3. In one
        // dimension d̂ = 1, so the density term is 1.6 · d_2; a point with two duplicates has no
        // self-weight width (they alone weigh twice the point), x = 1 has s = 1 / sqrt(2 ln 2) < 1.6.
        const MatrixD h = adaptive_bandwidths(d, o);
        CHECK(h(0, 0) == doctest::Approx(kAdaptiveDensityFactor * 0.3));
        CHECK(h(3, 0) == doctest::Approx(kAdaptiveDensityFactor * 1.0));
        o.floor_fraction = 0;
        CHECK_THROWS_WITH_AS(adaptive_bandwidths(d, o), doctest::Contains("duplicates"), InvalidArgument);
        MatrixF same = MatrixF::Constant(5, 2, 1.0f);
        CHECK_THROWS_WITH_AS(adaptive_bandwidths(same, {}), doctest::Contains("duplicates"), InvalidArgument);
    }
    SUBCASE("bad options")
    {
        const MatrixF x = normal_sample(20, {1.0}, "bwsel-bad");
        AdaptiveBandwidthOptions o;
        o.k = 20;
        CHECK_THROWS_AS(adaptive_bandwidths(x, o), InvalidArgument);
        o.k = 3;
        o.c = 0;
        CHECK_THROWS_AS(adaptive_bandwidths(x, o), InvalidArgument);
        o.c = std::numeric_limits<double>::quiet_NaN();
        CHECK_THROWS_AS(adaptive_bandwidths(x, o), InvalidArgument);
        o.c = 1;
        o.floor_fraction = 2;
        CHECK_THROWS_AS(adaptive_bandwidths(x, o), InvalidArgument);
        o.floor_fraction = 0.1;
        o.intrinsic_dimension = 0.5;
        CHECK_THROWS_AS(adaptive_bandwidths(x, o), InvalidArgument);
        o.intrinsic_dimension = std::numeric_limits<double>::infinity();
        CHECK_THROWS_AS(adaptive_bandwidths(x, o), InvalidArgument);
    }
}

TEST_CASE("bandwidth selection: Abramson's pilot-density bandwidths")
{
    SUBCASE("pilot density: the Gaussian sum over every point, itself included")
    {
        MatrixF x(3, 2);
        x << 0, 0, 1, 0, 0, 2;
        const auto f = pilot_density(x, 0.5);
        const double a = -0.5 / 0.25;
        CHECK(f[0] == doctest::Approx((1 + std::exp(a * 1) + std::exp(a * 4)) / 3));
        CHECK(f[1] == doctest::Approx((1 + std::exp(a * 1) + std::exp(a * 5)) / 3));
        CHECK(f[2] == doctest::Approx((1 + std::exp(a * 4) + std::exp(a * 5)) / 3));
    }
    SUBCASE("1-D standard normal: log h_i - log h_j = (x_i^2 - x_j^2) / (4 (1 + s^2)) ~ (x_i^2 - x_j^2) / 4")
    {
        // The pilot's expectation at x is the N(0, 1 + s^2) density (the sample's N(0, 1) blurred
        // by the pilot's σ = s), so (f(x_i)/f(x_j))^(-1/2) = exp((x_i^2 - x_j^2) / (4 (1 + s^2))).
        const Index n = 6000;
        auto rng = mstest::make_rng("bwsel-abramson-normal");
        std::normal_distribution<double> z(0.0, 1.0);
        MatrixF x(n, 1);
        for (Index i = 0; i < n; ++i) x(i, 0) = float(z(rng));
        AbramsonOptions o;
        o.pilot = 0.25;
        o.c = 2.0;
        const MatrixD h = abramson_bandwidths(x, o);
        REQUIRE(h.rows() == n);
        REQUIRE(h.cols() == 1);
        // Geometric mean of the h_i is h0 = c · pilot.
        double ml = 0;
        for (Index i = 0; i < n; ++i) ml += std::log(h(i, 0));
        CHECK(std::exp(ml / double(n)) == doctest::Approx(0.5).epsilon(1e-9));
        // log h_i = a + b x_i^2 by least squares over |x_i| <= 2 (the tails have few points: a
        // noisy pilot): b = 1 / (4 (1 + s^2)) = 0.2353 (over 12 seeds in NumPy: 0.226-0.244,
        // residual RMS 0.006-0.018, max 0.07), close to the 1/4 of h_i/h_j = exp((x_i^2 - x_j^2)/4).
        double sx = 0, sy = 0, sxx = 0, sxy = 0;
        int used = 0;
        for (Index i = 0; i < n; ++i) {
            const double t = double(x(i, 0)) * x(i, 0);
            if (t > 4.0) continue;
            const double l = std::log(h(i, 0));
            sx += t;
            sy += l;
            sxx += t * t;
            sxy += t * l;
            ++used;
        }
        CHECK(used > 5000);
        const double b = (used * sxy - sx * sy) / (used * sxx - sx * sx), a = (sy - b * sx) / used;
        const double s2 = 0.25 * 0.25;
        CHECK(b == doctest::Approx(1 / (4 * (1 + s2))).epsilon(0.08));
        CHECK(b == doctest::Approx(0.25).epsilon(0.15));
        double ss = 0, worst = 0;
        for (Index i = 0; i < n; ++i) {
            const double t = double(x(i, 0)) * x(i, 0);
            if (t > 4.0) continue;
            const double r = std::log(h(i, 0)) - (a + b * t);
            ss += r * r;
            worst = std::max(worst, std::fabs(r));
        }
        CHECK(std::sqrt(ss / used) < 0.04);
        CHECK(worst < 0.2);
        Index j = 0;
        for (Index i = 0; i < n; ++i)
            if (std::fabs(x(i, 0)) < std::fabs(x(j, 0))) j = i;
        // Wide in the tails, narrow at the centre.
        Index far = 0;
        for (Index i = 0; i < n; ++i)
            if (std::fabs(x(i, 0)) > std::fabs(x(far, 0))) far = i;
        CHECK(h(far, 0) > 2.0 * h(j, 0));
    }
    SUBCASE("defaults, alpha = 0 and per dimension")
    {
        const MatrixF x = normal_sample(400, {1.0, 10.0}, "bwsel-abramson-dims");
        AbramsonOptions o;
        o.alpha = 0;
        const MatrixD h = abramson_bandwidths(x, o);  // fixed: h0 = 2 × Silverman's isotropic rule
        const double silver = 2 * rule_bandwidth(x, BandwidthRule::Silverman);
        for (Index i = 0; i < x.rows(); ++i) {
            CHECK(h(i, 0) == doctest::Approx(silver).epsilon(1e-6));
            CHECK(h(i, 1) == h(i, 0));
        }
        o.alpha = 0.5;
        o.per_dimension = true;
        const MatrixD hp = abramson_bandwidths(x, o);
        const auto s = rule_bandwidths(x, BandwidthRule::Silverman);  // per dimension: s_d times the factor
        for (Index i = 0; i < x.rows(); ++i) CHECK(hp(i, 1) / hp(i, 0) == doctest::Approx(s[1] / s[0]).epsilon(1e-5));
        CHECK_NOTHROW(Bandwidth::per_point(hp));
    }
    SUBCASE("bad input")
    {
        const MatrixF x = normal_sample(20, {1.0}, "bwsel-abramson-bad");
        AbramsonOptions o;
        o.c = 0;
        CHECK_THROWS_WITH_AS(abramson_bandwidths(x, o), doctest::Contains("c must be"), InvalidArgument);
        o.c = 1;
        o.alpha = 1.5;
        CHECK_THROWS_WITH_AS(abramson_bandwidths(x, o), doctest::Contains("alpha"), InvalidArgument);
        o.alpha = 0.5;
        o.pilot = -1;
        CHECK_THROWS_WITH_AS(abramson_bandwidths(x, o), doctest::Contains("pilot"), InvalidArgument);
        o.pilot = std::numeric_limits<double>::infinity();
        CHECK_THROWS_AS(abramson_bandwidths(x, o), InvalidArgument);
        CHECK_THROWS_AS(abramson_bandwidths(MatrixF(0, 1), {}), InvalidArgument);
        CHECK_THROWS_WITH_AS(abramson_bandwidths(MatrixF::Zero(1, 2), {}), doctest::Contains("n >= 2"),
                             InvalidArgument);
        CHECK_THROWS_WITH_AS(abramson_bandwidths(MatrixF::Constant(5, 2, 1.0f), {}), doctest::Contains("the same"),
                             InvalidArgument);
        MatrixF c(10, 2);
        c.col(0) = x.col(0).head(10);
        c.col(1).setConstant(3.0f);
        o = {};
        o.per_dimension = true;
        CHECK_THROWS_WITH_AS(abramson_bandwidths(c, o), doctest::Contains("constant"), InvalidArgument);
        MatrixF bad = x;
        bad(3, 0) = std::numeric_limits<float>::quiet_NaN();
        CHECK_THROWS_WITH_AS(abramson_bandwidths(bad, {}), doctest::Contains("finite"), InvalidArgument);
        CHECK_THROWS_AS(pilot_density(x, 0), InvalidArgument);
    }
}
