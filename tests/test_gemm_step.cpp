// The openmp backend's GEMM form of the step (backends/openmp/gemm_step_*.cpp) against the
// float64 serial oracle: k = 16, 64, 128, shared and per-point H, exact and truncated kernel (brute
// force and kd-tree ranges), every SIMD width this CPU runs, 1 and 2 threads, ragged mode counts.
// The data are spread-out blobs with the modes in input order spanning all blobs (the worst case for
// the float32 expansion q·x − ½|q|² − ½|x|²), at h = 1 (as `meanshift bench`) and h = √k/2 (a blob is
// one mode). Also: modes without support keep their position; Auto's choice.
#include <meanshift/config.hpp>

#include <doctest/doctest.h>

#if MEANSHIFT_HAVE_OPENMP

#include "backends/openmp/cpu_features.hpp"
#include "backends/openmp/gemm_step.hpp"
#include "skeleton/src/core/prepare.hpp"
#include "step_support.hpp"
#include "test_support.hpp"

#include <meanshift/meanshift.hpp>
#include <meanshift/registry.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace meanshift;
using mstest::make_rng;

/// The ISA names of the SIMD widths this CPU runs (openmp.isa values).
std::vector<std::string> isas()
{
    std::vector<std::string> out;
    for (const auto* t : openmp_detail::usable_kernels())
        out.push_back(t->width == 16 ? "avx512" : t->width == 8 ? "avx2" : "generic");
    if (openmp_detail::amx_usable()) out.insert(out.begin(), "amx");  // the AVX-512 unit with AMX products
    return out;
}

std::unique_ptr<Backend> openmp(PairForm form, const std::string& isa = "auto", int threads = 0)
{
    BackendOptions o;
    o.pair_form = form;
    o.openmp.isa = isa;
    o.threads = threads;
    o.calibration = Calibration::Off;  // pair_form=auto by the fixed rule, whatever this machine's cache holds
    return make_backend("openmp", o);
}

/// n points in 8 blobs as `meanshift bench` makes them (centres uniform in [−10, 10]^k, unit noise,
/// point i in blob i mod 8), divided by h; per-point: σ_id uniform in [0.5, 1.5] (prepared units).
PreparedData bench_like(std::mt19937_64& rng, Index n, int k, KernelModel model, double h)
{
    std::uniform_real_distribution<double> centre(-10.0, 10.0), sigma(0.5, 1.5);
    std::normal_distribution<double> noise(0.0, 1.0);
    MatrixD c(8, k);
    for (Index i = 0; i < c.size(); ++i) c.data()[i] = centre(rng);
    PreparedData D;
    D.model = model;
    D.points.resize(n, k);
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d) D.points(i, d) = double(float((c(i % 8, d) + noise(rng)) / h));
    if (model == KernelModel::PerPoint) {
        D.precision.resize(n, k);
        for (Index i = 0; i < n; ++i)
            for (int d = 0; d < k; ++d) {
                const double s = sigma(rng);
                D.precision(i, d) = double(float(1.0 / (s * s)));
            }
    }
    D.finalize();
    return D;
}

/// count modes: data points in input order (spanning all blobs), every other one jittered.
MatrixD modes_at_points(std::mt19937_64& rng, const PreparedData& D, Index count)
{
    std::normal_distribution<double> jitter(0.0, 0.2);
    MatrixD Q(count, D.k());
    for (Index q = 0; q < count; ++q)
        for (int d = 0; d < D.k(); ++d)
            Q(q, d) = double(float(D.points((q * 7) % D.n(), d) + (q % 2 ? jitter(rng) : 0.0)));
    return Q;
}

/// One step of Q on `b` over D (a fresh binding), with its report.
MatrixD step(Backend& b, const PreparedData& D, const MatrixD& Q, StepReport* report = nullptr)
{
    MatrixD out = MatrixD::Constant(Q.rows(), Q.cols(), std::nan(""));
    b.bind(mstest::share(D), Topology{})->step_once(Q.data(), out.data(), Q.rows(), report);
    return out;
}

/// docs/testing.md's conformance tolerance: 1e-4 + 1e-5·R (R = largest |coordinate|), 1.5× per point.
double conformance_tolerance(const PreparedData& D, const MatrixD& Q)
{
    const double R = std::max(D.points.cwiseAbs().maxCoeff(), Q.cwiseAbs().maxCoeff());
    return (1e-4 + 1e-5 * R) * (D.model == KernelModel::Shared ? 1.0 : 1.5);
}

