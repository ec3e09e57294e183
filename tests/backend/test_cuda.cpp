// CUDA backend against the float64 serial backend, step by step: topologies (f_vppu ≤ 32 with
// warp shuffles, 64/128 through shared memory), load factors, preloading on/off with tile widths
// 32…1024, both kernel models, ragged n, k ∈ {1,2,3,5,8,17,64}, modes per PU, chunked queries and
// points, the multi-device split (one GPU named several times), accuracy for a 640 × 480 image
// and data far from the origin, and errors. The layout test (expanded exponent around tile
// centres) and the probe test need no GPU; the rest skips with a message when there is none.
#include <meanshift/config.hpp>

#include <doctest/doctest.h>

#if MEANSHIFT_HAVE_CUDA

#include "backends/cuda/kernel_params.hpp"
#include "backends/cuda/tiled_layout.hpp"
#include "step_support.hpp"
#include "test_data.hpp"
#include "test_support.hpp"

#include <cmath>
#include <cstdlib>
#include <algorithm>

namespace {

using namespace meanshift;
using mstest::make_rng;
using mstest::max_abs_diff;
using mstest::oracle_step;
using mstest::run_step;
using mstest::topo;
using mstest::EnvVar;

bool cuda_usable() { return mstest::backend_usable("cuda"); }

/// Max deviation of a CUDA step from the oracle, in prepared units.
double deviation(const PreparedData& D, const MatrixD& Q, const Topology& want, const BackendOptions& o = {},
                 Topology* used = nullptr)
{
    return mstest::deviation("cuda", D, Q, want, o, used);
}

constexpr double kTol = 2e-4;  // float32 kernel vs float64 oracle, one step, prepared units

}  // namespace

TEST_CASE("cuda: tiled layout reproduces the Mahalanobis exponent around each tile centre (no GPU)")
{
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-layout");
    const double L = 0.5 / std::log(2.0);
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int k : {1, 3, 5, 8})
            for (int tile : {32, 100}) {
                CAPTURE(int(model));
                CAPTURE(k);
                CAPTURE(tile);
                const PreparedData D = mstest::random_prepared(rng, 333, k, model);
                const cuda::TiledLayout lay = cuda::build_tiled_layout(D, tile);
                const bool pp = model == KernelModel::PerPoint;
                REQUIRE(lay.tiles == (333 + tile - 1) / tile);
                REQUIRE(lay.stride == cuda::fast_stride(k, pp));
                const MatrixD Q = mstest::random_queries(rng, D, 5);
                // Every point appears once and its exponent from the layout equals the direct one:
                // the sorted lists agree element by element (a permutation with small perturbations).
                for (Index q = 0; q < Q.rows(); ++q) {
                    std::vector<double> seen, want;
                    for (Index s = 0; s < lay.tiles * tile; ++s) {
                        const float* row = lay.data.data() + s * lay.stride;
                        const float* c = lay.centres.data() + (s / tile) * k;
                        // Records of kernels/meanshift_device.h: shared [p', -L/2|p'|²] (L = log2 e),
                        // per-point [A, B_d, C_d]; exponent in log2 units.
                        double x = row[pp ? 0 : k], qq = 0;
                        if (x < -1e29) continue;  // padding
                        for (int d = 0; d < k; ++d) {
                            const double qd = Q(q, d) - c[d];
                            if (pp) {
                                x += qd * row[1 + d] + qd * qd * row[1 + k + d];
                            } else {
                                x += 2 * L * qd * row[d];
                                qq += qd * qd;
                            }
                        }
                        seen.push_back(x - L * qq);
                    }
                    for (Index i = 0; i < D.n(); ++i) {
                        double d2 = 0;
                        for (int d = 0; d < k; ++d)
                            d2 += (pp ? D.precision(i, d) : 1.0) * (Q(q, d) - D.points(i, d)) * (Q(q, d) - D.points(i, d));
                        want.push_back(-L * d2 + (pp ? D.log_weight[i] / std::log(2.0) : 0.0));
                    }
                    REQUIRE(seen.size() == want.size());
                    std::sort(seen.begin(), seen.end());
                    std::sort(want.begin(), want.end());
                    double worst = 0;
                    for (std::size_t i = 0; i < seen.size(); ++i)
                        worst = std::max(worst, std::abs(seen[i] - want[i]) / (1.0 + std::abs(want[i])));
                    CHECK(worst < 1e-5);
                }
            }
}

