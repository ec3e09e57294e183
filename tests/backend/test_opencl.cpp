// OpenCL backend against the float64 serial backend, step by step: topologies (f_vppu, f_load,
// non-power-of-two reduction), Alg. 7 preloading and batch sizes, both kernel models, both
// exponent forms, ragged n, k from 1 to 64, modes per PU; plus error handling (broken program →
// DeviceError with the build log, bad device specs, local-memory limits, the largest k) and the
// program cache; the binding (modes on the device, statuses, retirement, ownership) and the GPU
// tile layout (backends/gpu, no device needed).
// Skips (with a message) only when no OpenCL platform is present; CI has PoCL, so it runs there.
#include <meanshift/config.hpp>

#include <doctest/doctest.h>

#if MEANSHIFT_HAVE_OPENCL

#include "backends/gpu/tile_layout.hpp"
#include "backends/opencl/cpu_plan.hpp"
#include "backends/opencl/opencl_backend.hpp"
#include "backends/opencl/program_cache.hpp"
#include "meanshift_device.h"  // MS_PAD_LOG2W
#include "step_support.hpp"
#include "test_data.hpp"
#include "test_support.hpp"

#include <algorithm>
#include <cmath>

namespace {

using namespace meanshift;
using mstest::make_rng;
using mstest::oracle_step;
using mstest::run_step;
using mstest::share;
using mstest::topo;

bool opencl_usable()
{
    return mstest::backend_usable("opencl");
}

/// Max deviation of an OpenCL step from the oracle, in prepared units.
double deviation(const PreparedData& D, const MatrixD& Q, const Topology& want, const BackendOptions& o = {},
                 Topology* used = nullptr)
{
    return mstest::deviation("opencl", D, Q, want, o, used);
}

constexpr double kTol = 2e-4;  // float32 kernel vs float64 oracle, one step, prepared units

Preload preload_mode(bool on)
{
    return on ? Preload::On : Preload::Off;
}

/// One step of Q on an OpenCL binding made directly (the configuration stays readable).
MatrixD opencl_step(const BackendOptions& o, const PreparedData& D, const Topology& want, const MatrixD& Q,
                    detail::KernelConfig* config = nullptr, int* segments = nullptr)
{
    detail::OpenCLBackend b(o);
    auto binding = b.bind_opencl(share(D), want);
    const MatrixD got = mstest::step(*binding, Q);
    if (config) *config = binding->kernel_config();
    if (segments) *segments = binding->last_segments();
    return got;
}

}  // namespace

TEST_CASE("opencl: probe lists devices with a kind")
{
    for (const auto& s : list_backends()) {
        if (s.name != "opencl") continue;
        CHECK(s.compiled_in);
        if (!s.usable) {
            CHECK(!s.reason.empty());
            MESSAGE("no OpenCL platform: " << s.reason);
            return;
        }
        REQUIRE(!s.devices.empty());
        for (const auto& d : s.devices) {
            CHECK((d.kind == "gpu" || d.kind == "cpu" || d.kind == "accelerator"));
            CHECK(d.compute_units > 0);
            CHECK(d.pus_per_ppu > 0);
            CHECK(d.name.find(':') != std::string::npos);  // "P:D" shown in the name
        }
    }
}

TEST_CASE("opencl: topologies f_vppu x f_load, with and without preloading, both models")
{
    if (!opencl_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("opencl-topologies");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        const PreparedData D = mstest::random_prepared(rng, 517, 3, model);  // ragged n
        const MatrixD Q = mstest::random_queries(rng, D, 75);  // ragged count
        for (int f_vppu : {1, 2, 3, 4, 8, 16, 32}) {
            const int tau = f_vppu == 3 ? 48 : 64;
            std::vector<int> loads = {f_vppu};
            if (f_vppu > 1) loads.push_back(1);
            if (f_vppu > 2) loads.push_back(f_vppu / 2 + 1);  // idle PUs and a non-power-of-two reduction
            for (int f_load : loads)
                for (bool preload : {false, true}) {
                    // Both kernels for f_load = f_vppu; the other load factors alternate between them
                    // (the reduction code is the same), and the per-point model runs f_load = f_vppu
                    // only: PoCL compiles every variant, which dominates the test's time.
                    if (f_load != f_vppu && preload != (f_load % 2 == 1)) continue;
                    if (model == KernelModel::PerPoint && f_load != f_vppu) continue;
                    BackendOptions o;
                    o.preload = preload_mode(preload);
                    CAPTURE(int(model));
                    CAPTURE(f_vppu);
                    CAPTURE(f_load);
                    CAPTURE(preload);
                    Topology used;
                    CHECK(deviation(D, Q, topo(0, tau, f_vppu, f_load), o, &used) < kTol);
                    CHECK(used.f_vppu == f_vppu);
                    CHECK(used.f_load == f_load);
                    CHECK(used.vppus_per_ppu() == tau / f_vppu);
                }
        }
    }
}