/// The smallest bandwidth in prepared units (1 for the shared model: whitened).
double smallest_bandwidth(const PreparedData& D)
{
    return D.model == KernelModel::Shared ? 1.0 : 1.0 / std::sqrt(D.precision.maxCoeff());
}

std::string model_name(KernelModel m)
{
    return m == KernelModel::Shared ? "shared" : "per-point";
}

/// Per row of Q: how far the new mode may move when the pairs whose float64 D² lies within float32
/// rounding of the cutoff are decided the other way. The GEMM form computes D² = |q|² + |x|² − 2q·x
/// in float32, an error of a few ulps of Σ w(q² + x²) (8 allowed); such a pair is legitimately in or out. Toggling
/// pair j moves coordinate d by e_j w_jd |x_jd − m_d| / (S0_d − e_j w_jd) (m = the oracle's mode, S0_d
/// its denominator). 0 for rows without such a pair (nearly all), so a wrong step still fails.
std::vector<double> cutoff_allowance(const PreparedData& D, const MatrixD& Q, const MatrixD& want)
{
    std::vector<double> out(static_cast<std::size_t>(Q.rows()), 0.0);
    if (!std::isfinite(D.cutoff2)) return out;
    const int k = D.k();
    const bool pp = D.model == KernelModel::PerPoint;
    auto w = [&](Index i, int d) { return pp ? D.precision(i, d) : 1.0; };
    for (Index q = 0; q < Q.rows(); ++q) {
        std::vector<double> d2(static_cast<std::size_t>(D.n())), band(d2.size()), e(d2.size());
        VectorD s0 = VectorD::Zero(k);
        for (Index i = 0; i < D.n(); ++i) {
            double s = 0, mag = 0;
            for (int d = 0; d < k; ++d) {
                const double diff = Q(q, d) - D.points(i, d);
                s += w(i, d) * diff * diff;
                mag += w(i, d) * (Q(q, d) * Q(q, d) + D.points(i, d) * D.points(i, d));
            }
            d2[i] = s;
            band[i] = 5e-7 * mag;  // 8 float32 ulps of the expansion's terms
            e[i] = std::exp((pp ? D.log_weight[i] : 0.0) - 0.5 * s);
            if (s <= D.cutoff2)
                for (int d = 0; d < k; ++d) s0[d] += e[i] * w(i, d);
        }
        for (Index i = 0; i < D.n(); ++i) {
            if (std::abs(d2[i] - D.cutoff2) > band[i]) continue;
            double worst = 0;
            for (int d = 0; d < k; ++d) {
                const double rest = std::max(s0[d] - e[i] * w(i, d), 1e-300);
                worst = std::max(worst, e[i] * w(i, d) * std::abs(D.points(i, d) - want(q, d)) / rest);
            }
            out[static_cast<std::size_t>(q)] += worst;
        }
    }
    return out;
}

/// Largest amount by which a row of `got` exceeds its tolerance `tol + allowance[row]` (≤ 0: passes).
double excess(const MatrixD& got, const MatrixD& want, double tol, const std::vector<double>& allowance)
{
    double worst = -tol;
    for (Index q = 0; q < got.rows(); ++q) {
        const double dev = (got.row(q) - want.row(q)).cwiseAbs().maxCoeff();
        worst = std::max(worst, std::isnan(dev) ? HUGE_VAL : dev - tol - allowance[static_cast<std::size_t>(q)]);
    }
    return worst;
}

}  // namespace

