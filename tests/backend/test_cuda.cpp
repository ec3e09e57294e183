// CUDA backend against the float64 serial backend, step by step: topologies (f_vppu ≤ 32 with
// warp shuffles, 64/128 through shared memory), load factors, preloading on/off with tile widths
// 32…1024, both kernel models, ragged n, k ∈ {1,2,3,5,8,17,64}, modes per PU, chunked queries and
// points, the multi-device split (one GPU named several times), accuracy for a 640 × 480 image
// and data far from the origin, the binding's life cycle (modes kept on the device, retirement,
// no-support modes, a binding outliving its Backend) and errors. The layout test (expanded
// exponent around tile centres) and the probe test need no GPU; the rest skips with a message
// when there is none.
#include <meanshift/config.hpp>

#include <doctest/doctest.h>

#if MEANSHIFT_HAVE_CUDA

#include "backends/cuda/kernel_params.hpp"  // gemm_kernel, topology_tile
#include "backends/gpu/tile_layout.hpp"
#include "meanshift_device.h"  // MS_LOG2E, MS_PAD_LOG2W
#include "step_support.hpp"
#include "test_data.hpp"
#include "test_support.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace {

using namespace meanshift;
using mstest::make_rng;
using mstest::max_abs_diff;
using mstest::oracle_step;
using mstest::run_step;
using mstest::share;
using mstest::topo;

bool cuda_usable()
{
    return mstest::backend_usable("cuda");
}

/// Max deviation of a CUDA step from the oracle, in prepared units.
double deviation(const PreparedData& D, const MatrixD& Q, const Topology& want, const BackendOptions& o = {},
                 Topology* used = nullptr)
{
    return mstest::deviation("cuda", D, Q, want, o, used);
}

BackendOptions with_preload(bool on, int size = 0)
{
    BackendOptions o;
    o.preload = on ? Preload::On : Preload::Off;
    o.preload_size = size;
    return o;
}

constexpr double kTol = 2e-4;  // float32 kernel vs float64 oracle, one step, prepared units

/// Positions after `steps` steps of a fresh binding (retire as given, tol2), plus every report.
MatrixD run_steps(Backend& b, const PreparedData& D, const MatrixD& Q, int steps, double tol2, bool retire,
                  std::vector<StepReport>* reports = nullptr, const Topology& want = Topology{})
{
    auto bnd = b.bind(share(D), want);
    bnd->set_modes(Q.data(), Q.rows());
    for (int s = 0; s < steps; ++s) {
        StepReport r;
        bnd->step(tol2, retire, r);
        if (reports) reports->push_back(r);
    }
    MatrixD out(Q.rows(), Q.cols());
    bnd->read_modes(out.data());
    return out;
}

}  // namespace

