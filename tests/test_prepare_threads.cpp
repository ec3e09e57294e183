// The host preparation (skeleton/src/core/prepare.cpp, Bandwidth::per_point) on the host threads: the
// prepared data are bit-identical for 1 and several threads, and equal to the serial float64
// formulas (Eigen's whole-matrix expressions, as the preparation computed them on one thread);
// refused inputs name the first bad row for any thread count.
#include "test_support.hpp"

#include "skeleton/src/core/parallel.hpp"
#include "skeleton/src/core/prepare.hpp"

#include <meanshift/errors.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace meanshift;

namespace {

// Large enough that every pass runs on the threads (n × k ≥ kParallelMinValues = 131,072).
constexpr Index kN = 60011;
constexpr int kK = 3;

template <class A, class B>
bool same_bits(const A& a, const B& b)
{
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::memcmp(a.data(), b.data(), sizeof(*a.data()) * static_cast<std::size_t>(a.size())) == 0;
}

void check_same(const detail::Prepared& a, const detail::Prepared& b)
{
    CHECK(a.data.model == b.data.model);
    CHECK(same_bits(a.centre, b.centre));
    CHECK(same_bits(a.scale, b.scale));
    CHECK(same_bits(a.data.points, b.data.points));
    CHECK(same_bits(a.data.points_f, b.data.points_f));
    CHECK(same_bits(a.data.precision, b.data.precision));
    CHECK(same_bits(a.data.precision_f, b.data.precision_f));
    CHECK(same_bits(a.data.log_weight, b.data.log_weight));
    CHECK(same_bits(a.data.log_weight_f, b.data.log_weight_f));
}

detail::Prepared prepare_with(int threads, const std::vector<float>& x, const Bandwidth& bw, const float* weights)
{
    const detail::HostThreads scope(threads);
    return detail::prepare(x.data(), kN, kK, bw, weights);
}

/// The per-point model's precisions, scale and log-weights by the serial formulas: H_i's diagonal,
/// scale_d = sqrt(exp(mean_i log(1/H_i,dd))) over the whole column, then 1/H_i,dd / scale_d², and
/// ½ Σ_d log of them minus their maximum (plus log w_i, floored at -1e4, when weighted).
void serial_oracle(const std::vector<float>& x, const Bandwidth& bw, const float* weights, MatrixD& precision,
                   VectorD& scale, VectorD& log_weight)
{
    MatrixD prec(kN, kK);
    std::vector<double> row(kK), var(kK);
    for (Index i = 0; i < kN; ++i) {
        for (int d = 0; d < kK; ++d) row[std::size_t(d)] = x[std::size_t(i * kK + d)];
        bw.covariance_diagonal(i, row.data(), kK, var.data());
        for (int d = 0; d < kK; ++d) prec(i, d) = 1.0 / var[std::size_t(d)];
    }
    scale.resize(kK);
    for (int d = 0; d < kK; ++d) scale[d] = std::sqrt(std::exp(prec.col(d).array().log().mean()));
    for (int d = 0; d < kK; ++d) prec.col(d) /= scale[d] * scale[d];
    log_weight = 0.5 * prec.array().log().rowwise().sum().matrix();
    log_weight.array() -= log_weight.maxCoeff();
    if (weights) {
        for (Index i = 0; i < kN; ++i)
            log_weight[i] += weights[i] > 0 ? std::max(-1e4, std::log(static_cast<double>(weights[i]))) : -1e4;
        log_weight.array() -= log_weight.maxCoeff();
        log_weight = log_weight.cwiseMax(-1e4);
    }
    precision = std::move(prec);
}

struct Cloud {
    std::vector<float> x;
    MatrixD sigma;
    std::vector<float> w;
};

Cloud make_cloud(const std::string& tag)
{
    auto rng = mstest::make_rng(tag);
    std::normal_distribution<double> g(0.0, 30.0);
    std::uniform_real_distribution<double> u(-3.0, 1.0), uw(0.0, 4.0);
    Cloud c;
    c.x.resize(std::size_t(kN * kK));
    for (auto& v : c.x) v = static_cast<float>(g(rng));
    c.sigma.resize(kN, kK);
    for (Index i = 0; i < c.sigma.size(); ++i) c.sigma.data()[i] = std::pow(10.0, u(rng));  // 1e-3 .. 10
    c.w.resize(std::size_t(kN));
    for (auto& v : c.w) v = static_cast<float>(uw(rng));
    c.w[7] = 0.0f;
    c.w[std::size_t(kN - 2)] = 1e-30f;  // log w = -69: far below the others
    return c;
}

}  // namespace