TEST_CASE("gemm step: matches the serial oracle within 1e-4 bandwidths (k = 16, 64, 128; shared, per-point; "
          "exact and cutoff 3; every SIMD width)")
{
    MSTEST_SEED_INFO();
    auto rng = make_rng("gemm-step-oracle");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int k : {16, 64, 128})
            for (double h : {1.0, std::sqrt(double(k)) / 2}) {
                PreparedData D = bench_like(rng, 1500 + 7 * k, k, model, h);  // ragged n: tiles of 256 + rest
                const MatrixD Q = modes_at_points(rng, D, 301);  // ragged blocks of 128 modes
                for (double cut : {std::numeric_limits<double>::infinity(), 3.0}) {
                    D.cutoff2 = cut * cut;
                    const MatrixD want = mstest::oracle_step(D, Q);
                    const double tol = std::min(1e-4 * smallest_bandwidth(D), conformance_tolerance(D, Q));
                    const std::vector<double> allowance = cutoff_allowance(D, Q, want);
                    for (const std::string& isa : isas())
                        for (int threads : {1, 2}) {
                            auto be = openmp(PairForm::Gemm, isa, threads);
                            const MatrixD got = step(*be, D, Q);
                            const std::string what = model_name(model) + " k=" + std::to_string(k) +
                                                     " h=" + std::to_string(h) + " cutoff=" + std::to_string(cut) +
                                                     " isa=" + isa + " threads=" + std::to_string(threads);
                            INFO(what << ": deviation " << mstest::max_abs_diff(got, want) << ", tolerance " << tol
                                      << " + the row's cutoff-boundary allowance");
                            CHECK(excess(got, want, tol, allowance) <= 0.0);
                        }
                }
            }
}

TEST_CASE("gemm step: modes far from their block's centre (k = 384, h = 1: every mode) take the direct kernels and "
          "match the oracle")
{
    // bench's blobs at h = 1: a mode is ~√k bandwidths from its block's centre, beyond the rounding
    // limit of every unit (spread_modes), so each goes to the direct SIMD kernels after the blocks.
    MSTEST_SEED_INFO();
    auto rng = make_rng("gemm-step-far");
    PreparedData D = bench_like(rng, 1100, 384, KernelModel::Shared, 1.0);
    const MatrixD Q = modes_at_points(rng, D, 300);
    const MatrixD want = mstest::oracle_step(D, Q);
    const double tol = std::min(1e-4 * smallest_bandwidth(D), conformance_tolerance(D, Q));
    const std::vector<double> allowance = cutoff_allowance(D, Q, want);
    for (const std::string& isa : isas())
        for (int threads : {1, 2}) {
            const MatrixD got = step(*openmp(PairForm::Gemm, isa, threads), D, Q);
            INFO("isa=" << isa << " threads=" << threads << ": deviation " << mstest::max_abs_diff(got, want));
            CHECK(excess(got, want, tol, allowance) <= 0.0);
        }
}

TEST_CASE("gemm step: over kd-tree ranges (truncated kernel) it equals the oracle's brute force")
{
    MSTEST_SEED_INFO();
    auto rng = make_rng("gemm-step-tree");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int k : {16, 64}) {
            PreparedData B = bench_like(rng, 2000, k, model, 1.0);  // blobs ~20 bandwidths apart: the tree prunes
            B.cutoff2 = 9.0;
            PreparedData T = B;
            std::string search;
            detail::build_search(T, NeighbourSearch::Tree, search);
            REQUIRE(T.tree);
            const MatrixD Q = modes_at_points(rng, B, 250);
            StepReport rt, rb;
            const MatrixD want = step(*make_backend("serial"), B, Q, &rb);
            const MatrixD got = step(*openmp(PairForm::Gemm), T, Q, &rt);
            INFO(model_name(model) << " k=" << k << ": " << search << ", pairs " << rt.pairs << " of " << rb.pairs);
            CHECK(mstest::max_abs_diff(got, want) <= 1e-4 * smallest_bandwidth(B));
            CHECK(rt.pairs < rb.pairs);  // the ranges were honoured, not all rows visited
        }
}

TEST_CASE("gemm step: a mode whose weights all underflow, or with no point within the cutoff, has no support")
{
    MSTEST_SEED_INFO();
    auto rng = make_rng("gemm-step-support");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (double cut : {std::numeric_limits<double>::infinity(), 3.0}) {
            PreparedData D = bench_like(rng, 700, 64, model, 4.0);
            D.cutoff2 = cut * cut;
            MatrixD Q = modes_at_points(rng, D, 20);
            Q.row(3).setConstant(cut < 10 ? 3.0 : 60.0);  // 3: D² ~ 700 > 9 from every point; 60: exp underflows
            Q.row(11).setConstant(-60.0);
            StepReport report;
            const MatrixD out = step(*openmp(PairForm::Gemm), D, Q, &report);
            const MatrixD want = mstest::oracle_step(D, Q);
            INFO(model_name(model) << " cutoff " << cut);
            for (std::size_t e = 0; e < report.mode.size(); ++e) {
                const Index q = report.mode[e];
                const bool far = q == 3 || q == 11;
                CHECK((report.status[e] == ModeStatus::NoSupport) == far);
                if (far) CHECK(mstest::max_abs_diff(out.row(q), Q.row(q)) == 0.0);
            }
            CHECK(mstest::max_abs_diff(out, want) <= 1e-4 * smallest_bandwidth(D));
        }
}

