// OpenMP backend against the float64 serial backend, step by step: every SIMD kernel this CPU
// runs (τ = 16/8/4), the lane mappings f_vppu ∈ {1, 2, 4, τ} with f_load ∈ {1, f_vppu/2, f_vppu}
// and non-power-of-two f_load, ragged n and mode counts, k from 1 to 64, both kernel models,
// several thread counts, float64 accumulation over many points, exp2 underflow far from the data,
// candidate lists; and the InvalidArgument messages for topologies it cannot run.
#include <meanshift/config.hpp>

#include <doctest/doctest.h>

#if MEANSHIFT_HAVE_OPENMP

#include "backends/openmp/cpu_features.hpp"
#define MS_SIMD_WIDTH 4  // the portable exp2 (the wider ones are covered through step())
#include "backends/openmp/simd_exp2.hpp"
#include "step_support.hpp"
#include "test_data.hpp"
#include "test_support.hpp"

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace meanshift;
using mstest::make_rng;
using mstest::max_abs_diff;
using mstest::oracle_step;
using mstest::run_step;
using mstest::topo;

/// docs/testing.md: a float32 backend's step may differ from the oracle by 1e-4 + 1e-5·R (R = the
/// largest |coordinate|); 1.5× that for the per-point model.
double tolerance(const PreparedData& D, const MatrixD& Q)
{
    const double R = std::max(D.points.cwiseAbs().maxCoeff(), Q.cwiseAbs().maxCoeff());
    return (1e-4 + 1e-5 * R) * (D.model == KernelModel::Shared ? 1.0 : 1.5);
}

std::unique_ptr<Backend> openmp(int threads = 0)
{
    BackendOptions o;
    o.threads = threads;
    return make_backend("openmp", o);
}

/// The SIMD widths this CPU runs (always includes 4).
std::vector<int> widths()
{
    std::vector<int> w;
    for (const auto* t : openmp_detail::usable_kernels()) w.push_back(t->width);
    return w;
}

/// f_vppu ∈ {1, 2, 4, τ} × f_load ∈ {1, f_vppu/2, f_vppu}, without duplicates.
std::vector<Topology> lane_mappings(int tau)
{
    std::vector<Topology> out;
    std::set<std::pair<int, int>> seen;
    for (int g : {1, 2, 4, tau})
        for (int l : {1, std::max(1, g / 2), g})
            if (g <= tau && seen.insert({g, l}).second) out.push_back(topo(0, tau, g, l));
    return out;
}

}  // namespace

TEST_CASE("openmp: step matches the serial oracle for every SIMD width, f_vppu/f_load, k and kernel model")
{
    MSTEST_SEED_INFO();
    auto rng = make_rng("openmp-step-topologies");
    auto be = openmp();
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int k : {1, 2, 3, 5, 8, 17, 64}) {
            const Index n = 997 + 13 * k;  // ragged: no multiple of any lane count
            const PreparedData D = mstest::random_prepared(rng, n, k, model);
            const MatrixD Q = mstest::random_queries(rng, D, 37);
            const MatrixD want = oracle_step(D, Q);
            const double tol = tolerance(D, Q);
            for (int tau : widths())
                for (const Topology& t : lane_mappings(tau)) {
                    INFO("k=" << k << " model=" << (model == KernelModel::Shared ? "shared" : "per-point")
                              << " topology " << t.to_string());
                    CHECK(max_abs_diff(run_step(*be, D, t, Q), want) <= tol);
                }
        }
}

