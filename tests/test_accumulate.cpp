// Binding::accumulate (the partial sums the MPI ring strategy adds across ranks): on the host
// backends S1/S0 is the oracle's step (openmp: through its SIMD kernels, float32 terms), sums of disjoint point sets add up to the sums of their
// union, per-point data give k S0 columns; the GPU bindings (opencl, cuda: each of their kernel
// families) give the float64 sums within float32 accumulation and leave the modes of set_modes alone.
#include "skeleton/src/core/prepare.hpp"
#include "step_support.hpp"
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <meanshift/errors.hpp>
#include <meanshift/meanshift.hpp>
#include <meanshift/registry.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace meanshift;
using mstest::make_rng;

/// n points in 3 blobs (prepared units), optionally per-point precisions in [0.5, 2].
PreparedData blobs(std::mt19937_64& rng, Index n, int k, KernelModel model)
{
    std::normal_distribution<double> noise(0.0, 1.0);
    std::uniform_real_distribution<double> prec(0.5, 2.0);
    PreparedData D;
    D.model = model;
    D.points.resize(n, k);
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d) D.points(i, d) = double(float(4.0 * double(i % 3) + noise(rng)));
    if (model == KernelModel::PerPoint) {
        D.precision.resize(n, k);
        for (Index i = 0; i < D.precision.size(); ++i) D.precision.data()[i] = double(float(prec(rng)));
    }
    D.finalize();
    return D;
}

/// The rows [first, first + count) of D as data of their own (same frame; per-point log-weights
/// keep D's shift, so the weights are those of D's points).
PreparedData rows_of(const PreparedData& D, Index first, Index count)
{
    PreparedData P;
    P.model = D.model;
    P.points = D.points.middleRows(first, count);
    if (D.model == KernelModel::PerPoint) P.precision = D.precision.middleRows(first, count);
    P.finalize();
    if (D.model == KernelModel::PerPoint) {
        P.log_weight = D.log_weight.segment(first, count);
        P.log_weight_f = P.log_weight.cast<float>();
    }
    P.cutoff2 = D.cutoff2;
    return P;
}

/// Largest difference of two sums arrays (rows [S0 | S1], ns0 S0 columns), relative to what float
/// rounding scales with: S0 by itself; S1_d = Σ e x_d by Σ e |x_d| ≤ S0_d · R (R = the largest
/// |coordinate|), since an S1 whose terms cancel is small while its rounding is not.
double sums_error(const MatrixD& got, const MatrixD& want, Index ns0, double R)
{
    double worst = 0;
    for (Index q = 0; q < want.rows(); ++q)
        for (Index c = 0; c < want.cols(); ++c) {
            const double s0 = want(q, c < ns0 ? c : (ns0 == 1 ? 0 : c - ns0));
            const double scale = c < ns0 ? s0 : s0 * R;
            worst = std::max(worst, std::abs(got(q, c) - want(q, c)) / std::max(scale, 1e-300));
        }
    return worst;
}

/// One case of the accumulate tests: 600 points of blobs() with the given cutoff, and 40 positions
/// near every 13th point.
std::pair<PreparedData, MatrixD> accumulate_case(std::mt19937_64& rng, int k, KernelModel model, double cut)
{
    PreparedData D = blobs(rng, 600, k, model);
    D.cutoff2 = cut * cut;
    MatrixD Q(40, k);
    for (Index q = 0; q < Q.rows(); ++q) Q.row(q) = D.points.row(q * 13).array() + 0.3;
    return {std::move(D), std::move(Q)};
}

MatrixD sums_of(const std::string& backend, const PreparedData& D, const MatrixD& Q, const Topology& t = {})
{
    auto b = make_backend(backend);
    auto binding = b->bind(mstest::share(D), b->resolve_topology(t, D));
    MatrixD S = MatrixD::Zero(Q.rows(), binding->sum_width());
    binding->accumulate(Q.data(), Q.rows(), S.data());
    return S;
}

}  // namespace