TEST_CASE("cuda: probe reports usable with devices, or the reason (never throws)")
{
    for (const auto& s : list_backends()) {
        if (s.name != "cuda") continue;
        CHECK(s.compiled_in);
        if (!s.usable) {
            CHECK(mstest::contains_any(s.reason, {"no CUDA device"}));
            CHECK_THROWS_AS(make_backend("cuda"), BackendUnavailable);
            return;
        }
        REQUIRE(!s.devices.empty());
        for (const auto& d : s.devices) {
            CHECK(d.kind == "gpu");
            CHECK(d.compute_units > 0);
            CHECK(d.global_memory > 0);
        }
    }
}

TEST_CASE("cuda: topologies f_vppu x f_load, with and without preloading, both models")
{
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-topologies");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        const PreparedData D = mstest::random_prepared(rng, 517, 3, model);  // ragged n
        const MatrixD Q = mstest::random_queries(rng, D, 75);                // ragged count
        for (int f_vppu : {1, 2, 4, 8, 32, 64, 128}) {
            std::vector<int> loads = {f_vppu};
            if (f_vppu > 1) loads.push_back(1);
            if (f_vppu > 2) loads.push_back(f_vppu / 2 + 1);  // idle PUs
            for (int f_load : loads)
                for (bool preload : {false, true}) {
                    BackendOptions o;
                    o.preload = preload;
                    CAPTURE(int(model));
                    CAPTURE(f_vppu);
                    CAPTURE(f_load);
                    CAPTURE(preload);
                    Topology used;
                    CHECK(deviation(D, Q, topo(0, 256, f_vppu, f_load), o, &used) < kTol);
                    CHECK(used.f_vppu == f_vppu);
                    CHECK(used.f_load == f_load);
                    CHECK(used.vppus_per_ppu() == 256 / f_vppu);
                }
        }
        // A small grid (z = 2 PPUs) makes the vPPUs loop over many modes.
        Topology small = topo(0, 64, 4, 3);
        small.ppus = 2;
        CHECK(deviation(D, Q, small) < kTol);
    }
}

TEST_CASE("cuda: preload tile widths 32..1024, both kernel families and models")
{
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-tiles");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        const PreparedData D = mstest::random_prepared(rng, 1500, 3, model);
        const MatrixD Q = mstest::random_queries(rng, D, 301);
        for (int w : {32, 64, 96, 128, 256, 512, 1024})
            for (bool preload : {false, true})
                for (int f_vppu : {1, 32}) {
                    BackendOptions o;
                    o.preload = preload;
                    o.preload_size = w;
                    CAPTURE(int(model));
                    CAPTURE(w);
                    CAPTURE(preload);
                    CAPTURE(f_vppu);
                    CHECK(deviation(D, Q, topo(0, 256, f_vppu, f_vppu), o) < kTol);
                }
    }
}

TEST_CASE("cuda: dimensions k in {1,2,3,5,8,17,64} and modes per PU, both models")
{
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-dimensions");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int k : {1, 2, 3, 5, 8, 17, 64}) {
            const PreparedData D = mstest::random_prepared(rng, 389, k, model);
            const MatrixD Q = mstest::random_queries(rng, D, 67);
            for (bool preload : {false, true}) {
                BackendOptions o;
                o.preload = preload;
                o.preload_size = k > 8 ? 64 : 0;
                CAPTURE(int(model));
                CAPTURE(k);
                CAPTURE(preload);
                CHECK(deviation(D, Q, Topology{}, o) < kTol);              // fast kernels for k ≤ 8
                CHECK(deviation(D, Q, topo(0, 128, 8, 8), o) < kTol);        // Alg. 3 kernels
                if (k <= 8)
                    for (int r : {1, 2, 4, 8}) {
                        EnvVar env("MEANSHIFT_CUDA_MODES_PER_PU", std::to_string(r));
                        CAPTURE(r);
                        CHECK(deviation(D, Q, topo(0, 64, 1, 1), o) < kTol);
                    }
            }
        }
}

TEST_CASE("cuda: chunked queries and streamed point chunks add up")
{
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-chunks");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        const PreparedData D = mstest::random_prepared(rng, 1000, 3, model);
        const MatrixD Q = mstest::random_queries(rng, D, 250);
        EnvVar q("MEANSHIFT_CUDA_MAX_QUERIES", "37");
        EnvVar p("MEANSHIFT_CUDA_MAX_POINTS", "200");
        for (bool preload : {false, true})
            for (int f_vppu : {1, 4}) {
                BackendOptions o;
                o.preload = preload;
                o.preload_size = 64;
                CAPTURE(int(model));
                CAPTURE(preload);
                CAPTURE(f_vppu);
                CHECK(deviation(D, Q, topo(0, 128, f_vppu, f_vppu), o) < kTol);
            }
    }
}