TEST_CASE("openmp: the portable polynomial exp2 is accurate to 3e-7 and underflows to exactly 0")
{
    using openmp_detail::exp2_poly;
    using openmp_detail::vf;
    double worst = 0;
    for (int i = 0; i <= 200000; ++i) {
        const float t = float(-126.0 + 126.0 * i / 200000.0);
        vf v = {t, t * 0.5f, t * 0.25f, -t * 0.125f / 126.0f};
        const vf e = exp2_poly(v);
        for (int l = 0; l < 4; ++l) {
            const double want = std::exp2(double(v[l]));
            worst = std::max(worst, std::abs(double(e[l]) - want) / want);
        }
    }
    CHECK(worst < 3e-7);
    const vf far = exp2_poly(vf{-127.0f, -150.0f, -1e6f, -3.0e38f});
    for (int l = 0; l < 4; ++l) CHECK(far[l] == 0.0f);
    const vf edge = exp2_poly(vf{-126.4f, -126.6f, -0.0f, 0.0f});
    CHECK(edge[0] > 0.0f);  // still representable (normal or denormal), never garbage
    CHECK(edge[0] < 2e-38f);
    CHECK(edge[1] == 0.0f);
    CHECK(edge[2] == doctest::Approx(1.0).epsilon(3e-7));
    CHECK(edge[3] == doctest::Approx(1.0).epsilon(3e-7));
}

TEST_CASE("openmp: non-power-of-two f_load, n smaller than the vPPU, ragged mode counts, several threads")
{
    MSTEST_SEED_INFO();
    auto rng = make_rng("openmp-step-ragged");
    const int tau = widths().front();
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (Index n : {Index{1}, Index{2}, Index{5}, Index{31}, Index{1001}}) {
            const PreparedData D = mstest::random_prepared(rng, n, 3, model);
            for (Index count : {Index{1}, Index{17}, Index{333}}) {
                const MatrixD Q = mstest::random_queries(rng, D, count);
                const MatrixD want = oracle_step(D, Q);
                const double tol = tolerance(D, Q);
                for (int z : {1, 3}) {
                    auto be = openmp(z);
                    for (int f_load : {1, 3, 5, tau - 1, tau})
                        for (int f_vppu : {tau, 1}) {
                            if (f_load > f_vppu) continue;
                            const Topology t = topo(0, tau, f_vppu, f_load);
                            INFO("n=" << n << " count=" << count << " z=" << z << " topology " << t.to_string());
                            CHECK(max_abs_diff(run_step(*be, D, t, Q), want) <= tol);
                        }
                }
            }
        }
}

TEST_CASE("openmp: float64 accumulation keeps 200000-point sums accurate")
{
    MSTEST_SEED_INFO();
    auto rng = make_rng("openmp-step-large-n");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        const PreparedData D = mstest::random_prepared(rng, 200000, 2, model);
        const MatrixD Q = mstest::random_queries(rng, D, 20);
        const MatrixD want = oracle_step(D, Q);
        auto be = openmp();
        for (const Topology& t : {topo(0, 0, 1, 1), topo(0, 0, widths().front(), widths().front())}) {
            INFO("topology " << t.to_string());
            CHECK(max_abs_diff(run_step(*be, D, t, Q), want) <= tolerance(D, Q));
        }
    }
}

TEST_CASE("openmp: weights that underflow give zero, never NaN; a mode without support keeps its place")
{
    MSTEST_SEED_INFO();
    auto rng = make_rng("openmp-step-underflow");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        const PreparedData D = mstest::random_prepared(rng, 500, 3, model);
        // Distances from ~12 bandwidths (float weights near 2^-126) to 1e6 bandwidths.
        const std::vector<double> offsets = {12.0, 14.0, 16.0, 20.0, 40.0, 1e3, 1e6};
        MatrixD Q(Index(offsets.size()), 3);
        for (Index q = 0; q < Q.rows(); ++q) Q.row(q) << offsets[std::size_t(q)] + 10.0, 0.5, 0.5;
        for (int tau : widths())
            for (int f_vppu : {1, tau}) {
                auto be = openmp();
                const MatrixD got = run_step(*be, D, topo(0, tau, f_vppu, f_vppu), Q);
                INFO("tau=" << tau << " f_vppu=" << f_vppu);
                CHECK(got.allFinite());
                for (Index q = 0; q < Q.rows(); ++q)
                    if (offsets[std::size_t(q)] >= 1e3) CHECK(got.row(q) == Q.row(q));  // no support at all
            }
    }
}