TEST_CASE("cuda: tiled layout reproduces the Mahalanobis exponent around each tile centre (no GPU)")
{
    // The CUDA kernels' reading of the shared GPU records (backends/gpu/tile_layout.hpp): exponent
    // in log2 units from [p', -L/2|p'|²] with qs = L q' (shared) or [A, B_d, C_d] with q' (per-point),
    // q' = y - c_t, against the direct float64 exponent of the point the slot holds (original[s]).
    // Bound: the records are float32 roundings of terms that the expanded form sums, so the error is
    // a few float32 ulps of the summed terms' magnitude Σ|term| (measured ≤ 1.3 ulp over 2,000 seeds),
    // not of the result: a fixed bound failed for ~0.5 % of seeds while the Morton order of the old
    // CUDA layout put the largest point of 1-D data into the first tile (the 63-bit key overflowed),
    // making that tile span the whole data range.
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-layout");
    const double L = static_cast<double>(MS_LOG2E) / 2;  // kHalfLog2e of fast_kernel.cuh
    const double ulp = std::ldexp(1.0, -24);
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int k : {1, 3, 5, 8})
            for (int tile : {32, 100}) {
                CAPTURE(int(model));
                CAPTURE(k);
                CAPTURE(tile);
                const PreparedData D = mstest::random_prepared(rng, 333, k, model);
                const gpu::TileLayout lay = gpu::build_tile_layout(D, tile);
                const bool pp = model == KernelModel::PerPoint;
                REQUIRE(lay.tiles == (333 + tile - 1) / tile);
                REQUIRE(lay.stride == gpu::record_stride(k, pp));
                REQUIRE(lay.original.size() == 333u);
                std::vector<Index> sorted = lay.original;
                std::sort(sorted.begin(), sorted.end());
                for (Index i = 0; i < 333; ++i) REQUIRE(sorted[static_cast<std::size_t>(i)] == i);  // a permutation
                if (k == 1) {
                    // 1-D tiles are intervals of the sorted data: they do not overlap.
                    double widths = 0;
                    for (Index t = 0; t < lay.tiles; ++t) widths += 2 * lay.radii[static_cast<std::size_t>(t)];
                    const double range = D.points.col(0).maxCoeff() - D.points.col(0).minCoeff();
                    CHECK(widths <= range * (1 + 1e-5) + 1e-6);
                }
                const MatrixD Q = mstest::random_queries(rng, D, 5);
                for (Index q = 0; q < Q.rows(); ++q)
                    for (Index s = 0; s < lay.tiles * tile; ++s) {
                        const float* rec = lay.records.data() + s * lay.stride;
                        const float* c = lay.centres.data() + (s / tile) * k;
                        if (s >= D.n()) {
                            CHECK(rec[gpu::log_weight_slot(k, pp)] == MS_PAD_LOG2W);
                            continue;
                        }
                        double x = rec[pp ? 0 : k], mag = std::abs(x), qq = 0;
                        for (int d = 0; d < k; ++d) {
                            const double qd = Q(q, d) - c[d];
                            if (pp) {
                                x += qd * rec[1 + d] + qd * qd * rec[1 + k + d];
                                mag += std::abs(qd * rec[1 + d]) + std::abs(qd * qd * rec[1 + k + d]);
                            } else {
                                x += 2 * L * qd * rec[d];
                                mag += std::abs(2 * L * qd * rec[d]);
                                qq += qd * qd;
                            }
                        }
                        x -= L * qq;
                        mag += L * qq;
                        const Index i = lay.original[static_cast<std::size_t>(s)];
                        double d2 = 0;
                        for (int d = 0; d < k; ++d) {
                            const double t = Q(q, d) - D.points(i, d);
                            d2 += (pp ? D.precision(i, d) : 1.0) * t * t;
                        }
                        const double want = -L * d2 + (pp ? D.log_weight[i] / std::log(2.0) : 0.0);
                        const double err = std::abs(x - want);
                        if (!(err <= 4 * ulp * (mag + 1))) {
                            CAPTURE(s);
                            CAPTURE(mag);
                            CHECK(err <= 4 * ulp * (mag + 1));
                        }
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
        const MatrixD Q = mstest::random_queries(rng, D, 75);  // ragged count
        for (int f_vppu : {1, 2, 4, 8, 32, 64, 128}) {
            std::vector<int> loads = {f_vppu};
            if (f_vppu > 1) loads.push_back(1);
            if (f_vppu > 2) loads.push_back(f_vppu / 2 + 1);  // idle PUs
            for (int f_load : loads)
                for (bool preload : {false, true}) {
                    CAPTURE(int(model));
                    CAPTURE(f_vppu);
                    CAPTURE(f_load);
                    CAPTURE(preload);
                    Topology used;
                    CHECK(deviation(D, Q, topo(0, 256, f_vppu, f_load), with_preload(preload), &used) < kTol);
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
                    CAPTURE(int(model));
                    CAPTURE(w);
                    CAPTURE(preload);
                    CAPTURE(f_vppu);
                    CHECK(deviation(D, Q, topo(0, 256, f_vppu, f_vppu), with_preload(preload, w)) < kTol);
                }
        // Every point-loop variant of the fast kernels (1: run-time W; 2, 3: W fixed at 512 / 1024).
        for (int w : {512, 1024})
            for (int v : {1, 2, 3}) {
                BackendOptions o = with_preload(true, w);
                o.cuda.kernel_variant = v;
                CAPTURE(int(model));
                CAPTURE(w);
                CAPTURE(v);
                CHECK(deviation(D, Q, Topology{}, o) < kTol);
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
                BackendOptions o = with_preload(preload, k > 8 ? 64 : 0);
                CAPTURE(int(model));
                CAPTURE(k);
                CAPTURE(preload);
                CHECK(deviation(D, Q, Topology{}, o) < kTol);  // fast kernels for k ≤ 8
                CHECK(deviation(D, Q, topo(0, 128, 8, 8), o) < kTol);  // Alg. 3 kernels
                if (k <= 8)
                    for (int r : {1, 2, 4, 8}) {
                        o.cuda.modes_per_pu = r;
                        CAPTURE(r);
                        CHECK(deviation(D, Q, topo(0, 64, 1, 1), o) < kTol);
                    }
            }
        }
}

TEST_CASE("cuda: GEMM form (tensor cores, fp16 / TF32 splits) matches the float64 oracle within 1e-4 bandwidths")
{
    // k = 13..256 (shared H), 13..128 (per-point H), exact and truncated, ragged n and
    // mode counts (partial blocks and tiles), data centred away from the block's median mode; k not
    // a multiple of 4 (13, 33, 100) takes the fp16 kernel's unaligned point loads.
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-gemm");
    BackendOptions o;
    o.pair_form = PairForm::Gemm;
    double worst = 0;
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int k : {13, 16, 24, 33, 64, 100, 128, 256}) {
            if (model == KernelModel::PerPoint && k > 128) continue;
            for (double cutoff : {std::numeric_limits<double>::infinity(), 3.0}) {
                PreparedData D = mstest::random_prepared(rng, 1000 + k, k, model);
                D.cutoff2 = cutoff * cutoff;
                const MatrixD Q = mstest::random_queries(rng, D, 301);
                Topology used;
                const double dev = deviation(D, Q, Topology{}, o, &used);
                CAPTURE(int(model));
                CAPTURE(k);
                CAPTURE(cutoff);
                CHECK(dev < 1e-4);
                CHECK(used.f_vppu == 4);
                worst = std::max(worst, dev);
            }
        }
    MESSAGE("GEMM form: largest deviation from the float64 oracle " << worst << " bandwidths");
    // Gemm resolves the kernels' own topology (quads as vPPUs); Auto does not take them yet
    // (kGemmAutoProven) and an explicit topology keeps Alg. 3.
    const PreparedData D = mstest::random_prepared(rng, 500, 32, KernelModel::Shared);
    CHECK(make_backend("cuda", o)->resolve_topology(Topology{}, D).f_vppu == 4);
    CHECK(make_backend("cuda")->resolve_topology(topo(0, 128, 8, 8), D).f_vppu == 8);
    BackendOptions bad;
    bad.pair_form = PairForm::Gemm;
    const PreparedData wide = mstest::random_prepared(rng, 50, 1100, KernelModel::Shared);  // beyond k = 1,024
    CHECK_THROWS_AS(make_backend("cuda", bad)->resolve_topology(Topology{}, wide), InvalidArgument);
    const PreparedData wide_pp = mstest::random_prepared(rng, 50, 200, KernelModel::PerPoint);  // per-point: k <= 128
    CHECK_THROWS_AS(make_backend("cuda", bad)->resolve_topology(Topology{}, wide_pp), InvalidArgument);
}

