// Kernel profiles on the GPU backends (opencl, cuda): one step of the compact profiles (flat,
// Epanechnikov, biweight: the range kernels, cutoff = support = 1) and of von Mises–Fisher (Gaussian
// weights, then each mode projected onto the sphere) against a float64 step written here from
// meanshift::profile_weight, independent of the serial backend; shared and per-point models, with
// and without the cell grid, the backends' default plan and a vPPU topology (OpenCL on a CPU device:
// the CPU range kernels by default, range_modes.cl with f_vppu = 4). A backend not usable here is
// skipped with a message.
#include "step_support.hpp"
#include "test_support.hpp"
#include "skeleton/src/core/prepare.hpp"

#include <meanshift/meanshift.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using meanshift::Index;
using meanshift::KernelModel;
using meanshift::KernelProfile;
using meanshift::MatrixD;
using meanshift::PreparedData;

/// One float64 step of the queries Q over D (eq. 4-6 with the profile's weight g(q), pairs with
/// q > cutoff2 left out; a mode without support keeps its position), then the vMF projection.
MatrixD reference_step(const PreparedData& D, const MatrixD& Q)
{
    const int k = D.k();
    const bool pp = D.model == KernelModel::PerPoint;
    MatrixD out(Q.rows(), k);
    for (Index j = 0; j < Q.rows(); ++j) {
        std::vector<double> s0(pp ? k : 1, 0.0), s1(k, 0.0);
        for (Index i = 0; i < D.n(); ++i) {
            double q = 0;
            for (int d = 0; d < k; ++d) {
                const double t = Q(j, d) - D.points(i, d);
                q += (pp ? D.precision(i, d) : 1.0) * t * t;
            }
            if (q > D.cutoff2) continue;
            const double g = meanshift::profile_weight(D.profile, q) * (pp ? std::exp(D.log_weight[i]) : 1.0);
            for (int d = 0; d < k; ++d) {
                const double gw = g * (pp ? D.precision(i, d) : 1.0);
                s0[pp ? d : 0] += pp ? gw : (d == 0 ? g : 0.0);
                s1[d] += gw * D.points(i, d);
            }
        }
        for (int d = 0; d < k; ++d) {
            const double z = s0[pp ? d : 0];
            out(j, d) = z > 0 ? s1[d] / z : Q(j, d);
        }
        if (D.sphere_radius > 0) {
            const Eigen::VectorXd u = out.row(j).transpose() - D.sphere_origin;
            if (u.norm() > 0) out.row(j) = (D.sphere_origin + D.sphere_radius * u / u.norm()).transpose();
        }
    }
    return out;
}

/// n points in 3 blobs over [0, 6]^k (prepared units: bandwidth 1), per-point precisions in
/// [0.6, 1.6] when pp; the first m of them (jittered) as queries.
PreparedData blobs(std::mt19937_64& rng, Index n, int k, bool pp, KernelProfile profile, bool grid)
{
    PreparedData D;
    D.model = pp ? KernelModel::PerPoint : KernelModel::Shared;
    D.profile = profile;
    D.points.resize(n, k);
    std::uniform_real_distribution<double> U(0.0, 6.0);
    std::normal_distribution<double> N(0.0, 0.7);
    MatrixD centres(3, k);
    for (int c = 0; c < 3; ++c)
        for (int d = 0; d < k; ++d) centres(c, d) = U(rng);
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d) D.points(i, d) = centres(i % 3, d) + N(rng);
    if (pp) {
        std::uniform_real_distribution<double> W(0.6, 1.6);
        D.precision.resize(n, k);
        for (Index i = 0; i < n; ++i)
            for (int d = 0; d < k; ++d) D.precision(i, d) = W(rng);
    }
    D.finalize();
    D.cutoff2 = 1.0;  // the compact profiles' support
    if (grid) {
        std::string why;
        meanshift::detail::build_search(D, meanshift::NeighbourSearch::Grid, why);
    }
    return D;
}