TEST_CASE("cuda: queries split across the named devices (one GPU named several times)")
{
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-multi");
    const PreparedData D = mstest::random_prepared(rng, 800, 4, KernelModel::PerPoint);
    const MatrixD Q = mstest::random_queries(rng, D, 203);
    for (std::vector<int> devs : {std::vector<int>{}, std::vector<int>{0, 0}, std::vector<int>{0, 0, 0}}) {
        BackendOptions o;
        o.devices = devs;
        o.preload = true;
        CAPTURE(devs.size());
        auto b = make_backend("cuda", o);
        CHECK(b->devices().size() == (devs.empty() ? b->devices().size() : devs.size()));
        CHECK(max_abs_diff(run_step(*b, D, Topology{}, Q), oracle_step(D, Q)) < kTol);
        // More devices than queries: some devices get nothing to do.
        const MatrixD Q2 = Q.topRows(2);
        CHECK(max_abs_diff(run_step(*b, D, Topology{}, Q2), oracle_step(D, Q2)) < kTol);
    }
}

TEST_CASE("cuda: 640 x 480 image at spatial bandwidth 4 matches the float64 oracle")
{
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-image");
    const mstest::Image im = mstest::make_image(rng);
    // Prepared as the skeleton does: centred, whitened by (4, 4, 0.1, 0.1, 0.1).
    const double h[5] = {4, 4, 0.1, 0.1, 0.1};
    PreparedData D;
    D.model = KernelModel::Shared;
    D.points = im.data.cast<double>();
    for (int d = 0; d < 5; ++d) {
        const double mid = 0.5 * (D.points.col(d).minCoeff() + D.points.col(d).maxCoeff());
        D.points.col(d) = (D.points.col(d).array() - mid) / h[d];
    }
    D.finalize();
    std::uniform_int_distribution<Index> pick(0, D.n() - 1);
    MatrixD Q(200, 5);
    for (Index q = 0; q < Q.rows(); ++q) Q.row(q) = D.points.row(pick(rng));
    Q.row(0) = D.points.row(0);            // a corner: far from the centre of the data
    Q.row(1) = D.points.row(D.n() - 1);
    for (bool preload : {true, false}) {
        BackendOptions o;
        o.preload = preload;
        CAPTURE(preload);
        CHECK(deviation(D, Q, Topology{}, o) < kTol);
    }
}

TEST_CASE("cuda: cluster() far from the origin agrees with serial")
{
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-far");
    const mstest::Blobs b = mstest::make_blobs(rng, 3, {700, 500, 300}, {1.0, 1.0, 1.0}, 8.0);
    MatrixF x = b.data;
    x.array() += 1.0e5f;  // float32 spacing at 1e5 is 0.008: the skeleton's centring must keep precision
    Options opt;
    opt.bandwidth = Bandwidth::isotropic(1.5);
    opt.fixed_iterations = 30;
    opt.backend = "serial";
    const Result want = cluster(x, opt);
    opt.backend = "cuda";
    opt.backend_options.preload = true;
    const Result got = cluster(x, opt);
    REQUIRE(got.cluster_sizes.size() == want.cluster_sizes.size());
    CHECK(got.cluster_sizes == want.cluster_sizes);
    CHECK(mstest::max_abs_diff(got.modes, want.modes) < 0.02);
}

TEST_CASE("cuda: errors are exceptions, never crashes")
{
    if (!cuda_usable()) return;
    auto rng = make_rng("cuda-errors");
    const PreparedData D = mstest::random_prepared(rng, 100, 3, KernelModel::Shared);
    BackendOptions bad;
    bad.devices = {999};
    CHECK_THROWS_AS(make_backend("cuda", bad), InvalidArgument);
    auto b = make_backend("cuda");
    CHECK_THROWS_AS(b->resolve_topology(topo(0, 256, 3, 3), D), InvalidArgument);   // f_vppu not a power of two
    CHECK_THROWS_AS(b->resolve_topology(topo(0, 100, 4, 4), D), InvalidArgument);   // tau not a multiple of 32
    CHECK_THROWS_AS(b->resolve_topology(topo(0, 256, 8, 9), D), InvalidArgument);   // f_load > f_vppu
    BackendOptions huge;
    huge.preload = true;
    huge.preload_size = 1 << 20;
    auto h = make_backend("cuda", huge);
    CHECK_THROWS_AS(h->resolve_topology(Topology{}, D), InvalidArgument);         // tile beyond shared memory
    const Topology t = b->resolve_topology(Topology{}, D);
    b->bind(D, t);
    CandidateList c;
    c.offsets = {0, 0};
    const MatrixD y = D.points.topRows(1);
    CHECK_THROWS_AS(mstest::step(*b, y, &c), NotSupported);
}

#endif  // MEANSHIFT_HAVE_CUDA