TEST_CASE("cuda: GEMM kernels and preload tiles sized from the device's shared memory (no GPU)")
{
    // No default may fail for want of shared memory. The shared model's kernels above
    // k = 256 (gemm_wide_kernel.cu) and the fp16 kernel where it does not fit give way to the
    // dimension-tiled kernel; the topology kernels' default tile halves until it fits.
    using namespace meanshift::cuda;
    constexpr unsigned long h100 = 232448, small = 101376;  // sharedMemPerBlockOptin: sm_90, sm_86/89
    for (int k : {257, 300, 384, 385, 512, 640, 700, 768, 1000, 1024})
        for (bool truncated : {false, true}) {
            CAPTURE(k);
            const GemmKernel g = gemm_kernel(k, false, truncated, GemmTarget{false, h100});
            CHECK(g.fn != nullptr);
            CHECK(g.smem <= h100);
            CHECK(g.threads == 512);
        }
    CHECK(gemm_kernel(1025, false, false, GemmTarget{false, h100}).fn == nullptr);
    CHECK(gemm_kernel(129, true, false, GemmTarget{false, h100}).fn == nullptr);
    // k = 256 on a device of 99 KiB: the fp16 kernel's 136 KB do not fit, the tiled kernel's do.
    const GemmKernel f16 = gemm_kernel(256, false, false, GemmTarget{false, h100});
    CHECK(f16.smem > small);
    const GemmKernel fit = gemm_kernel(256, false, false, GemmTarget{false, small});
    CHECK(fit.fn != nullptr);
    CHECK(fit.smem <= small);
    CHECK(gemm_kernel(1024, false, false, GemmTarget{false, small}).fn == nullptr);  // Auto: direct kernels
    // k = 257-512: 64 modes per block on sm_90; 32 where the device's shared memory is smaller.
    CHECK(gemm_kernel(384, false, false, GemmTarget{false, h100}).modes == 64);
    CHECK(gemm_kernel(512, false, true, GemmTarget{false, h100}).modes == 64);
    CHECK(gemm_kernel(384, false, false, GemmTarget{false, small}).modes == 32);
    // Hopper (wgmma): k = 129-512 on gemm_wgmma_wide_kernel.cu (τ = 256; 128 modes up to k = 256, 64
    // beyond), within sm_90's shared memory; where it does not fit, the mma.sync kernels as above.
    for (int k : {129, 130, 192, 256, 257, 384, 400, 512})
        for (bool truncated : {false, true}) {
            CAPTURE(k);
            const GemmKernel w = gemm_kernel(k, false, truncated, GemmTarget{true, h100});
            CHECK(w.fn != nullptr);
            CHECK(w.threads == 256);
            CHECK(w.modes == (k <= 256 ? 128 : 64));
            CHECK(w.smem <= h100);
            CHECK(gemm_kernel(k, false, truncated, GemmTarget{true, small}).smem <= small);
        }
    CHECK(gemm_kernel(513, false, false, GemmTarget{true, h100}).threads == 512);  // dimension-tiled
    // The topology kernels: 256 points of k = 384 need 393,248 bytes (the error); the
    // default tile halves to 128, and is 0 (no staging) where one point does not fit.
    CHECK(topology_smem_bytes(384, false, true, 256, 256) == 393248);
    CHECK(topology_tile(384, false, 256, h100) == 128);
    CHECK(topology_tile(3, false, 256, h100) == 256);
    CHECK(topology_tile(300, true, 256, h100) == 64);
    CHECK(topology_tile(100000, false, 256, h100) == 0);
}