TEST_CASE("opencl: dimensions k in {1,2,3,5,8,17,64}, both models, both exponent forms")
{
    if (!opencl_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("opencl-dimensions");
    for (const char* form : {"expanded", "direct"}) {
        for (int k : {1, 2, 3, 5, 8, 17, 64})
            for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
                const bool direct = std::string(form) == "direct";
                if (direct && k != 3 && k != 17) continue;  // the direct form: two k suffice
                const PreparedData D = mstest::random_prepared(rng, 300 + k, k, model);
                const MatrixD Q = mstest::random_queries(rng, D, 33);
                CAPTURE(form);
                CAPTURE(k);
                CAPTURE(int(model));
                BackendOptions o;
                o.opencl.exponent = direct ? ExponentForm::Direct : ExponentForm::Expanded;
                BackendOptions pre = o;
                pre.preload = Preload::On;
                pre.preload_size = 32;
                CHECK(deviation(D, Q, Topology{}, o) < kTol);
                if (!direct) CHECK(deviation(D, Q, topo(0, 32, 4, 4), pre) < kTol);
            }
    }
}

TEST_CASE("opencl: preload batch sizes and modes per PU")
{
    if (!opencl_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("opencl-preload");
    const PreparedData D = mstest::random_prepared(rng, 1000, 3, KernelModel::Shared);
    const MatrixD Q = mstest::random_queries(rng, D, 130);
    for (int size : {1, 7, 100, 2048}) {
        BackendOptions o;
        o.preload = Preload::On;
        o.preload_size = size;
        CAPTURE(size);
        CHECK(deviation(D, Q, topo(0, 64, 1, 1), o) < kTol);
        CHECK(deviation(D, Q, topo(0, 64, 2, 2), o) < kTol);
    }
    for (int r : {1, 2, 3, 8}) {
        BackendOptions o;
        o.opencl.modes_per_pu = r;
        CAPTURE(r);
        detail::KernelConfig used;
        const MatrixD got = opencl_step(o, D, topo(0, 32, 1, 1), Q, &used);
        CHECK(used.modes_per_pu == r);
        CHECK(mstest::max_abs_diff(got, oracle_step(D, Q)) < kTol);
    }
    // f_vppu > 1: one mode per PU regardless of the knob
    BackendOptions o;
    o.opencl.modes_per_pu = 4;
    detail::KernelConfig used;
    opencl_step(o, D, topo(0, 32, 2, 2), Q, &used);
    CHECK(used.modes_per_pu == 1);
    // out-of-range tuning is an InvalidArgument naming the field
    o.opencl.modes_per_pu = 17;
    CHECK_THROWS_KEYWORD(InvalidArgument, detail::OpenCLBackend{o}, "opencl.modes_per_pu");
    o.opencl.modes_per_pu = 0;
    o.opencl.segments = -1;
    CHECK_THROWS_KEYWORD(InvalidArgument, detail::OpenCLBackend{o}, "opencl.segments");
}

TEST_CASE("opencl: n-loop segments combined by combine_segments")
{
    if (!opencl_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("opencl-segments");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        const PreparedData D = mstest::random_prepared(rng, 777, 3, model);
        const MatrixD Q = mstest::random_queries(rng, D, 70);
        for (int segments : {1, 2, 5, 7, 1000}) {  // 1000 > tiles: clamped to one tile per segment
            for (bool preload : {false, true}) {
                BackendOptions o;
                o.preload = preload_mode(preload);
                o.preload_size = 64;
                o.opencl.segments = segments;
                CAPTURE(int(model));
                CAPTURE(segments);
                CAPTURE(preload);
                int used_segments = 0;
                const MatrixD got = opencl_step(o, D, topo(0, 32, 1, 1), Q, nullptr, &used_segments);
                CHECK(used_segments == std::min(segments, (777 + 63) / 64));
                CHECK(mstest::max_abs_diff(got, oracle_step(D, Q)) < kTol);
                CHECK(deviation(D, Q, topo(0, 32, 4, 3), o) < kTol);
            }
        }
    }
}

TEST_CASE("opencl: CPU devices get the CPU shapes (approx_mode_cpu, range_modes_cpu) and they match the oracle")
{
    if (!opencl_usable()) return;
    // The first CPU-class device (PoCL in CI); GPUs must keep their shape.
    std::string cpu_spec;
    for (const auto& e : detail::enumerate_cl_devices()) {
        const std::string spec = std::to_string(e.platform) + ":" + std::to_string(e.device);
        BackendOptions o;
        o.device_spec = spec;
        auto rng = make_rng("opencl-cpu-shape-gate");
        const PreparedData D = mstest::random_prepared(rng, 100, 3, KernelModel::Shared);
        detail::KernelConfig c;
        opencl_step(o, D, Topology{}, mstest::random_queries(rng, D, 5), &c);
        if (e.info.kind == "gpu") {
            CHECK(c.cpu_vw == 0);  // the GPU path is unchanged
        } else {
            CHECK((c.cpu_vw == 0 || c.cpu_vw == 4 || c.cpu_vw == 8 || c.cpu_vw == 16));
            if (e.info.kind == "cpu" && cpu_spec.empty() && c.cpu_vw > 0) cpu_spec = spec;
        }
    }
    if (cpu_spec.empty()) {
        MESSAGE("no OpenCL CPU device with a float vector width >= 4: CPU shape not tested");
        return;
    }
    MSTEST_SEED_INFO();
    auto rng = make_rng("opencl-cpu-shape");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int k : {1, 3, 5, 16, 40}) {  // r > 1, and r = 1 with dims in chunks (remainders)
            const PreparedData D = mstest::random_prepared(rng, 517, k, model);  // ragged n
            const MatrixD Q = mstest::random_queries(rng, D, 75);  // ragged count
            CAPTURE(int(model));
            CAPTURE(k);
            BackendOptions o;
            o.device_spec = cpu_spec;
            detail::KernelConfig c;
            const MatrixD got = opencl_step(o, D, Topology{}, Q, &c);
            CHECK(std::string(c.kernel_name()) == "approx_mode_cpu");
            CHECK(!c.gemm);
            CHECK(!c.preload);
            CHECK(c.cpu_vw > 0);
            CHECK(((c.cpu_dc > 0) == (c.modes_per_pu == 1 &&
                                      (model == KernelModel::PerPoint ? 2 * k : k + 1) > (c.cpu_vw >= 16 ? 16 : 8))));
            CHECK(mstest::max_abs_diff(got, oracle_step(D, Q)) < kTol);
            if (k != 3 && k != 16) continue;  // PoCL builds every variant: the time of this test
            // several segments, explicit r, a work-group per block
            BackendOptions seg = o;
            seg.opencl.segments = 3;
            seg.opencl.modes_per_pu = k <= 3 ? 3 : 1;
            CHECK(mstest::max_abs_diff(opencl_step(seg, D, topo(0, 1, 1, 1), Q, &c), oracle_step(D, Q)) < kTol);
            CHECK(c.cpu_vw > 0);
            // truncated kernel (no grid: one range): range_modes_cpu, vector tails masked; a cutoff
            // beyond every pair keeps the oracle's answer independent of rounding at the boundary
            PreparedData T = D;
            T.cutoff2 = 1e6;
            CHECK(mstest::max_abs_diff(opencl_step(o, T, Topology{}, Q, &c), oracle_step(T, Q)) < kTol);
            CHECK(std::string(c.kernel_name()) == "range_modes_cpu");
            CHECK(c.cpu_range_block ==
                  (k >= 16));  // k = 16: modes in the lanes (range_modes_cpu.cl), ragged last block
            if (k != 3) continue;
            // the direct exponent keeps the GPU shape on a CPU device
            BackendOptions direct = o;
            direct.opencl.exponent = ExponentForm::Direct;
            direct.pair_form = PairForm::Direct;
            CHECK(mstest::max_abs_diff(opencl_step(direct, D, Topology{}, Q, &c), oracle_step(D, Q)) < kTol);
            CHECK(c.cpu_vw == 0);
        }
}