TEST_CASE("gemm step: pair_form=auto takes the GEMM form at k = 64 with a full block of modes per thread, else the "
          "direct kernels")
{
    MSTEST_SEED_INFO();
    auto rng = make_rng("gemm-step-auto");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        auto same = [](const MatrixD& a, const MatrixD& b) { return mstest::max_abs_diff(a, b) == 0.0; };
        const PreparedData hi = bench_like(rng, 600, 64, model, 4.0);
        // 2 threads: a full block each is ≥ 256 modes (≥ 512 with AMX, whose blocks are 256)
        const MatrixD many = modes_at_points(rng, hi, 600), few = modes_at_points(rng, hi, 50);
        CHECK(same(step(*openmp(PairForm::Auto, "auto", 2), hi, many),
                   step(*openmp(PairForm::Gemm, "auto", 2), hi, many)));
        CHECK(same(step(*openmp(PairForm::Auto, "auto", 2), hi, few),
                   step(*openmp(PairForm::Direct, "auto", 2), hi, few)));
        CHECK(same(step(*openmp(PairForm::Auto, "auto", 1), hi, few),
                   step(*openmp(PairForm::Direct, "auto", 1), hi, few)));
        const PreparedData lo = bench_like(rng, 600, 4, model, 1.0);
        const MatrixD Ql = modes_at_points(rng, lo, 300);
        CHECK(
            same(step(*openmp(PairForm::Auto, "auto", 2), lo, Ql), step(*openmp(PairForm::Direct, "auto", 2), lo, Ql)));
    }
}

TEST_CASE("gemm step: the AMX unit (openmp.isa=amx) matches the float64 oracle at k = 16, 33, 64, 130, shared and "
          "per-point, data 1e4 from the origin, and with per-point weights beyond float32's range")
{
    if (!openmp_detail::amx_usable()) {
        MESSAGE("skipped: AMX (AMX-TILE, AMX-BF16, AVX512-BF16 and the OS's tile state) is not usable here");
        return;
    }
    MSTEST_SEED_INFO();
    auto rng = make_rng("gemm-step-amx");
    CHECK(openmp(PairForm::Gemm, "amx", 2)->devices().front().name.find("AVX-512+AMX") != std::string::npos);
    CHECK(openmp(PairForm::Gemm, "avx512", 2)->devices().front().name.find("AMX") == std::string::npos);
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int k : {16, 33, 64, 130})
            for (double offset : {0.0, 1e4}) {
                // ragged n and mode count: partial K-steps (32 points) and mode tiles (16), k not a multiple of 32
                PreparedData D = bench_like(rng, 1100 + 3 * k, k, model, 1.0);
                if (offset != 0.0) {
                    D.points.array() += offset;  // far from the origin: the block centring must cancel it
                    for (Index i = 0; i < D.points.size(); ++i) D.points.data()[i] = double(float(D.points.data()[i]));
                    D.finalize();
                }
                const MatrixD Q = modes_at_points(rng, D, 150);
                const MatrixD want = mstest::oracle_step(D, Q);
                const double tol = std::min(1e-4 * smallest_bandwidth(D), conformance_tolerance(D, Q));
                for (int threads : {1, 2}) {
                    const MatrixD got = step(*openmp(PairForm::Gemm, "amx", threads), D, Q);
                    INFO(model_name(model)
                         << " k=" << k << " offset=" << offset << " threads=" << threads << ": deviation "
                         << mstest::max_abs_diff(got, want) << ", tolerance " << tol);
                    CHECK(mstest::max_abs_diff(got, want) <= tol);
                }
            }
}