TEST_CASE("cuda: the dimension-tiled GEMM kernel (k = 257..1,024) matches the float64 oracle")
{
    // gemm_wide_kernel.cu, the default (Auto) from k = 257 on (from k = 513 on Hopper, where
    // gemm_wgmma_wide_kernel.cu takes k = 129..512: variant 2 runs it, with cuda.wgmma = 0 the mma.sync
    // kernel): exact and truncated, ragged n and mode counts (partial blocks of 32 modes and tiles of 16
    // points), k not a multiple of 4 (scalar loads), streamed point chunks and chunked queries
    // (launches adding into one mode's sums).
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-gemm-wide");
    double worst = 0;
    for (int k : {257, 384, 402, 512, 700, 1024})
        for (double cutoff : {std::numeric_limits<double>::infinity(), 3.0})
            for (int variant = 0; variant < 3; ++variant) {
                PreparedData D = mstest::random_prepared(rng, 700 + k / 3, k, KernelModel::Shared);
                D.cutoff2 = cutoff * cutoff;
                MatrixD Q = mstest::random_queries(rng, D, 77);
                // random_queries' first query, the origin, is ~sqrt(k/2) bandwidths from every point here
                // (14 at k = 400): its weights, below 2^-126, flush to 0 on the GPU (NoSupport, documented
                // for every CUDA kernel; the exact oracle still moves it), so it takes a data point's place.
                Q.row(0) = D.points.row(3);
                BackendOptions o;
                o.cuda.wgmma = variant == 2;
                if (variant == 1) {
                    o.cuda.max_points = 300;
                    o.cuda.max_queries = 40;
                }
                Topology used;
                const double dev = deviation(D, Q, Topology{}, o, &used);
                CAPTURE(k);
                CAPTURE(cutoff);
                CAPTURE(variant);
                CHECK(dev < 1e-4);
                if (variant < 2 || k > 512)
                    CHECK(used.pus_per_ppu == 512);
                else
                    CHECK((used.pus_per_ppu == 256 || used.pus_per_ppu == 512));  // 256: wgmma (Hopper)
                worst = std::max(worst, dev);
            }
    MESSAGE("dimension-tiled GEMM kernel: largest deviation from the float64 oracle " << worst << " bandwidths");
}