TEST_CASE("opencl: CPU devices' truncated kernel beyond the modes-in-lanes plan (candidates in the lanes)")
{
    if (!opencl_usable()) return;
    for (const auto& e : detail::enumerate_cl_devices()) {
        if (e.info.kind != "cpu") continue;
        BackendOptions o;
        o.device_spec = std::to_string(e.platform) + ":" + std::to_string(e.device);
        auto rng = make_rng("opencl-cpu-range-points");
        PreparedData T = mstest::random_prepared(rng, 203, 65, KernelModel::Shared);
        T.cutoff2 = 1e6;  // beyond every pair: the oracle's answer
        const MatrixD Q = mstest::random_queries(rng, T, 21);
        detail::KernelConfig c;
        const MatrixD got = opencl_step(o, T, Topology{}, Q, &c);
        if (c.cpu_vw == 0) return;
        CHECK(std::string(c.kernel_name()) == "range_modes_cpu");
        CHECK(!c.cpu_range_block);
        CHECK(mstest::max_abs_diff(got, oracle_step(T, Q)) < kTol);
        return;
    }
}

TEST_CASE("opencl: the CPU range plan (no device)")
{
    for (int vw : {4, 8, 16})
        for (int k : {1, 3, 16, 64, 65, 2048}) {
            const detail::CpuRangePlan p = detail::cpu_range_plan(k, false, vw);
            CHECK(p.modes_in_lanes == (k >= 16 && k <= 64));
            CHECK(p.modes_per_item == (p.modes_in_lanes ? vw : 16));
        }
}