TEST_CASE("openmp: very wide data (k beyond the SIMD kernels) take the O(k) loop and match the oracle")
{
    MSTEST_SEED_INFO();
    auto rng = make_rng("openmp-wide");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        for (int k : {4096, 4097, 20000}) {
            INFO("k = " << k);
            const PreparedData D = mstest::random_prepared(rng, 3, k, model);
            const MatrixD Q = D.points;
            auto be = openmp(2);
            CHECK(max_abs_diff(run_step(*be, D, Topology{}, Q), oracle_step(D, Q)) <= tolerance(D, Q));
        }
    }
}

TEST_CASE("openmp: OpenMPTuning::isa picks the kernel width; unknown or unavailable sets are rejected")
{
    auto rng = make_rng("openmp-isa");
    const PreparedData D = mstest::random_prepared(rng, 50, 3, KernelModel::Shared);
    BackendOptions o;
    o.openmp.isa = "generic";
    auto be = make_backend("openmp", o);
    const Topology t = be->resolve_topology(Topology{}, D);
    CHECK(t.pus_per_ppu == widths().back());
    o.openmp.isa = "sse5";
    CHECK_THROWS_KEYWORD(InvalidArgument, make_backend("openmp", o), "isa");
    CHECK_THROWS_KEYWORD(InvalidArgument, o.set("openmp.isa", "sse5"), "openmp.isa");
}

TEST_CASE("openmp: defaults, device description and topologies it cannot run")
{
    auto rng = make_rng("openmp-topology");
    const PreparedData D = mstest::random_prepared(rng, 50, 3, KernelModel::Shared);
    const int tau = widths().front();

    auto be = openmp(3);
    const Topology def = be->resolve_topology(Topology{}, D);
    CHECK(def.ppus == 3);
    CHECK(def.pus_per_ppu == tau);
    CHECK(def.f_vppu == 1);
    CHECK(def.f_load == 1);
    CHECK(be->resolve_topology(topo(0, 0, tau, 0), D).f_load == tau);  // f_load 0 = all PUs of the vPPU
    const DeviceInfo dev = be->devices().at(0);
    CHECK(dev.kind == "cpu");
    CHECK(dev.name.find("3 threads") != std::string::npos);
    CHECK(dev.name.find(std::to_string(tau) + " float lanes") != std::string::npos);

    auto any = openmp();
    CHECK_THROWS_KEYWORD(InvalidArgument, any->resolve_topology(topo(0, tau, 3, 1), D), "f_vppu");
    CHECK_THROWS_KEYWORD(InvalidArgument, any->resolve_topology(topo(0, tau, 2 * tau, 1), D), "f_vppu");
    CHECK_THROWS_KEYWORD(InvalidArgument, any->resolve_topology(topo(0, tau, 2, 3), D), "f_load");
    CHECK_THROWS_KEYWORD(InvalidArgument, any->resolve_topology(topo(0, tau, -1, 1), D), "f_vppu");
    CHECK_THROWS_KEYWORD(InvalidArgument, any->resolve_topology(topo(0, tau, 1, -1), D), "f_load");
    CHECK_THROWS_KEYWORD(InvalidArgument, any->resolve_topology(topo(0, 32, 1, 1), D), "tau", "SIMD width");
    CHECK_THROWS_KEYWORD(InvalidArgument, any->resolve_topology(topo(0, 6, 1, 1), D), "tau", "SIMD width");
    CHECK_THROWS_KEYWORD(InvalidArgument, any->resolve_topology(topo(-2, tau, 1, 1), D), "PPU");
    CHECK_THROWS_KEYWORD(InvalidArgument, be->resolve_topology(topo(2, tau, 1, 1), D), "threads");  // conflicts with 3
    CHECK_THROWS_KEYWORD(InvalidArgument, openmp(-1), "threads");

    auto bound = openmp()->bind(mstest::share(D), Topology{});
    StepReport report;
    CHECK_THROWS_AS(bound->step(0.0, true, report), Error);  // before set_modes()
}

#endif  // MEANSHIFT_HAVE_OPENMP