TEST_CASE("prepare on the host threads: per-point bandwidths and weights give the serial values, bit for bit")
{
    MSTEST_SEED_INFO();
    const Cloud c = make_cloud("prepare_threads_per_point");
    const Bandwidth bw = Bandwidth::per_point(c.sigma);
    for (const bool weighted : {false, true}) {
        CAPTURE(weighted);
        const float* w = weighted ? c.w.data() : nullptr;
        const detail::Prepared one = prepare_with(1, c.x, bw, w);
        REQUIRE(one.data.model == KernelModel::PerPoint);
        MatrixD precision;
        VectorD scale, log_weight;
        serial_oracle(c.x, bw, w, precision, scale, log_weight);
        CHECK(same_bits(one.scale, scale));
        CHECK(same_bits(one.data.precision, precision));
        CHECK(same_bits(one.data.log_weight, log_weight));
        CHECK(same_bits(one.data.precision_f, MatrixF(precision.cast<float>())));
        CHECK(same_bits(one.data.log_weight_f, VectorF(log_weight.cast<float>())));
        for (int threads : {2, 3, 7}) {
            CAPTURE(threads);
            check_same(one, prepare_with(threads, c.x, bw, w));
        }
    }
}

TEST_CASE("prepare on the host threads: H_i depending on the point (Sec. IV) and a shared H with weights")
{
    MSTEST_SEED_INFO();
    Cloud c = make_cloud("prepare_threads_exponential");
    for (std::size_t i = 2; i < c.x.size(); i += 3) c.x[i] = c.x[i] / 30.0f;  // y_k = O(1): exp(y_k) in range
    const Bandwidth sec4 = Bandwidth::exponential_last({0.5, 2.0, 0.25});
    MatrixD precision;
    VectorD scale, log_weight;
    serial_oracle(c.x, sec4, nullptr, precision, scale, log_weight);
    const detail::Prepared one = prepare_with(1, c.x, sec4, nullptr);
    CHECK(same_bits(one.data.precision, precision));
    CHECK(same_bits(one.data.log_weight, log_weight));
    check_same(one, prepare_with(3, c.x, sec4, nullptr));

    const Bandwidth shared = Bandwidth::diagonal({1.5, 0.5, 2.0});
    const detail::Prepared s1 = prepare_with(1, c.x, shared, c.w.data());
    CHECK(s1.data.model == KernelModel::PerPoint);  // weights ride on unit precisions
    CHECK(s1.data.log_weight.maxCoeff() == 0.0);
    CHECK(s1.data.log_weight[7] == -1e4);
    check_same(s1, prepare_with(4, c.x, shared, c.w.data()));

    // PreparedData::finalize (the float32 copies and log-weights of a caller's prepared data).
    PreparedData a = s1.data, b = s1.data;
    {
        const detail::HostThreads scope(1);
        a.finalize();
    }
    {
        const detail::HostThreads scope(3);
        b.finalize();
    }
    CHECK(same_bits(a.points_f, MatrixF(s1.data.points.cast<float>())));
    CHECK(same_bits(a.points_f, b.points_f));
    CHECK(same_bits(a.log_weight, b.log_weight));
    CHECK(same_bits(a.precision_f, b.precision_f));
}

TEST_CASE("prepare on the host threads: refused inputs name the first bad row for any thread count")
{
    MSTEST_SEED_INFO();
    Cloud c = make_cloud("prepare_threads_refused");
    for (int threads : {1, 2, 5}) {
        CAPTURE(threads);
        const detail::HostThreads scope(threads);
        MatrixD bad = c.sigma;
        bad(50000, 2) = std::numeric_limits<double>::quiet_NaN();
        bad(41234, 1) = -1.0;
        CHECK_THROWS_WITH_AS(Bandwidth::per_point(bad), doctest::Contains("(41234, 1)"), InvalidArgument);

        MatrixD tiny = c.sigma;  // finite and > 0, but the variance underflows float64
        tiny(52000, 0) = 1e-200;
        tiny(43210, 2) = 1e-170;
        const Bandwidth bw = Bandwidth::per_point(tiny);
        CHECK_THROWS_WITH_AS(detail::prepare(c.x.data(), kN, kK, bw, nullptr), doctest::Contains("of point 43210"),
                             InvalidArgument);

        std::vector<float> w = c.w;
        w[59000] = std::numeric_limits<float>::infinity();
        w[45678] = -0.5f;
        CHECK_THROWS_WITH_AS(detail::check_weights(w.data(), kN), doctest::Contains("row 45678"), InvalidArgument);
        std::vector<float> zero(std::size_t(kN), 0.0f);
        CHECK_THROWS_WITH_AS(detail::check_weights(zero.data(), kN), doctest::Contains("all weights are 0"),
                             InvalidArgument);
    }
}