TEST_CASE("opencl: a few work-groups loop over many blocks (z smaller than the blocks)")
{
    if (!opencl_usable()) return;
    auto rng = make_rng("opencl-ppus");
    const PreparedData D = mstest::random_prepared(rng, 200, 2, KernelModel::PerPoint);
    const MatrixD Q = mstest::random_queries(rng, D, 500);
    Topology t = topo(0, 16, 2, 2);
    t.ppus = 3;
    CHECK(deviation(D, Q, t) < kTol);
}

TEST_CASE("opencl: large extent (image-like grid over +-80 bandwidths), expanded form stays accurate")
{
    if (!opencl_usable()) return;
    // 640 x 480 image at spatial bandwidth 4, every 8th pixel: spatial coordinates span 160 x 120
    // bandwidths around the centre, colour in bandwidth units; queries scan the same grid.
    PreparedData D;
    const int w = 80, h = 60;
    D.points.resize(w * h, 5);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const Index i = Index(y) * w + x;
            D.points(i, 0) = (8.0 * x - 319.5) / 4.0;
            D.points(i, 1) = (8.0 * y - 239.5) / 4.0;
            D.points(i, 2) = (x < w / 2 ? 2.0 : 8.0) + 0.25 * ((x * 7 + y * 3) % 5);
            D.points(i, 3) = (y < h / 2 ? 1.0 : 6.0);
            D.points(i, 4) = 0.5 * ((x + y) % 3);
        }
    D.finalize();
    MatrixD Q = D.points;
    for (Index i = 0; i < Q.rows(); ++i) Q(i, 0) += 0.75, Q(i, 1) -= 0.5;  // between grid points
    for (bool preload : {false, true}) {
        BackendOptions o;
        o.preload = preload_mode(preload);
        CAPTURE(preload);
        const double dev = deviation(D, Q, Topology{}, o);
        MESSAGE("large extent, preload " << preload << ": max deviation " << dev << " bandwidths");
        // 1e-4 bandwidths: about 20 float32 ulps of a coordinate at |x| = 80 bandwidths. NVIDIA's
        // OpenCL with preloading (batch 512) measured 5.2e-5 on the H200, PoCL ~2e-5; the generic
        // conformance tolerance for this extent is 1e-4 + 1e-5 * 80 = 9e-4.
        CHECK(dev < 1e-4);
    }
}

TEST_CASE("opencl: a mode without support is reported NoSupport and keeps its position")
{
    if (!opencl_usable()) return;
    auto rng = make_rng("opencl-nosupport");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int segments : {1, 3}) {  // finished by the approx kernel / by combine_segments
            CAPTURE(int(model));
            CAPTURE(segments);
            const PreparedData D = mstest::random_prepared(rng, 100, 3, model);
            MatrixD Q(2, 3);
            Q << 1e6, 1e6, 1e6, 0.5, 0.5, 0.5;  // 1e6 bandwidths from every point
            BackendOptions o;
            o.opencl.segments = segments;
            auto b = make_backend("opencl", o);
            auto binding = b->bind(share(D), Topology{});
            binding->set_modes(Q.data(), 2);
            StepReport rep;
            binding->step(1e-12, true, rep);
            REQUIRE(rep.mode.size() == 2);
            for (std::size_t i = 0; i < 2; ++i) {
                CAPTURE(rep.mode[i]);
                if (rep.mode[i] == 0) {
                    CHECK(rep.status[i] == ModeStatus::NoSupport);
                    CHECK(rep.shift2[i] == 0);
                } else {
                    CHECK(rep.status[i] == ModeStatus::Active);
                }
            }
            CHECK(binding->active_count() == 1);  // the seed without support left the active set
            MatrixD got(2, 3);
            binding->read_modes(got.data());
            CHECK(got(0, 0) == 1e6);
            CHECK(got(0, 2) == 1e6);
            CHECK(mstest::max_abs_diff(got.bottomRows(1), oracle_step(D, Q.bottomRows(1))) < kTol);
        }
}