TEST_CASE("cuda: the direct kernels' default preload tile shrinks to the device at high k")
{
    // `--exact --tune pair_form=direct` at k = 384 failed with "preload tile of 256 points
    // needs 393248 bytes of shared memory"; per-point k = 200 (no GEMM kernel) alike. The default
    // tile now halves until it fits; an explicit preload_size beyond the device still fails clearly.
    if (!cuda_usable()) return;
    auto rng = make_rng("cuda-wide-direct");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        const int k = model == KernelModel::Shared ? 384 : 200;
        const PreparedData D = mstest::random_prepared(rng, 300, k, model);
        const MatrixD Q = mstest::random_queries(rng, D, 40);
        BackendOptions o;
        o.pair_form = PairForm::Direct;
        CAPTURE(k);
        CHECK(deviation(D, Q, Topology{}, o) < kTol);
        BackendOptions big = o;
        big.preload_size = 256;
        CHECK_THROWS_AS(make_backend("cuda", big)->resolve_topology(Topology{}, D), InvalidArgument);
    }
}

TEST_CASE("cuda: the warpgroup-MMA GEMM kernels (k = 36-64, 130-256; compute capability 9.0) match the oracle")
{
    // gemm_wgmma_kernel.cu (k ≤ 64) and gemm_wgmma_wide_kernel.cu (k = 129..256: KF 192 and 256,
    // k = 130 with unaligned rows) on Hopper (tau = 256: two warpgroups), the mma.sync kernels
    // elsewhere and with cuda.wgmma = 0 (tau = 128 at k ≤ 64); exact and truncated, ragged n and mode
    // counts, streamed point chunks and chunked queries (several launches adding into one mode's sums).
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-wgmma");
    double worst = 0;
    for (int k : {36, 52, 64, 130, 176, 256})
        for (double cutoff : {std::numeric_limits<double>::infinity(), 3.0})
            for (int variant = 0; variant < 3; ++variant) {
                PreparedData D = mstest::random_prepared(rng, 1500 + k, k, KernelModel::Shared);
                D.cutoff2 = cutoff * cutoff;
                const MatrixD Q = mstest::random_queries(rng, D, 301);
                BackendOptions o;
                o.pair_form = PairForm::Gemm;
                o.cuda.wgmma = variant != 1;
                if (variant == 2) {
                    o.cuda.max_points = 300;
                    o.cuda.max_queries = 100;
                }
                Topology used;
                const double dev = deviation(D, Q, Topology{}, o, &used);
                CAPTURE(k);
                CAPTURE(cutoff);
                CAPTURE(variant);
                CHECK(dev < 1e-4);
                if (variant == 1 && k <= 64)
                    CHECK(used.pus_per_ppu == 128);
                else
                    CHECK((used.pus_per_ppu == 256 || used.pus_per_ppu == 128));
                if (variant == 0)
                    MESSAGE("k = " << k << ": tau " << used.pus_per_ppu
                                   << std::string(used.pus_per_ppu == 256 ? " (wgmma)" : " (mma.sync)"));
                worst = std::max(worst, dev);
            }
    MESSAGE("warpgroup-MMA test: largest deviation from the float64 oracle " << worst << " bandwidths");
}