MatrixD queries_from(const PreparedData& D, std::mt19937_64& rng, Index m)
{
    std::normal_distribution<double> N(0.0, 0.2);
    MatrixD Q(m, D.k());
    for (Index j = 0; j < m; ++j)
        for (int d = 0; d < D.k(); ++d) Q(j, d) = D.points((j * 7) % D.n(), d) + N(rng);
    return Q;
}

/// The GPU backends usable here; MEANSHIFT_PROFILE_TEST_BACKENDS (e.g. "cuda") narrows the list (a
/// device run that times its OpenCL program builds separately).
std::vector<std::string> gpu_backends()
{
    const char* only = std::getenv("MEANSHIFT_PROFILE_TEST_BACKENDS");
    std::vector<std::string> out;
    for (const char* name : {"opencl", "cuda"}) {
        if (only && std::string(only).find(name) == std::string::npos) continue;
        for (const auto& s : meanshift::list_backends())
            if (s.name == name && mstest::backend_usable(name)) out.push_back(name);
    }
    return out;
}

/// MEANSHIFT_PROFILE_TEST_QUICK=1: k = 3 and the default topology only (fewer OpenCL programs to build).
bool quick()
{
    return std::getenv("MEANSHIFT_PROFILE_TEST_QUICK") != nullptr;
}

}  // namespace

TEST_CASE("profiles gpu: compact profiles, one step against the float64 reference (range kernels)")
{
    for (const std::string& backend : gpu_backends()) {
        auto b = meanshift::make_backend(backend);
        for (KernelProfile profile : {KernelProfile::Flat, KernelProfile::Epanechnikov, KernelProfile::Biweight}) {
            CHECK(b->supports_profile(profile));
            for (int k : {2, 3, 6, 17})
                for (bool pp : {false, true})
                    for (bool grid : {false, true})
                        for (const meanshift::Topology& want : {meanshift::Topology{}, mstest::topo(0, 64, 4, 4)}) {
                            if (quick() && (k != 3 || want.f_vppu != 0)) continue;
                            auto rng = mstest::make_rng("profiles-gpu-" + std::to_string(k) + (pp ? "pp" : "sh"));
                            const PreparedData D = blobs(rng, 600, k, pp, profile, grid && k <= 6);
                            const MatrixD Q = queries_from(D, rng, 70);
                            const MatrixD got = mstest::run_step(*b, D, want, Q);
                            const MatrixD want_y = reference_step(D, Q);
                            INFO(backend << " " << meanshift::profile_name(profile) << " k = " << k
                                         << (pp ? " per-point" : " shared") << (grid ? " grid" : " brute force")
                                         << " topology " << want.to_string());
                            CHECK(mstest::max_abs_diff(got, want_y) < 2e-4);
                        }
        }
    }
}

TEST_CASE("profiles gpu: the compact profiles' weights move modes differently (not the Gaussian's)")
{
    // Guards against a kernel that ignores the profile: flat and biweight steps differ by far more
    // than float32 rounding on the same data.
    for (const std::string& backend : gpu_backends()) {
        auto b = meanshift::make_backend(backend);
        auto rng = mstest::make_rng("profiles-gpu-differ");
        const PreparedData F = blobs(rng, 400, 2, false, KernelProfile::Flat, true);
        PreparedData W = F;
        W.profile = KernelProfile::Biweight;
        PreparedData G = F;
        G.profile = KernelProfile::Gaussian;
        const MatrixD Q = queries_from(F, rng, 40);
        const MatrixD f = mstest::run_step(*b, F, {}, Q), w = mstest::run_step(*b, W, {}, Q),
                      g = mstest::run_step(*b, G, {}, Q);
        INFO(backend);
        CHECK(mstest::max_abs_diff(f, w) > 1e-2);
        CHECK(mstest::max_abs_diff(f, g) > 1e-2);
    }
}