TEST_CASE("opencl: a binding keeps working after its Backend object is destroyed")
{
    if (!opencl_usable()) return;
    auto rng = make_rng("opencl-ownership");
    const PreparedData D = mstest::random_prepared(rng, 300, 3, KernelModel::PerPoint);
    const MatrixD Q = mstest::random_queries(rng, D, 40);
    std::unique_ptr<Binding> binding;
    {
        auto data = share(D);
        auto b = make_backend("opencl");
        binding = b->bind(data, Topology{});
    }  // the backend and the caller's pointer to the data are gone; the binding owns both
    CHECK(binding->data().n() == 300);
    CHECK(mstest::max_abs_diff(mstest::step(*binding, Q), oracle_step(D, Q)) < kTol);
    CHECK(mstest::max_abs_diff(mstest::step(*binding, Q), oracle_step(D, Q)) < kTol);  // set_modes again
}

TEST_CASE("opencl: retirement compacts the active set on the device; read_modes returns every mode")
{
    if (!opencl_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("opencl-retire");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int segments : {1, 4}) {
            CAPTURE(int(model));
            CAPTURE(segments);
            const PreparedData D = mstest::random_prepared(rng, 257, 2, model);
            const Index m = 200;
            MatrixD Y = mstest::random_queries(rng, D, m);
            MatrixD metric = MatrixD::Constant(m, 2, 2.0);  // Alg. 5 weights: shift² doubles
            BackendOptions o;
            o.opencl.segments = segments;
            auto b = make_backend("opencl", o);
            auto binding = b->bind(share(D), topo(0, 16, 1, 1));
            binding->set_modes(Y.data(), m, metric.data());
            CHECK(binding->mode_count() == m);
            CHECK(binding->active_count() == m);

            // retire = false: nobody leaves, every mode is reported, positions match the oracle
            StepReport rep;
            binding->step(1e30, false, rep);
            CHECK(rep.mode.size() == std::size_t(m));
            CHECK(binding->active_count() == m);
            std::vector<Index> seen = rep.mode;
            std::sort(seen.begin(), seen.end());
            for (Index i = 0; i < m; ++i) CHECK(seen[std::size_t(i)] == i);
            const MatrixD Y1 = oracle_step(D, Y);
            MatrixD got(m, 2);
            binding->read_modes(got.data());
            CHECK(mstest::max_abs_diff(got, Y1) < kTol);
            // The reported shift² is of the device's own move (float32 positions, within kTol of the
            // oracle's, checked above): compared with the oracle's move it could differ by
            // ~4 |Δ| kTol, more than 1e-3 relative for small moves (a rare seed failed on an H200).
            const MatrixD Yf = Y.cast<float>().cast<double>();
            for (std::size_t i = 0; i < rep.mode.size(); ++i) {
                const Index j = rep.mode[i];
                const double want = 2.0 * (got.row(j) - Yf.row(j)).squaredNorm();
                CHECK(rep.shift2[i] == doctest::Approx(want).epsilon(1e-3).scale(1e-6));
                CHECK(rep.status[i] == ModeStatus::Converged);  // tol2 = 1e30, but retire = false
            }

            // retire = true with a tolerance between the shifts: exactly the modes above it stay
            binding->step(0, false, rep);  // one more step without retiring
            std::vector<double> s2 = rep.shift2;
            std::sort(s2.begin(), s2.end());
            const double tol2 = s2[s2.size() / 2];
            MatrixD before(m, 2);
            binding->read_modes(before.data());
            binding->step(tol2, true, rep);
            const MatrixD Y2 = oracle_step(D, before);
            Index active = 0;
            std::vector<Index> stays;
            for (std::size_t i = 0; i < rep.mode.size(); ++i) {
                CHECK((rep.status[i] == (rep.shift2[i] <= tol2 ? ModeStatus::Converged : ModeStatus::Active)));
                if (rep.status[i] == ModeStatus::Active) ++active, stays.push_back(rep.mode[i]);
            }
            CHECK(active > 0);
            CHECK(active < m);
            CHECK(binding->active_count() == active);
            // the next step advances exactly the survivors; the retired modes keep their positions
            MatrixD after(m, 2);
            binding->read_modes(after.data());
            CHECK(mstest::max_abs_diff(after, Y2) < kTol);
            binding->step(tol2, true, rep);
            std::vector<Index> next = rep.mode;
            std::sort(next.begin(), next.end());
            std::sort(stays.begin(), stays.end());
            CHECK(next == stays);
            MatrixD last(m, 2);
            binding->read_modes(last.data());
            for (Index j = 0; j < m; ++j)
                if (!std::binary_search(stays.begin(), stays.end(), j)) CHECK(last.row(j) == after.row(j));
            // until every mode has left
            for (int it = 0; it < 500 && binding->active_count() > 0; ++it) binding->step(1e-4, true, rep);
            CHECK(binding->active_count() == 0);
            binding->step(1e-6, true, rep);
            CHECK(rep.mode.empty());
        }
}