TEST_CASE("accumulate: S1/S0 is the oracle's step, sums of disjoint parts add up (serial, openmp; shared, "
          "per-point; exact and cutoff 3)")
{
    MSTEST_SEED_INFO();
    auto rng = make_rng("accumulate");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (double cut : {std::numeric_limits<double>::infinity(), 3.0}) {
            const int k = 3;
            const auto [D, Q] = accumulate_case(rng, k, model, cut);
            const MatrixD want = mstest::oracle_step(D, Q);
            const bool pp = model == KernelModel::PerPoint;
            for (const char* backend : {"serial", "openmp"}) {
                if (!mstest::backend_usable(backend)) continue;
                INFO(backend << (pp ? " per-point" : " shared") << " cutoff " << cut);
                const MatrixD S = sums_of(backend, D, Q);
                REQUIRE(S.cols() == (pp ? 2 * k : 1 + k));
                double worst = 0;
                for (Index q = 0; q < Q.rows(); ++q)
                    for (int d = 0; d < k; ++d) {
                        const double s0 = S(q, pp ? d : 0), s1 = S(q, (pp ? k : 1) + d);
                        REQUIRE(s0 > 0);
                        worst = std::max(worst, std::abs(s1 / s0 - want(q, d)));
                    }
                // serial: float64 throughout; openmp: its SIMD kernels' float32 terms in float64 sums.
                const bool exact64 = std::string(backend) == "serial";
                CHECK(worst <= (exact64 ? 1e-12 : 1e-4));
                // Three disjoint parts (one of 1 row), accumulated into one array.
                MatrixD parts = MatrixD::Zero(Q.rows(), S.cols());
                for (const auto& r : {std::pair<Index, Index>{0, 250}, {250, 1}, {251, 349}}) {
                    auto b = make_backend(backend);
                    auto binding = b->bind(mstest::share(rows_of(D, r.first, r.second)), Topology{});
                    binding->accumulate(Q.data(), Q.rows(), parts.data());
                }
                CHECK(sums_error(parts, S, pp ? k : 1, D.points.cwiseAbs().maxCoeff()) <= (exact64 ? 1e-12 : 1e-5));
            }
        }
}

TEST_CASE("accumulate: the openmp SIMD kernels with vPPUs of 4 lanes (f_vppu = f_load = 4) give the same sums")
{
    auto rng = make_rng("accumulate-vppu");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        PreparedData D = blobs(rng, 500, 3, model);
        MatrixD Q = D.points.topRows(37).array() + 0.2;
        Topology t;
        t.f_vppu = t.f_load = 4;
        const MatrixD want = sums_of("serial", D, Q), got = sums_of("openmp", D, Q, t);
        INFO(std::string(model == KernelModel::Shared ? "shared" : "per-point"));
        CHECK(sums_error(got, want, model == KernelModel::PerPoint ? 3 : 1, D.points.cwiseAbs().maxCoeff()) <= 1e-5);
    }
}

namespace {

/// A GPU binding and the kernels its accumulate() runs (those of its step): each entry picks
/// another kernel family; `exact_only`: the truncated kernel would run what another entry runs, or
/// cannot run with these options (CUDA's range kernels need every point resident).
struct GpuVariant {
    const char* backend;
    const char* what;
    BackendOptions options;
    Topology topology;
    bool exact_only = false;
};

std::vector<GpuVariant> gpu_variants()
{
    std::vector<GpuVariant> v;
    Topology vppu2;
    vppu2.f_vppu = vppu2.f_load = 2;
    BackendOptions direct, gemm, chunks;
    direct.opencl.exponent = ExponentForm::Direct;
    gemm.pair_form = PairForm::Gemm;
    chunks.cuda.max_queries = 7;  // chunks of queries and streamed chunks of points
    chunks.cuda.max_points = 128;
    v.push_back({"opencl", "default shape (PoCL: approx_mode_cpu, range_modes_cpu)", {}, {}});
    v.push_back({"opencl", "GPU shape, expanded exponent, f_vppu = 2 (range_modes)", {}, vppu2});
    v.push_back({"opencl", "GPU shape, direct exponent", direct, vppu2, true});
    v.push_back({"opencl", "pair_form = gemm", gemm, {}});
    v.push_back({"cuda", "default (fast kernels, range kernels)", {}, {}});
    v.push_back({"cuda", "topology kernels, f_vppu = 2", {}, vppu2});
    v.push_back({"cuda", "topology kernels, 7 queries and 128 points a chunk", chunks, vppu2, true});
    v.push_back({"cuda", "pair_form = gemm", gemm, {}});
    return v;
}

}  // namespace