TEST_CASE("profiles gpu: vMF steps end on the sphere (exact and truncated kernels)")
{
    for (const std::string& backend : gpu_backends()) {
        auto b = meanshift::make_backend(backend);
        CHECK(b->supports_profile(KernelProfile::VonMisesFisher));
        for (int k : {3, 5})
            for (bool truncated : {false, true}) {
                auto rng = mstest::make_rng("profiles-gpu-vmf-" + std::to_string(k));
                // Unit vectors around 2 directions, scaled to radius 1/h = 3 about an origin off zero
                // (centring moves it there): kappa = 9.
                const double radius = 3.0;
                Eigen::VectorXd origin(k);
                for (int d = 0; d < k; ++d) origin[d] = 0.25 * (d + 1);
                std::normal_distribution<double> N(0.0, 1.0);
                const Index n = 500;
                PreparedData D;
                D.profile = KernelProfile::VonMisesFisher;
                D.points.resize(n, k);
                for (Index i = 0; i < n; ++i) {
                    Eigen::VectorXd v(k);
                    for (int d = 0; d < k; ++d) v[d] = (i % 2 ? 1.0 : -0.5) * (d == i % 2 ? 2.0 : 0.3) + 0.35 * N(rng);
                    D.points.row(i) = (origin + radius * v / v.norm()).transpose();
                }
                D.finalize();
                D.sphere_origin = origin;
                D.sphere_radius = radius;
                if (truncated) D.cutoff2 = 9.0;
                MatrixD Q(60, k);
                for (Index j = 0; j < Q.rows(); ++j) Q.row(j) = D.points.row((j * 11) % n);
                const MatrixD got = mstest::run_step(*b, D, {}, Q);
                const MatrixD want = reference_step(D, Q);
                INFO(backend << " vMF k = " << k << (truncated ? " truncated" : " exact"));
                CHECK(mstest::max_abs_diff(got, want) < 2e-4);
                double off = 0;
                for (Index j = 0; j < got.rows(); ++j)
                    off = std::max(off, std::abs((got.row(j).transpose() - origin).norm() - radius));
                CHECK(off < 1e-4);
            }
    }
}

TEST_CASE("profiles gpu: pair_form=gemm refuses compact profiles; auto keeps them off the GEMM kernels")
{
    for (const std::string& backend : gpu_backends()) {
        auto rng = mstest::make_rng("profiles-gpu-gemm");
        const PreparedData D = blobs(rng, 300, 32, false, KernelProfile::Epanechnikov, false);
        meanshift::BackendOptions gemm;
        gemm.pair_form = meanshift::PairForm::Gemm;
        auto bg = meanshift::make_backend(backend, gemm);
        INFO(backend);
        CHECK_THROWS_AS((void)bg->resolve_topology({}, D), meanshift::InvalidArgument);
        // A compact profile beyond its support (cutoff2 > 1) is refused, not run with Gaussian kernels.
        PreparedData wide = D;
        wide.cutoff2 = std::numeric_limits<double>::infinity();
        CHECK_THROWS_AS((void)meanshift::make_backend(backend)->resolve_topology({}, wide), meanshift::InvalidArgument);
        // Auto at k = 32 (GEMM's range for the Gaussian): the range kernel, the profile's answer.
        auto b = meanshift::make_backend(backend);
        const MatrixD Q = queries_from(D, rng, 30);
        CHECK(mstest::max_abs_diff(mstest::run_step(*b, D, {}, Q), reference_step(D, Q)) < 2e-4);
    }
}

namespace {

/// Pairs per second of `steps` steps (no retiring) of every point as a mode over D on `backend`:
/// candidate pairs the kernels report (Timing of the range kernels; active × n for the exact ones)
/// over the kernels' own time. The best of the steps after the first (warm-up).
double probe_pairs_per_s(meanshift::Backend& b, const PreparedData& D, int steps, double* pairs_per_step)
{
    auto binding = b.bind(mstest::share(D), b.resolve_topology({}, D));
    binding->set_modes(D.points.data(), D.n());
    double best = 0;
    for (int s = 0; s < steps; ++s) {
        meanshift::StepReport r;
        binding->step(0.0, false, r);
        const double pairs = r.pairs >= 0 ? r.pairs : static_cast<double>(D.n()) * static_cast<double>(D.n());
        if (pairs_per_step) *pairs_per_step = pairs;
        if (s > 0 && r.kernel_seconds > 0) best = std::max(best, pairs / r.kernel_seconds);
    }
    return best;
}

}  // namespace