TEST_CASE("opencl: the largest k is accepted and k + 1 refused before any build")
{
    if (!opencl_usable()) return;
    auto rng = make_rng("opencl-max-k");
    const int kmax = detail::kMaxDimensions;
    const std::string limit = "exceeds the largest k the OpenCL kernels support, " + std::to_string(kmax);
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        CAPTURE(int(model));
        const PreparedData big = mstest::random_prepared(rng, 3, kmax + 1, model);
        auto b = make_backend("opencl");
        const std::size_t builds = detail::cl_programs_compiled();
        CHECK_THROWS_KEYWORD(InvalidArgument, b->resolve_topology(Topology{}, big), limit.c_str());
        CHECK_THROWS_KEYWORD(InvalidArgument, b->bind(share(big), Topology{}), limit.c_str());
        CHECK(detail::cl_programs_compiled() == builds);  // refused before any program build
    }
    // n = 2 points at the largest k: builds, runs and matches the oracle (PoCL: seconds)
    const PreparedData D = mstest::random_prepared(rng, 2, kmax, KernelModel::PerPoint);
    const MatrixD Q = D.points;
    CHECK(deviation(D, Q, Topology{}) < kTol);
}

TEST_CASE("opencl: default preload batch fits local memory at large k; an explicit one that cannot is refused")
{
    if (!opencl_usable()) return;
    auto rng = make_rng("opencl-batch-fit");
    for (int k : {64, 256}) {
        CAPTURE(k);
        const PreparedData D = mstest::random_prepared(rng, 40, k, KernelModel::PerPoint);
        BackendOptions o;
        o.preload = Preload::On;
        o.pair_form = PairForm::Direct;  // the preload batch is the direct kernels' (Auto takes GEMM here)
        detail::OpenCLBackend b(o);
        const Topology t = b.resolve_topology(Topology{}, D);
        const detail::KernelConfig c = b.make_config(t, D);
        CHECK(c.local_bytes() <= b.devices()[0].local_memory);
        CHECK(c.tile >= 1);
        const MatrixD Q = mstest::random_queries(rng, D, 5);
        CHECK(mstest::max_abs_diff(opencl_step(o, D, Topology{}, Q), oracle_step(D, Q)) < kTol);
        o.preload_size = 1 << 20;
        detail::OpenCLBackend too_big(o);
        CHECK_THROWS_KEYWORD(InvalidArgument, too_big.resolve_topology(Topology{}, D), "CL_DEVICE_LOCAL_MEM_SIZE",
                             "preload_size");
    }
}