TEST_CASE("cuda: chunked queries and streamed point chunks add up")
{
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-chunks");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        const PreparedData D = mstest::random_prepared(rng, 1000, 3, model);
        const MatrixD Q = mstest::random_queries(rng, D, 250);
        for (bool preload : {false, true})
            for (int f_vppu : {1, 4}) {
                BackendOptions o = with_preload(preload, 64);
                o.cuda.max_queries = 37;
                o.cuda.max_points = 200;
                CAPTURE(int(model));
                CAPTURE(preload);
                CAPTURE(f_vppu);
                CHECK(deviation(D, Q, topo(0, 128, f_vppu, f_vppu), o) < kTol);
            }
    }
}

TEST_CASE("cuda: several steps in small query and point chunks equal one chunk (retiring modes)")
{
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-chunks-steps");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int f_vppu : {1, 8}) {
            CAPTURE(int(model));
            CAPTURE(f_vppu);
            const PreparedData D = mstest::random_prepared(rng, 900, 3, model);
            const MatrixD Q = mstest::random_queries(rng, D, 300);
            BackendOptions one = with_preload(true, 64), many = one;
            many.cuda.max_queries = 29;
            many.cuda.max_points = 128;
            auto b1 = make_backend("cuda", one);
            auto b2 = make_backend("cuda", many);
            // Fixed iterations: every mode advances in every step.
            const Topology want = topo(0, 128, f_vppu, f_vppu);
            CHECK(max_abs_diff(run_steps(*b1, D, Q, 4, 0.0, false, nullptr, want),
                               run_steps(*b2, D, Q, 4, 0.0, false, nullptr, want)) < 1e-4);
            // Retiring with a loose tolerance: the same modes leave (away from the threshold).
            std::vector<StepReport> r1, r2;
            const MatrixD y1 = run_steps(*b1, D, Q, 6, 1e-4, true, &r1, want);
            const MatrixD y2 = run_steps(*b2, D, Q, 6, 1e-4, true, &r2, want);
            CHECK(max_abs_diff(y1, y2) < 1e-4);
            for (std::size_t s = 0; s < r1.size(); ++s) {
                CAPTURE(s);
                CHECK(r1[s].mode.size() == r2[s].mode.size());
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
        CAPTURE(devs.size());
        auto b = make_backend("cuda", o);
        CHECK(b->devices().size() == (devs.empty() ? b->devices().size() : devs.size()));
        CHECK(max_abs_diff(run_step(*b, D, Topology{}, Q), oracle_step(D, Q)) < kTol);
        // More devices than queries: some devices get nothing to do.
        const MatrixD Q2 = Q.topRows(2);
        CHECK(max_abs_diff(run_step(*b, D, Topology{}, Q2), oracle_step(D, Q2)) < kTol);
        // Reports cover every mode exactly once, across the devices' shares.
        auto bnd = b->bind(share(D), Topology{});
        bnd->set_modes(Q.data(), Q.rows());
        StepReport r;
        bnd->step(0.0, false, r);
        std::set<Index> seen(r.mode.begin(), r.mode.end());
        CHECK(seen.size() == static_cast<std::size_t>(Q.rows()));
        CHECK(r.mode.size() == static_cast<std::size_t>(Q.rows()));
        CHECK(r.kernel_seconds >= 0);
    }
}

