// Bandwidth models (eq. 1-6 with diagonal H_i, Sec. IV closed form): factories, the H_i they
// produce, and validation of bad values (also checked end to end in test_bad_input.cpp).
#include "test_support.hpp"

#include <meanshift/bandwidth.hpp>

#include <cfloat>
#include <limits>

using namespace meanshift;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::vector<double> diag_of(const Bandwidth& b, Index i, std::vector<double> y)
{
    std::vector<double> out(y.size(), -1.0);
    b.covariance_diagonal(i, y.data(), int(y.size()), out.data());
    return out;
}
}  // namespace

TEST_CASE("bandwidth: kinds and H_i (variances) of every model")
{
    SUBCASE("isotropic h is a standard deviation: H = h^2 I")
    {
        Bandwidth b = Bandwidth::isotropic(2.0);
        CHECK(b.kind() == BandwidthKind::Isotropic);
        CHECK(b.shared());
        CHECK(diag_of(b, 5, {1.0, -3.0, 100.0}) == std::vector<double>{4.0, 4.0, 4.0});
    }
    SUBCASE("diagonal")
    {
        Bandwidth b = Bandwidth::diagonal({1.0, 2.0, 0.5});
        CHECK(b.kind() == BandwidthKind::Diagonal);
        CHECK(b.shared());
        CHECK(diag_of(b, 0, {7.0, 8.0, 9.0}) == std::vector<double>{1.0, 4.0, 0.25});
    }
    SUBCASE("per point: row i belongs to point i")
    {
        MatrixD h(3, 2);
        h << 1.0, 2.0, 3.0, 0.5, 0.25, 4.0;
        Bandwidth b = Bandwidth::per_point(h);
        CHECK(b.kind() == BandwidthKind::PerPoint);
        CHECK_FALSE(b.shared());
        CHECK(diag_of(b, 0, {0.0, 0.0}) == std::vector<double>{1.0, 4.0});
        CHECK(diag_of(b, 1, {0.0, 0.0}) == std::vector<double>{9.0, 0.25});
        CHECK(diag_of(b, 2, {0.0, 0.0}) == std::vector<double>{0.0625, 16.0});
    }
    SUBCASE("exponential_last: sigma_d e^{y_k} for d < k, sigma_k; sigma are variances")
    {
        Bandwidth b = Bandwidth::exponential_last({0.5, 2.0, 3.0});
        CHECK(b.kind() == BandwidthKind::ExponentialLast);
        CHECK_FALSE(b.shared());
        const auto v = diag_of(b, 0, {10.0, -4.0, 1.5});
        CHECK(v[0] == doctest::Approx(0.5 * std::exp(1.5)));
        CHECK(v[1] == doctest::Approx(2.0 * std::exp(1.5)));
        CHECK(v[2] == doctest::Approx(3.0));
        const auto w = diag_of(b, 7, {0.0, 0.0, -2.0});
        CHECK(w[0] == doctest::Approx(0.5 * std::exp(-2.0)));
        CHECK(w[2] == doctest::Approx(3.0));
    }
}

TEST_CASE("bandwidth: values <= 0 or non-finite are rejected with a message naming the bandwidth")
{
    for (double bad : {0.0, -1.0, -0.0, kNaN, kInf, -kInf}) {
        INFO("value " << bad);
        CHECK_THROWS_KEYWORD(InvalidArgument, Bandwidth::isotropic(bad), "bandwidth");
        CHECK_THROWS_KEYWORD(InvalidArgument, Bandwidth::diagonal({1.0, bad}), "bandwidth");
        MatrixD h = MatrixD::Ones(3, 2);
        h(2, 1) = bad;
        CHECK_THROWS_KEYWORD(InvalidArgument, Bandwidth::per_point(h), "bandwidth");
        CHECK_THROWS_KEYWORD(InvalidArgument, Bandwidth::exponential_last({bad, 1.0}), "bandwidth", "sigma");
    }
    CHECK_THROWS_KEYWORD(InvalidArgument, Bandwidth::diagonal({}), "bandwidth");
    CHECK_THROWS_KEYWORD(InvalidArgument, Bandwidth::per_point(MatrixD(0, 0)), "bandwidth");
    CHECK_THROWS_KEYWORD(InvalidArgument, Bandwidth::exponential_last({1.0}), "k >= 2", "k");
}

TEST_CASE("bandwidth: singular H_i (zero, denormal or overflowing variance) is rejected")
{
    // Standard deviations whose squares underflow to 0, are denormal, or overflow.
    for (double h : {1e-170, 1e-160, 1e-155, 1e160, 1e200}) {
        INFO("h = " << h);
        try {
            Bandwidth b = Bandwidth::isotropic(h);
            std::vector<double> y{0.0, 0.0};
            // The message names the sigma the user gave (short scientific form) and the rule.
            CHECK_THROWS_KEYWORD(InvalidArgument, diag_of(b, 0, y), "out of range", "sigma = ", "flows");
        } catch (const InvalidArgument&) {
            // rejecting it already in the factory is fine too
        }
    }
    Bandwidth e = Bandwidth::exponential_last({1.0, 1.0});
    CHECK_THROWS_KEYWORD(InvalidArgument, diag_of(e, 3, {0.0, 800.0}), "singular");  // e^800 overflows
    CHECK_THROWS_KEYWORD(InvalidArgument, diag_of(e, 3, {0.0, -800.0}), "singular");  // e^-800 underflows
    CHECK_THROWS_KEYWORD(InvalidArgument, diag_of(e, 3, {0.0, -720.0}), "singular");  // denormal
    CHECK_NOTHROW(diag_of(e, 3, {0.0, 50.0}));
    Bandwidth tiny = Bandwidth::exponential_last({1e-300, 1.0});
    CHECK_THROWS_KEYWORD(InvalidArgument, diag_of(tiny, 0, {0.0, -30.0}), "singular");
}