TEST_CASE("gpu layout: records reproduce the exponent of every point, k-d order, padding (no device)")
{
    MSTEST_SEED_INFO();
    auto rng = make_rng("gpu-layout");
    const double L = 1.0 / std::log(2.0);
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (ExponentForm form : {ExponentForm::Expanded, ExponentForm::Direct})
            for (int k : {1, 3, 8})
                for (int tile : {1, 32, 100}) {
                    CAPTURE(int(model));
                    CAPTURE(int(form));
                    CAPTURE(k);
                    CAPTURE(tile);
                    const bool pp = model == KernelModel::PerPoint;
                    const PreparedData D = mstest::random_prepared(rng, 333, k, model);
                    const gpu::TileLayout lay = gpu::build_tile_layout(D, tile, form);
                    REQUIRE(lay.tiles == (333 + tile - 1) / tile);
                    REQUIRE(lay.stride == gpu::record_stride(k, pp));
                    REQUIRE(lay.stride % 4 == 0);
                    REQUIRE(lay.stride >= gpu::record_floats(k, pp));
                    REQUIRE(lay.original.size() == 333u);
                    std::vector<int> seen(333, 0);
                    const MatrixD Q = mstest::random_queries(rng, D, 3);
                    double worst = 0;
                    for (Index s = 0; s < lay.tiles * tile; ++s) {
                        const float* rec = lay.records.data() + s * lay.stride;
                        const float* c = lay.centres.data() + (s / tile) * k;
                        if (s >= D.n()) {  // padding
                            CHECK(rec[gpu::log_weight_slot(k, pp)] == MS_PAD_LOG2W);
                            continue;
                        }
                        const Index i = lay.original[std::size_t(s)];
                        ++seen[std::size_t(i)];
                        double r2 = 0;
                        for (int d = 0; d < k; ++d) r2 += (D.points(i, d) - c[d]) * (D.points(i, d) - c[d]);
                        CHECK(std::sqrt(r2) <= lay.radii[std::size_t(s / tile)]);
                        for (Index q = 0; q < Q.rows(); ++q) {  // exponent (log2 units) of the pair (y, x_i)
                            double got = rec[gpu::log_weight_slot(k, pp)], want = pp ? L * D.log_weight[i] : 0.0;
                            for (int d = 0; d < k; ++d) {
                                const double y = Q(q, d) - c[d], w = pp ? D.precision(i, d) : 1.0;
                                want -= 0.5 * L * w * (Q(q, d) - D.points(i, d)) * (Q(q, d) - D.points(i, d));
                                if (form == ExponentForm::Expanded)
                                    got +=
                                        pp ? rec[1 + d] * y + rec[1 + k + d] * y * y : L * y * rec[d] - 0.5 * L * y * y;
                                else
                                    got -= 0.5 * L * (pp ? rec[1 + k + d] : 1.0) * (y - rec[(pp ? 1 : 0) + d]) *
                                           (y - rec[(pp ? 1 : 0) + d]);
                            }
                            // float32 records: error relative to the magnitude of the summed terms
                            worst = std::max(worst, std::abs(got - want) / (1.0 + std::abs(want)));
                        }
                    }
                    CHECK(worst < 1e-5);
                    CHECK(std::count(seen.begin(), seen.end(), 1) == 333);  // a permutation
                }
}

TEST_CASE("opencl: a broken program raises DeviceError carrying the build log")
{
    if (!opencl_usable()) return;
    const std::string bad = "__kernel void broken(__global float* x) { x[0] = undeclared_name; }\n";
    try {
        detail::compile_cl_source_for_test("", bad, "");
        FAIL("no exception for a broken program");
    } catch (const DeviceError& e) {
        CHECK(!e.build_log().empty());
        CHECK(std::string(e.what()).find("build log") != std::string::npos);
        CHECK(std::string(e.what()).find("CL_BUILD_PROGRAM_FAILURE") != std::string::npos);
        CHECK(mstest::contains_any(e.build_log(), {"undeclared_name", "undeclared", "error"}));
    }
    // a good program compiles through the same cache, once
    const std::string good = "__kernel void fine(__global float* x) { x[0] = 1.0f; }\n";
    detail::compile_cl_source_for_test("", good, "-D UNIQUE_FOR_TEST=1");
    const std::size_t n = detail::cl_programs_compiled();
    detail::compile_cl_source_for_test("", good, "-D UNIQUE_FOR_TEST=1");
    CHECK(detail::cl_programs_compiled() == n);
    detail::compile_cl_source_for_test("", good, "-D UNIQUE_FOR_TEST=2");
    CHECK(detail::cl_programs_compiled() == n + 1);
}

TEST_CASE("opencl: compiled kernels are cached across bind() and backend instances")
{
    if (!opencl_usable()) return;
    auto rng = make_rng("opencl-cache");
    const PreparedData D = mstest::random_prepared(rng, 64, 2, KernelModel::Shared);
    const MatrixD Q = mstest::random_queries(rng, D, 8);
    Topology t = topo(0, 32, 2, 2);
    deviation(D, Q, t);
    const std::size_t n = detail::cl_programs_compiled();
    deviation(D, Q, t);
    CHECK(detail::cl_programs_compiled() == n);
}