// A timing probe for the device machine, skipped by default: run with
//   meanshift_tests -tc='profiles gpu: pairs/s probe' --no-skip
// Prints one line per backend and profile: truncated (cutoff = 1 bandwidth, cell grid) for every
// profile including the Gaussian, and exact for the Gaussian and vMF. MEANSHIFT_PROBE_N sets n
// (default 1,048,576 for the truncated runs, a quarter for the exact ones); MEANSHIFT_PROBE_CPU=1 also
// probes CPU-class OpenCL devices (PoCL).
TEST_CASE("profiles gpu: pairs/s probe" * doctest::skip())
{
    const char* env_n = std::getenv("MEANSHIFT_PROBE_N");
    const Index n = env_n ? std::atol(env_n) : (Index(1) << 20);
    for (const std::string& backend : gpu_backends()) {
        auto b = meanshift::make_backend(backend);
        const auto devs = b->devices();
        if (devs.empty() || (devs.front().kind != "gpu" && !std::getenv("MEANSHIFT_PROBE_CPU"))) {
            MESSAGE(backend << ": not a GPU here, probe skipped");
            continue;
        }
        // n uniform points in a 3-D box holding ~400 points per unit ball (cutoff 1): a point cloud.
        std::mt19937_64 rng(20261128);
        const double side = std::cbrt(static_cast<double>(n) * 4.18879 / 400.0);
        std::uniform_real_distribution<double> U(0.0, side);
        PreparedData base;
        base.points.resize(n, 3);
        for (Index i = 0; i < n; ++i)
            for (int d = 0; d < 3; ++d) base.points(i, d) = U(rng);
        base.finalize();
        for (KernelProfile profile :
             {KernelProfile::Gaussian, KernelProfile::Flat, KernelProfile::Epanechnikov, KernelProfile::Biweight}) {
            PreparedData D = base;
            D.profile = profile;
            D.cutoff2 = 1.0;
            std::string why;
            meanshift::detail::build_search(D, meanshift::NeighbourSearch::Grid, why);
            double pairs = 0;
            const double rate = probe_pairs_per_s(*b, D, 4, &pairs);
            std::printf(
                "PROBE backend=%s device=\"%s\" profile=%s kernel=truncated n=%lld k=3 cutoff=1 pairs/step=%.4g "
                "pairs/s=%.4g\n",
                backend.c_str(), devs.front().name.c_str(), meanshift::profile_name(profile), static_cast<long long>(n),
                pairs, rate);
        }
        // Exact kernel: n/4 points (every pair), Gaussian and vMF (Gaussian weights + projection).
        const Index ne = n / 4;
        PreparedData E;
        E.points = base.points.topRows(ne);
        E.finalize();
        for (KernelProfile profile : {KernelProfile::Gaussian, KernelProfile::VonMisesFisher}) {
            PreparedData D = E;
            D.profile = profile;
            if (profile == KernelProfile::VonMisesFisher) {
                // Points projected onto a sphere of radius side/2 about the box centre.
                D.sphere_origin = Eigen::VectorXd::Constant(3, side / 2);
                D.sphere_radius = side / 2;
                for (Index i = 0; i < ne; ++i) {
                    const Eigen::VectorXd u = D.points.row(i).transpose() - D.sphere_origin;
                    D.points.row(i) = (D.sphere_origin + D.sphere_radius * u / std::max(u.norm(), 1e-9)).transpose();
                }
                const Eigen::VectorXd o = D.sphere_origin;
                const double rr = D.sphere_radius;
                D.finalize();
                D.sphere_origin = o;
                D.sphere_radius = rr;
            }
            double pairs = 0;
            const double rate = probe_pairs_per_s(*b, D, 4, &pairs);
            std::printf(
                "PROBE backend=%s device=\"%s\" profile=%s kernel=exact n=%lld k=3 pairs/step=%.4g pairs/s=%.4g\n",
                backend.c_str(), devs.front().name.c_str(), meanshift::profile_name(profile),
                static_cast<long long>(ne), pairs, rate);
        }
    }
}