TEST_CASE("accumulate: the GPU bindings' sums equal the float64 sums within float32 accumulation, add up over "
          "disjoint parts and leave the modes of set_modes alone (opencl, cuda; shared, per-point; exact and cutoff 3)")
{
    MSTEST_SEED_INFO();
    auto rng = make_rng("accumulate-gpu");
    std::vector<GpuVariant> variants;
    for (const char* gpu : {"opencl", "cuda"})
        if (mstest::backend_usable(gpu))
            for (const GpuVariant& v : gpu_variants())
                if (std::string(v.backend) == gpu) variants.push_back(v);
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (double cut : {std::numeric_limits<double>::infinity(), 3.0}) {
            const int k = 3;
            const auto [D, Q] = accumulate_case(rng, k, model, cut);
            const MatrixD want = sums_of("serial", D, Q);
            const bool pp = model == KernelModel::PerPoint;
            const Index ns0 = pp ? k : 1;
            const double R = D.points.cwiseAbs().maxCoeff();
            for (const GpuVariant& v : variants) {
                if (v.exact_only && std::isfinite(cut)) continue;
                const std::string what = std::string(v.backend) + ", " + v.what + (pp ? ", per-point" : ", shared");
                INFO(what << ", cutoff " << cut);
                auto b = make_backend(v.backend, v.options);
                auto binding = b->bind(mstest::share(D), b->resolve_topology(v.topology, D));
                MatrixD S = MatrixD::Zero(Q.rows(), binding->sum_width());
                const double pairs = binding->accumulate(Q.data(), Q.rows(), S.data());
                CHECK(pairs > 0);
                CHECK(pairs <= double(Q.rows()) * double(D.n()));
                // float32 terms summed in float32 (600 points): well within 1e-4 of the float64 sums.
                CHECK(sums_error(S, want, ns0, R) <= 1e-4);
                MatrixD parts = MatrixD::Zero(Q.rows(), S.cols());
                for (const auto& r : {std::pair<Index, Index>{0, 250}, {250, 1}, {251, 349}}) {
                    PreparedData P = rows_of(D, r.first, r.second);
                    auto pb = b->bind(mstest::share(P), b->resolve_topology(v.topology, P));
                    pb->accumulate(Q.data(), Q.rows(), parts.data());
                }
                CHECK(sums_error(parts, want, ns0, R) <= 1e-4);
                // Modes set before an accumulate() step on as if it had not run.
                const MatrixD M = Q.topRows(9).array() - 0.2;
                StepReport report;
                binding->set_modes(M.data(), M.rows());
                binding->step(0.0, false, report);
                binding->accumulate(Q.data(), Q.rows(), S.data());
                binding->step(0.0, false, report);
                MatrixD got(M.rows(), k), ref(M.rows(), k);
                binding->read_modes(got.data());
                auto fresh = b->bind(mstest::share(D), b->resolve_topology(v.topology, D));
                fresh->set_modes(M.data(), M.rows());
                fresh->step(0.0, false, report);
                fresh->step(0.0, false, report);
                fresh->read_modes(ref.data());
                // Not bit-equal on every kernel: the GEMM kernels add point slices' sums by float atomics in
                // no fixed order, so two runs of the same steps differ by float32 rounding (cuda, gemm,
                // per-point, cutoff 3: 1.07e-6 in 2 of 4 runs of one seed on an H200, within 1e-6 in the others); a
                // mode disturbed by accumulate() would be off by far more.
                CHECK(mstest::max_abs_diff(got, ref) <= 1e-5);
                CHECK(binding->active_count() == M.rows());
            }
        }
}

TEST_CASE("accumulate: a query's sums do not depend on the other queries of its call (opencl; the MPI ring's chunks)")
{
    // The MPI ring sends a block of modes in chunks and expects the one-chunk ring's sums bit for
    // bit. The opencl binding split the points into segments chosen from the call's query count:
    // 300 queries took 2 segments and 64 took 8 (PoCL, AVX2, 2 compute units), so the same query's
    // float32 partial sums were rounded differently. 4,096 points (32 tiles of 128) leave room for
    // the segment counts to differ.
    if (!mstest::backend_usable("opencl")) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("accumulate-chunks");
    for (double cut : {std::numeric_limits<double>::infinity(), 3.0}) {
        INFO("cutoff " << cut);
        PreparedData D = blobs(rng, 4096, 2, KernelModel::Shared);
        D.cutoff2 = cut * cut;
        MatrixD Q(300, 2);
        for (Index q = 0; q < Q.rows(); ++q) Q.row(q) = D.points.row(q * 13).array() + 0.3;
        auto b = make_backend("opencl");
        auto binding = b->bind(mstest::share(D), b->resolve_topology(Topology{}, D));
        MatrixD whole = MatrixD::Zero(Q.rows(), binding->sum_width());
        binding->accumulate(Q.data(), Q.rows(), whole.data());
        MatrixD chunked = MatrixD::Zero(Q.rows(), binding->sum_width());
        for (Index q0 = 0; q0 < Q.rows(); q0 += 64) {  // the ring's granule
            const Index c = std::min<Index>(64, Q.rows() - q0);
            binding->accumulate(Q.data() + q0 * 2, c, chunked.data() + q0 * chunked.cols());
        }
        CHECK(mstest::max_abs_diff(chunked, whole) == 0.0);
    }
}

TEST_CASE("accumulate: bad arguments (every backend)")
{
    auto rng = make_rng("accumulate-bad");
    PreparedData D = blobs(rng, 50, 2, KernelModel::Shared);
    for (const char* backend : {"serial", "openmp", "opencl", "cuda"}) {
        if (!mstest::backend_usable(backend)) continue;
        INFO(backend);
        auto b = make_backend(backend);
        auto binding = b->bind(mstest::share(D), b->resolve_topology(Topology{}, D));
        MatrixD Q = MatrixD::Constant(1, 2, std::nan(""));
        MatrixD S = MatrixD::Zero(1, 3);
        CHECK_THROWS_AS(binding->accumulate(Q.data(), 1, S.data()), InvalidArgument);
        Q.setZero();
        CHECK_THROWS_AS(binding->accumulate(Q.data(), 1, nullptr), InvalidArgument);
        CHECK(binding->accumulate(Q.data(), 0, nullptr) == 0);  // nothing to do
    }
}