TEST_CASE("opencl: bad device specs and limits give clear errors")
{
    if (!opencl_usable()) return;
    for (const char* spec : {"x", "0", "0:", "a:b", "0:0:0", "-1:0"}) {
        BackendOptions o;
        o.device_spec = spec;
        CAPTURE(spec);
        CHECK_THROWS_KEYWORD(InvalidArgument, make_backend("opencl", o), "bad device spec");
    }
    for (const char* spec : {"99:0", "0:99"}) {
        BackendOptions o;
        o.device_spec = spec;
        CAPTURE(spec);
        CHECK_THROWS_KEYWORD(InvalidArgument, make_backend("opencl", o), "names no device");
    }
    {
        BackendOptions o;
        o.device_spec = "0:0";
        CHECK_NOTHROW(make_backend("opencl", o));
    }
    auto rng = make_rng("opencl-limits");
    const PreparedData D = mstest::random_prepared(rng, 64, 3, KernelModel::PerPoint);
    {
        BackendOptions o;
        o.preload = Preload::On;
        o.preload_size = 1 << 20;  // 1M points x 8 floats: more than any local memory
        auto b = make_backend("opencl", o);
        CHECK_THROWS_KEYWORD(InvalidArgument, b->resolve_topology(Topology{}, D), "CL_DEVICE_LOCAL_MEM_SIZE");
    }
    {
        auto b = make_backend("opencl");
        CHECK_THROWS_KEYWORD(InvalidArgument, b->resolve_topology(topo(0, 1 << 16, 1, 1), D),
                             "CL_DEVICE_MAX_WORK_GROUP_SIZE");
        CHECK_THROWS_KEYWORD(InvalidArgument, b->resolve_topology(topo(0, 48, 32, 32), D), "f_vppu", "divide");
    }
    {
        auto b = make_backend("opencl");
        auto binding = b->bind(share(D), Topology{});
        StepReport rep;
        CHECK_THROWS_AS(binding->step(0, true, rep), Error);  // before set_modes
        CHECK_THROWS_AS(binding->set_modes(D.points.data(), 0), InvalidArgument);
    }
}

TEST_CASE("opencl: the dimension-tiled GEMM kernel's geometry fits local memory at every k (no device)")
{
    // gemm_wide.cl on a GPU from kGemmWideMinKGpu on: its local memory does not depend on k, the
    // defaults shrink to the device's local memory, and its private state does not grow with k.
    const OpenCLTuning t;
    for (int k : {64, 65, 128, 1023, 1024, 2048})
        for (std::size_t local : {std::size_t(49152), std::size_t(32768), std::size_t(16384)}) {
            CAPTURE(k);
            CAPTURE(local);
            detail::KernelConfig c;
            c.k = k;
            c.gemm = true;
            c.tau = detail::gemm_default_tau(k, false, t, true);
            detail::KernelConfig c128 = c;  // --tau 128: 4 x 16 register blocks
            c128.tau = 128;
            CHECK(detail::gemm_geometry(c128, t, true, local).empty());
            CHECK(c128.local_bytes() + detail::kImplicitLocalBytes <= local);
            CHECK(c128.gemm_wide == (k >= detail::kGemmWideMinKGpu && local >= 32768));
            CHECK(detail::gemm_geometry(c, t, true, local).empty());
            // below ~24 KiB (less than OpenCL's 32 KiB minimum) gemm_modes.cl's smaller tiles instead
            CHECK(c.gemm_wide == (k >= detail::kGemmWideMinKGpu && local >= 32768));
            CHECK(c.local_bytes() + detail::kImplicitLocalBytes <= local);
            if (!c.gemm_wide) continue;
            CHECK(c.tile == 4 * (c.tau / 16) * c.gw_tnh);
            CHECK(c128.tile == 32 * c128.gw_tnh);
            if (local == 49152) CHECK(c128.tile == 128);
            CHECK(c.gemm_bk % 4 == 0);
            CHECK(std::string(c.kernel_name()) == "gemm_wide");
            CHECK(c.private_bytes() <= 1024);
            if (local == 49152) CHECK(c.tile == 128);  // NVIDIA's 48 KiB: the full 64 x 128 tile
        }
    // Per-point H keeps gemm_modes.cl; CPU devices take gemm_wide.cl only when asked.
    detail::KernelConfig p;
    p.k = 256;
    p.per_point = true;
    p.gemm = true;
    p.tau = 256;
    CHECK(detail::gemm_geometry(p, t, true, 49152).empty());
    CHECK_FALSE(p.gemm_wide);
    OpenCLTuning forced;
    forced.gemm_wide_min_k = 1;
    CHECK(detail::gemm_default_tau(16, false, t, false) == 64);
    CHECK(detail::gemm_default_tau(16, false, forced, false) == 256);
    // GPUs: 4 x 16 blocks (128 work-items) up to kGemmWideTau128MaxKGpu, 4 x 8 (256) above.
    CHECK(detail::gemm_default_tau(detail::kGemmWideTau128MaxKGpu, false, t, true) == 128);
    CHECK(detail::gemm_default_tau(detail::kGemmWideTau128MaxKGpu + 1, false, t, true) == 256);
    CHECK(detail::gemm_default_tau(64, false, t, true) == 256);
    CHECK(detail::gemm_default_tau(128, true, t, true) == 256);
}

#else
TEST_CASE("opencl: not compiled in")
{
    MESSAGE("MEANSHIFT_HAVE_OPENCL = 0: the OpenCL backend tests are skipped");
}
#endif