TEST_CASE("gemm step: the AMX pipeline's per-tile shifts: a later tile far heavier than the earlier ones, and tiles "
          "with no weight before the first that has some")
{
    if (!openmp_detail::amx_usable()) {
        MESSAGE("skipped: AMX is not usable here");
        return;
    }
    // Points sorted by blob: 700 of a blob 30 bandwidths away come first (tiles 0-1 of 256 points, and
    // part of tile 2), then 400 near the modes. The exact kernel's first tiles set a mode's shift near
    // its far weights (log2 weight ≈ −650), so the near tile (≈ 0) exceeds it by far more than 64 and
    // restarts the row; the truncated kernel (cutoff 3) gives the first tiles no weight at all.
    MSTEST_SEED_INFO();
    auto rng = make_rng("gemm-step-amx-shift");
    std::normal_distribution<double> noise(0.0, 1.0);
    std::uniform_real_distribution<double> sigma(0.7, 1.4);
    const int k = 48;
    const Index n = 1100;
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        PreparedData D;
        D.model = model;
        D.points.resize(n, k);
        if (model == KernelModel::PerPoint) D.precision.resize(n, k);
        for (Index i = 0; i < n; ++i)
            for (int d = 0; d < k; ++d) {
                D.points(i, d) = double(float((i < 700 && d == 0 ? 30.0 : 0.0) + noise(rng)));
                if (model == KernelModel::PerPoint) D.precision(i, d) = double(float(1.0 / std::pow(sigma(rng), 2)));
            }
        D.finalize();
        MatrixD Q(40, k);
        for (Index q = 0; q < Q.rows(); ++q) Q.row(q) = D.points.row(700 + 9 * q);
        for (double cut : {std::numeric_limits<double>::infinity(), 3.0}) {
            D.cutoff2 = cut * cut;
            const MatrixD want = mstest::oracle_step(D, Q);
            StepReport report;
            const MatrixD got = step(*openmp(PairForm::Gemm, "amx", 1), D, Q, &report);
            INFO(model_name(model) << " cutoff " << cut << ": deviation " << mstest::max_abs_diff(got, want));
            for (std::size_t e = 0; e < report.status.size(); ++e) CHECK(report.status[e] == ModeStatus::Active);
            CHECK(mstest::max_abs_diff(got, want) <=
                  std::min(1e-4 * smallest_bandwidth(D), conformance_tolerance(D, Q)));
        }
    }
}

#endif  // MEANSHIFT_HAVE_OPENMP

TEST_CASE("gemm step: per-point weights |H_i|^-1/2 spanning far beyond float32's range still give the oracle's step")
{
    // Two blobs in 64 dimensions, σ = 1 and σ = 8: their points' log-weights differ by
    // ½·64·ln 64 ≈ 133 (2^-192), so relative to the global maximum every weight of the wide blob
    // underflows float32. The step shifts each mode's exponents by their own maximum instead.
    MSTEST_SEED_INFO();
    auto rng = make_rng("gemm-step-weight-range");
    const int k = 64;
    const Index n = 600;
    std::normal_distribution<double> noise(0.0, 1.0);
    PreparedData D;
    D.model = KernelModel::PerPoint;
    D.points.resize(n, k);
    D.precision.resize(n, k);
    for (Index i = 0; i < n; ++i) {
        const bool wide = i % 2 == 1;
        for (int d = 0; d < k; ++d) {
            D.points(i, d) = double(float((wide ? 40.0 : 0.0) + (wide ? 8.0 : 1.0) * noise(rng)));
            D.precision(i, d) = wide ? 1.0 / 64.0 : 1.0;
        }
    }
    D.finalize();
    REQUIRE(D.log_weight.minCoeff() < -100.0);
    MatrixD Q(64, k);
    for (Index q = 0; q < Q.rows(); ++q) Q.row(q) = D.points.row(q * 9);  // both blobs
    for (double cut : {std::numeric_limits<double>::infinity(), 3.0}) {
        D.cutoff2 = cut * cut;
        const MatrixD want = mstest::oracle_step(D, Q);
        for (const std::string& isa : isas()) {  // "amx" first where AMX is usable
            StepReport report;
            const MatrixD got = step(*openmp(PairForm::Gemm, isa), D, Q, &report);
            INFO("cutoff " << cut << " isa " << isa);
            for (std::size_t e = 0; e < report.status.size(); ++e) CHECK(report.status[e] != ModeStatus::NoSupport);
            // tolerance of the wide blob's units (σ = 8): 1e-4 bandwidths there
            CHECK(mstest::max_abs_diff(got, want) <= 8e-4 + conformance_tolerance(D, Q));
        }
    }
}