TEST_CASE("cuda: a binding keeps working after its Backend is destroyed")
{
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-outlive");
    const PreparedData D = mstest::random_prepared(rng, 600, 3, KernelModel::Shared);
    const MatrixD Q = mstest::random_queries(rng, D, 50);
    for (std::vector<int> devs : {std::vector<int>{0}, std::vector<int>{0, 0}}) {
        CAPTURE(devs.size());
        std::unique_ptr<Binding> bnd;
        {
            BackendOptions o;
            o.devices = devs;
            auto b = make_backend("cuda", o);
            auto data = share(D);
            bnd = b->bind(data, Topology{});
        }  // the Backend and the caller's data handle are gone
        const MatrixD got = mstest::step(*bnd, Q);
        CHECK(max_abs_diff(got, oracle_step(D, Q)) < kTol);
        CHECK(bnd->data().n() == D.n());
    }
}

TEST_CASE("cuda: a mode without support keeps its position and is reported NoSupport")
{
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-nosupport");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (const Topology& want : {Topology{}, topo(0, 128, 8, 8)}) {
            CAPTURE(int(model));
            CAPTURE(want.f_vppu);
            const PreparedData D = mstest::random_prepared(rng, 400, 3, model);
            MatrixD Q = mstest::random_queries(rng, D, 20);
            Q.row(7).setConstant(1.0e6);  // 1e6 bandwidths from every point: every weight underflows
            Q(11, 0) = -1.0e6;
            auto b = make_backend("cuda");
            auto bnd = b->bind(share(D), want);
            bnd->set_modes(Q.data(), Q.rows());
            StepReport r;
            bnd->step(1e-12, true, r);
            REQUIRE(r.mode.size() == static_cast<std::size_t>(Q.rows()));
            for (std::size_t j = 0; j < r.mode.size(); ++j) {
                const Index m = r.mode[j];
                CAPTURE(m);
                if (m == 7 || m == 11) {
                    CHECK(r.status[j] == ModeStatus::NoSupport);
                    CHECK(r.shift2[j] == 0.0);
                } else {
                    CHECK(r.status[j] != ModeStatus::NoSupport);
                }
            }
            CHECK(bnd->active_count() <= Q.rows() - 2);
            MatrixD y(Q.rows(), Q.cols());
            bnd->read_modes(y.data());
            CHECK(y.row(7) == Q.row(7));
            CHECK(y.row(11) == Q.row(11));
            // The others moved as the oracle says.
            MatrixD want_y = oracle_step(D, Q);
            want_y.row(7) = Q.row(7);
            want_y.row(11) = Q.row(11);
            CHECK(max_abs_diff(y, want_y) < kTol);
        }
}

TEST_CASE("cuda: retire = true drops converged modes, reports shift2 in the given metric")
{
    if (!cuda_usable()) return;
    MSTEST_SEED_INFO();
    auto rng = make_rng("cuda-retire");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        CAPTURE(int(model));
        const PreparedData D = mstest::random_prepared(rng, 700, 3, model);
        const MatrixD Q = mstest::random_queries(rng, D, 120);
        MatrixD metric(Q.rows(), Q.cols());
        std::uniform_real_distribution<double> U(0.5, 2.0);
        for (Index i = 0; i < metric.size(); ++i) metric.data()[i] = U(rng);
        auto b = make_backend("cuda", BackendOptions{});
        auto bnd = b->bind(share(D), Topology{});

        // Step 1 without retiring: shift2 = Σ metric (y' - y)² of the positions read back.
        bnd->set_modes(Q.data(), Q.rows(), metric.data());
        StepReport r;
        bnd->step(0.0, false, r);
        MatrixD y1(Q.rows(), Q.cols());
        bnd->read_modes(y1.data());
        REQUIRE(r.mode.size() == static_cast<std::size_t>(Q.rows()));
        std::vector<double> s2(static_cast<std::size_t>(Q.rows()));
        for (std::size_t j = 0; j < r.mode.size(); ++j) {
            const Index m = r.mode[j];
            const double want = (metric.row(m).array() * (y1.row(m) - Q.row(m)).array().square()).sum();
            CHECK(r.shift2[j] == doctest::Approx(want).epsilon(1e-3).scale(1e-9));
            s2[static_cast<std::size_t>(m)] = r.shift2[j];
        }
        CHECK(bnd->active_count() == Q.rows());  // retire = false: nobody leaves

        // A tolerance in the widest gap of the sorted shifts: the modes below it converge.
        std::vector<double> sorted = s2;
        std::sort(sorted.begin(), sorted.end());
        double tol2 = 0, gap = -1;
        for (std::size_t j = sorted.size() / 4; j + 1 < 3 * sorted.size() / 4; ++j)
            if (sorted[j + 1] - sorted[j] > gap)
                gap = sorted[j + 1] - sorted[j], tol2 = 0.5 * (sorted[j] + sorted[j + 1]);
        bnd->set_modes(Q.data(), Q.rows(), metric.data());
        bnd->step(tol2, true, r);
        std::set<Index> left;
        for (std::size_t j = 0; j < r.mode.size(); ++j) {
            const Index m = r.mode[j];
            CHECK(r.status[j] ==
                  (s2[static_cast<std::size_t>(m)] <= tol2 ? ModeStatus::Converged : ModeStatus::Active));
            if (r.status[j] != ModeStatus::Active) left.insert(m);
        }
        REQUIRE(!left.empty());
        CHECK(bnd->active_count() == Q.rows() - static_cast<Index>(left.size()));
        MatrixD after1(Q.rows(), Q.cols());
        bnd->read_modes(after1.data());

        // The next step advances only the active modes; the converged ones stay where they were.
        bnd->step(tol2, true, r);
        CHECK(r.mode.size() == static_cast<std::size_t>(Q.rows()) - left.size());
        for (Index m : r.mode) CHECK(left.count(m) == 0);
        MatrixD after2(Q.rows(), Q.cols());
        bnd->read_modes(after2.data());
        for (Index m : left) CHECK(after2.row(m) == after1.row(m));

        // A huge tolerance retires everyone; then a step has nothing to report.
        bnd->step(1e30, true, r);
        CHECK(bnd->active_count() == 0);
        bnd->step(1e30, true, r);
        CHECK(r.mode.empty());
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
    Q.row(0) = D.points.row(0);  // a corner: far from the centre of the data
    Q.row(1) = D.points.row(D.n() - 1);
    for (bool preload : {true, false}) {
        CAPTURE(preload);
        CHECK(deviation(D, Q, Topology{}, with_preload(preload)) < kTol);
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
    const Result got = cluster(x, opt);  // default tuning: preloading on
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
    for (int which = 0; which < 5; ++which) {
        BackendOptions o;
        if (which == 0) o.cuda.modes_per_pu = 3;
        if (which == 1) o.cuda.kernel_variant = 7;
        if (which == 2) o.cuda.max_queries = -1;
        if (which == 3) o.cuda.max_points = -5;
        if (which == 4) o.preload_size = -1;
        CAPTURE(which);
        CHECK_THROWS_AS(make_backend("cuda", o), InvalidArgument);
    }
    auto b = make_backend("cuda");
    CHECK_THROWS_AS(b->resolve_topology(topo(0, 256, 3, 3), D), InvalidArgument);  // f_vppu not a power of two
    CHECK_THROWS_AS(b->resolve_topology(topo(0, 100, 4, 4), D), InvalidArgument);  // tau not a multiple of 32
    CHECK_THROWS_AS(b->resolve_topology(topo(0, 256, 8, 9), D), InvalidArgument);  // f_load > f_vppu
    BackendOptions huge = with_preload(true, 1 << 20);
    auto h = make_backend("cuda", huge);
    CHECK_THROWS_AS(h->resolve_topology(Topology{}, D), InvalidArgument);  // tile beyond shared memory
    CHECK_THROWS_AS(b->bind(nullptr, Topology{}), InvalidArgument);
    auto bnd = b->bind(share(D), Topology{});
    StepReport r;
    CHECK_THROWS_AS(bnd->step(0.0, false, r), Error);  // before set_modes
    MatrixD y(1, 3);
    CHECK_THROWS_AS(bnd->read_modes(y.data()), Error);
    CHECK_THROWS_AS(bnd->set_modes(D.points.data(), 0), InvalidArgument);
}

#endif  // MEANSHIFT_HAVE_CUDA
