// Conformance at high k: k = 16, 64, 128, shared and per-point H, the exact kernel and
// a finite cutoff, with the backend's default pair form (Auto: the matrix-product kernels from
// their crossover on) and with BackendOptions::pair_form = Gemm forced, against the float64 serial
// oracle. Ragged n and mode counts (not multiples of any tile), every topology the backend accepts,
// modes without support, and whole clusterings of 64-D blobs.
#include "conformance.hpp"

#include <cmath>
#include <limits>

using namespace meanshift;
using namespace mstest;

namespace {

std::string model_name(KernelModel m)
{
    return m == KernelModel::Shared ? "shared" : "per-point";
}

/// The pair forms to test: the default, and Gemm forced. A backend that refuses Gemm for this data
/// (InvalidArgument: a documented limit, e.g. a largest k) is tested with the default only.
std::vector<std::pair<std::string, BackendOptions>> pair_forms()
{
    BackendOptions gemm;
    gemm.pair_form = PairForm::Gemm;
    std::vector<std::pair<std::string, BackendOptions>> forms{{"auto", BackendOptions{}}, {"gemm", gemm}};
    if (conf::backend().rfind("opencl", 0) == 0) {
        // OpenCL's dimension-tiled kernel (gemm_wide.cl) at every k, on any device (GPUs take it
        // by default from its crossover on; CPU devices only this way).
        BackendOptions wide = gemm;
        wide.opencl.gemm_wide_min_k = 1;
        forms.emplace_back("gemm-wide", wide);
    }
    return forms;
}

/// n points of k-D Gaussian noise of standard deviation 2/sqrt(k) a dimension around 0.5: pairs
/// ~2.8 bandwidths apart at any k, so that weights stay far from float32's underflow at high k.
PreparedData close_prepared(std::mt19937_64& rng, Index n, int k)
{
    PreparedData D;
    D.model = KernelModel::Shared;
    std::normal_distribution<double> N(0.5, 2.0 / std::sqrt(double(k)));
    D.points.resize(n, k);
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d) D.points(i, d) = double(float(N(rng)));
    D.finalize();
    return D;
}

/// Squared Mahalanobis distance of query y to point i (the oracle's D²).
double dist2(const PreparedData& D, const double* y, Index i)
{
    double s = 0;
    for (int d = 0; d < D.k(); ++d) {
        const double t = y[d] - D.points(i, d);
        s += (D.model == KernelModel::PerPoint ? D.precision(i, d) : 1.0) * t * t;
    }
    return s;
}

/// A cutoff² near `want` such that no (query, point) pair has D² within 1e-3 relative of it: float32
/// rounding cannot then put a pair on the other side of the cutoff than float64 does (the
/// truncated kernel is discontinuous there; conformance_truncated.cpp bounds that effect instead).
double clear_cutoff2(const PreparedData& D, const MatrixD& Q, double want)
{
    std::vector<double> d2;
    for (Index q = 0; q < Q.rows(); ++q)
        for (Index i = 0; i < D.n(); ++i) d2.push_back(dist2(D, Q.row(q).data(), i));
    for (int a = 0; a < 1000; ++a) {
        const double c2 = want * (1.0 + 0.0137 * a);
        bool clear = true;
        for (double v : d2)
            if (std::abs(v - c2) <= 1e-3 * c2) {
                clear = false;
                break;
            }
        if (clear) return c2;
    }
    FAIL("no cutoff clear of every pair");
    return want;
}

/// The backend under test with `bo`, or nullptr (and a message) where it declines `form` for D.
std::unique_ptr<Backend> backend_for(const std::string& form, const BackendOptions& bo, const PreparedData& D)
{
    try {
        auto be = make_backend(conf::backend(), bo);
        (void)be->resolve_topology(Topology{}, D);
        return be;
    } catch (const InvalidArgument& e) {
        MESSAGE("backend " << conf::backend() << " declines pair_form=" << form << ": " << std::string(e.what()));
        return nullptr;
    }
}

/// One step of Q on D (every accepted topology, at most `max_topologies`) against the oracle.
void check_step(const std::string& form, const BackendOptions& bo, const PreparedData& D, const MatrixD& Q,
                std::size_t max_topologies)
{
    const std::unique_ptr<Backend> be = backend_for(form, bo, D);
    if (!be) return;
    auto oracle = make_backend("serial");
    const auto shared = share(D);
    const MatrixD want = conf::step(*oracle->bind(shared, Topology{}), Q);
    const double R = conf::extent(D.points, Q);
    const double tol = conf::step_tolerance(R) * (D.model == KernelModel::Shared ? 1.0 : 1.5);
    auto ts = conf::topologies(*be, D);
    if (ts.size() > max_topologies) ts.resize(max_topologies);
    for (const Topology& t : ts) {
        INFO("pair_form " << form << ", topology " << t.to_string() << ", tolerance " << tol);
        const MatrixD got = conf::step(*be->bind(shared, t), Q);
        CHECK(got.allFinite());
        CHECK(max_abs_diff(got, want) <= tol);
    }
}

}  // namespace

TEST_CASE("conformance highdim: one step, k = 16, 64, 128, shared and per-point, exact and cutoff, ragged n and counts")
{
    auto rng = make_rng("conf-highdim-step");
    MSTEST_SEED_INFO();
    const bool truncates = make_backend(conf::backend())->supports_cutoff();
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int k : {16, 64, 128})
            for (Index n : {Index(67), Index(301)})
                for (bool cut : {false, true}) {
                    if (cut && !truncates) continue;
                    PreparedData D = random_prepared(rng, n, k, model);
                    const MatrixD Q = random_queries(rng, D, n == 67 ? 130 : 37);
                    if (cut) D.cutoff2 = clear_cutoff2(D, Q, 9.0);
                    INFO(model_name(model)
                         << ", k = " << k << ", n = " << n << ", count = " << Q.rows() << ", cutoff2 = " << D.cutoff2);
                    for (const auto& [form, bo] : pair_forms()) check_step(form, bo, D, Q, n == 67 ? 1000 : 2);
                }
}

TEST_CASE("conformance highdim: one step, k = 200 and 400 (warpgroup-MMA kernels on Hopper), exact and cutoff")
{
    // The shared model's GEMM kernels between k = 128 and 512 (gemm_wgmma_wide_kernel.cu on compute
    // capability 9.0, the mma.sync kernels elsewhere). The first query, the origin, is ~sqrt(k/2)
    // bandwidths from every point here: its weights flush to 0 on the GPUs (NoSupport, documented),
    // so it takes a data point's place.
    auto rng = make_rng("conf-highdim-step-wide");
    MSTEST_SEED_INFO();
    const bool truncates = make_backend(conf::backend())->supports_cutoff();
    for (int k : {200, 400})
        for (Index n : {Index(67), Index(301)})
            for (bool cut : {false, true}) {
                if (cut && !truncates) continue;
                PreparedData D = random_prepared(rng, n, k, KernelModel::Shared);
                MatrixD Q = random_queries(rng, D, n == 67 ? 130 : 37);
                Q.row(0) = D.points.row(3);
                if (cut) D.cutoff2 = clear_cutoff2(D, Q, 9.0);
                INFO("k = " << k << ", n = " << n << ", count = " << Q.rows() << ", cutoff2 = " << D.cutoff2);
                for (const auto& [form, bo] : pair_forms()) check_step(form, bo, D, Q, 2);
            }
}

TEST_CASE("conformance highdim: one step, k = 130 and 1,023 (dimension-tiled kernels), exact and cutoff")
{
    // The dimension-tiled kernels (OpenCL's gemm_wide.cl, CUDA's gemm_wide_kernel.cu) up to and
    // beyond k = 1,000, on k not a multiple of their dimension chunks (130 = 2 mod 4 and 1,023), on
    // points ~2.8 bandwidths apart so that every mode has many weights.
    auto rng = make_rng("conf-highdim-step-dimension-tiled");
    MSTEST_SEED_INFO();
    const bool truncates = make_backend(conf::backend())->supports_cutoff();
    for (int k : {130, 1023})
        for (Index n : {Index(67), Index(301)})
            for (bool cut : {false, true}) {
                if (cut && !truncates) continue;
                PreparedData D = close_prepared(rng, n, k);
                MatrixD Q = random_queries(rng, D, n == 67 ? 130 : 37);
                Q.row(0) = D.points.row(3);
                if (cut) D.cutoff2 = clear_cutoff2(D, Q, 9.0);
                INFO("k = " << k << ", n = " << n << ", count = " << Q.rows() << ", cutoff2 = " << D.cutoff2);
                for (const auto& [form, bo] : pair_forms()) check_step(form, bo, D, Q, 2);
            }
}

TEST_CASE("conformance highdim: modes without support keep their position and are reported")
{
    auto rng = make_rng("conf-highdim-support");
    MSTEST_SEED_INFO();
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint})
        for (int k : {16, 64})
            for (bool cut : {false, true})
                for (const auto& [form, bo] : pair_forms()) {
                    INFO(model_name(model) << ", k = " << k << ", cutoff " << cut << ", pair_form " << form);
                    PreparedData D = random_prepared(rng, 150, k, model);
                    const std::unique_ptr<Backend> be = backend_for(form, bo, D);
                    if (!be) continue;
                    if (cut && !be->supports_cutoff()) continue;
                    if (cut) D.cutoff2 = 9.0;
                    MatrixD Q = random_queries(rng, D, 70);
                    for (int d = 0; d < k; ++d) Q(0, d) = (d % 2 ? -1000.25 : 999.75);  // every weight underflows
                    if (cut) {
                        // beyond the cutoff of every point but within float32 range: the cutoff decides
                        for (int d = 0; d < k; ++d) Q(69, d) = double(float(D.points(0, d) + (d == 0 ? 12.0 : 0.0)));
                    }
                    StepReport report, oracle_report;
                    auto binding = be->bind(share(D), Topology{});
                    const MatrixD got = conf::step(*binding, Q, &report);
                    const MatrixD want =
                        conf::step(*make_backend("serial")->bind(share(D), Topology{}), Q, &oracle_report);
                    for (int d = 0; d < k; ++d) CHECK(got(0, d) == Q(0, d));
                    REQUIRE(report.mode.size() == 70);
                    std::vector<ModeStatus> expect(70, ModeStatus::Active);
                    for (std::size_t j = 0; j < oracle_report.mode.size(); ++j)
                        expect[std::size_t(oracle_report.mode[j])] = oracle_report.status[j];
                    CHECK(expect[0] == ModeStatus::NoSupport);
                    if (cut) CHECK(expect[69] == ModeStatus::NoSupport);
                    for (std::size_t j = 0; j < report.mode.size(); ++j) {
                        const Index q = report.mode[j];
                        INFO("mode " << q);
                        // NoSupport exactly where the oracle says so (Active / Converged may differ
                        // at the tolerance's edge)
                        CHECK((report.status[j] == ModeStatus::NoSupport) ==
                              (expect[std::size_t(q)] == ModeStatus::NoSupport));
                        if (report.status[j] == ModeStatus::NoSupport)
                            for (int d = 0; d < k; ++d) CHECK(got(q, d) == Q(q, d));
                    }
                    const double tol = conf::step_tolerance(conf::extent(D.points, Q.bottomRows(69))) *
                                       (model == KernelModel::Shared ? 1.0 : 1.5);
                    CHECK(max_abs_diff(got.bottomRows(69), want.bottomRows(69)) <= tol);
                }
}

TEST_CASE("conformance highdim: clustering 64-D blobs, exact and truncated, vs the oracle")
{
    auto rng = make_rng("conf-highdim-cluster");
    MSTEST_SEED_INFO();
    const Blobs b = make_blobs(rng, 64, {70, 50, 30}, {0.5, 0.4, 0.3}, 8.0);
    for (double c : {std::numeric_limits<double>::infinity(), 6.0})
        for (const auto& [form, bo] : pair_forms()) {
            INFO("cutoff " << c << ", pair_form " << form);
            Options o = conf::options(Bandwidth::isotropic(1.5));
            o.backend_options = bo;
            o.seeding = Seeding::AllPoints;
            if (std::isfinite(c))
                o.cutoff = c;
            else
                o.exact = true;
            Options w = o;
            w.backend = "serial";
            w.backend_options = BackendOptions{};
            Result got;
            try {
                got = cluster(b.data, o);
            } catch (const InvalidArgument& e) {
                MESSAGE("declined: " << std::string(e.what()));
                continue;
            }
            const Result want = cluster(b.data, w);
            CHECK(same_partition(got.labels, want.labels));
            REQUIRE(got.modes.rows() == want.modes.rows());
            // Modes that converged (to tolerance 1e-4 bandwidths) in both runs; float32 steps on top. A mode
            // still moving after max_iterations (a seed on a saddle between blobs: seed 17784788075835443320
            // left one 0.13 bandwidths from the oracle's after 300 iterations in both) is on a slow,
            // unstable path where rounding differences grow; the partition above covers it.
            double worst = 0;
            Index unconverged = 0;
            for (Index i = 0; i < got.modes.rows(); ++i) {
                if (!got.converged[std::size_t(i)] || !want.converged[std::size_t(i)]) {
                    ++unconverged;
                    continue;
                }
                for (Index d = 0; d < got.modes.cols(); ++d)
                    worst = std::max(worst, std::abs(double(got.modes(i, d)) - double(want.modes(i, d))));
            }
            CHECK(unconverged <= got.modes.rows() / 20);
            CHECK(worst <= 1.5 * 4.0 * (o.tolerance + conf::step_tolerance(20.0)));
        }
}

namespace {

/// Two blobs of n/2 points each in k dimensions with per-point H_i = σ² I: σ = 1 around the origin
/// (even rows) and σ = σ_w around (8σ_w, …, 8σ_w) (odd rows). The log-weights c_i = log|H_i|^-1/2 − max
/// of the wide blob's points are −k ln σ_w, far below float32's range when k log2 σ_w ≫ 126. The blobs
/// are apart and n/2 is a multiple of 512, so the GPU backends' point tiles (k-d order, ≤ 512 points)
/// never mix them: the tile-relative expanded exponent then keeps float32 accuracy in both.
PreparedData weight_range_blobs(std::mt19937_64& rng, Index n, int k, double sigma_wide)
{
    std::normal_distribution<double> noise(0.0, 1.0);
    PreparedData D;
    D.model = KernelModel::PerPoint;
    D.points.resize(n, k);
    D.precision.resize(n, k);
    for (Index i = 0; i < n; ++i) {
        const bool wide = i % 2 == 1;
        const double s = wide ? sigma_wide : 1.0;
        for (int d = 0; d < k; ++d) {
            D.points(i, d) = double(float((wide ? 8.0 * s : 0.0) + s * noise(rng)));
            D.precision(i, d) = 1.0 / (s * s);
        }
    }
    D.finalize();
    return D;
}

/// Largest relative error of accumulate()'s sums (rows [S0 (k) | S1 (k)]) against the oracle's, as
/// test_accumulate.cpp measures it: S0_d against itself, S1_d = Σ e w x_d against S0_d · R (R: the
/// largest |coordinate| of the points that carry the weight), since S1's terms may cancel.
double sums_rel_error(const MatrixD& got, const MatrixD& want, int k, double R)
{
    double worst = 0;
    for (Index q = 0; q < want.rows(); ++q)
        for (int c = 0; c < 2 * k; ++c) {
            const double s0 = want(q, c < k ? c : c - k);
            const double scale = c < k ? s0 : s0 * R;
            worst = std::max(worst, std::abs(got(q, c) - want(q, c)) / std::max(scale, 1e-300));
        }
    return worst;
}

}  // namespace

TEST_CASE("conformance highdim: per-point weights |H_i|^-1/2 spanning far beyond float32's range (sigma 1 and "
          "2^(192/k), k = 8, 24, 64), every pair form, exact and cutoff, steps and accumulate vs the oracle")
{
    // The float32 backends used to return NoSupport for every mode of the wide blob (each of its
    // weights underflows relative to the global maximum, 2^-192 below it); they now shift each mode's
    // exponents by its own maximum (docs/bandwidth-selection.md, "Why blobs-128d fails"), and have no
    // support exactly where float64 has none.
    auto rng = make_rng("conf-highdim-weight-range");
    MSTEST_SEED_INFO();
    const bool truncates = make_backend(conf::backend())->supports_cutoff();
    auto forms = pair_forms();
    BackendOptions direct;
    direct.pair_form = PairForm::Direct;
    forms.push_back({"direct", direct});
    // CUDA: chunks of 7 queries and streamed chunks of 300 points (the max pass and the step each visit
    // every chunk); the exact kernel only (the range kernels need every point resident)
    std::set<std::string> exact_only;
    if (conf::backend() == "cuda")
        for (PairForm f : {PairForm::Direct, PairForm::Gemm}) {
            BackendOptions chunks;
            chunks.pair_form = f;
            chunks.cuda.max_queries = 7;
            chunks.cuda.max_points = 300;
            const std::string name =
                std::string(f == PairForm::Gemm ? "gemm" : "direct") + ", chunks of 7 queries, 300 points";
            forms.push_back({name, chunks});
            exact_only.insert(name);
        }
    for (int k : {8, 24, 64}) {
        const double sigma_wide = std::exp2(192.0 / k);
        PreparedData D = weight_range_blobs(rng, 1024, k, sigma_wide);
        REQUIRE(D.log_weight.minCoeff() < -120.0);
        // Queries of each blob apart (a GEMM block of modes from both blobs would centre between
        // them): 16 data points of the blob, jittered by 0.05 σ per dimension.
        std::normal_distribution<double> jitter(0.0, 0.05);
        MatrixD Q[2];
        for (int b = 0; b < 2; ++b) {
            Q[b].resize(16, k);
            const double s = b ? sigma_wide : 1.0;
            for (Index q = 0; q < Q[b].rows(); ++q)
                for (int d = 0; d < k; ++d) Q[b](q, d) = double(float(D.points(q * 62 + b, d) + s * jitter(rng)));
        }
        MatrixD both(32, k);
        both << Q[0], Q[1];
        for (bool cut : {false, true}) {
            if (cut && !truncates) continue;
            D.cutoff2 = cut ? clear_cutoff2(D, both, 2.0 * k) : std::numeric_limits<double>::infinity();
            auto oracle = make_backend("serial");
            auto ob = oracle->bind(share(D), Topology{});
            MatrixD want[2], want_sums[2];
            for (int b = 0; b < 2; ++b) {
                StepReport report;
                want[b] = conf::step(*ob, Q[b], &report);
                for (const ModeStatus s : report.status) REQUIRE(s != ModeStatus::NoSupport);
                want_sums[b] = MatrixD::Zero(Q[b].rows(), 2 * k);
                ob->accumulate(Q[b].data(), Q[b].rows(), want_sums[b].data());
            }
            for (const auto& [form, bo] : forms) {
                if (cut && exact_only.count(form)) continue;
                const std::unique_ptr<Backend> be = backend_for(form, bo, D);
                if (!be) continue;
                auto ts = conf::topologies(*be, D);
                if (ts.size() > 3) ts.resize(3);
                for (const Topology& t : ts) {
                    auto binding = be->bind(share(D), t);
                    for (int b = 0; b < 2; ++b) {
                        const double s = b ? sigma_wide : 1.0;
                        INFO("k = " << k << ", " << std::string(b ? "wide" : "narrow") << " blob (sigma " << s
                                    << "), cutoff2 = " << D.cutoff2 << ", pair_form " << form << ", topology "
                                    << t.to_string());
                        StepReport report;
                        const MatrixD got = conf::step(*binding, Q[b], &report);
                        Index no_support = 0;
                        for (const ModeStatus st : report.status) no_support += st == ModeStatus::NoSupport;
                        CHECK(no_support == 0);
                        // 1.5 × the conformance tolerance, in the blob's own bandwidths (|coordinates| ≲ 12 σ)
                        CHECK(max_abs_diff(got, want[b]) <= s * 1.5 * conf::step_tolerance(12.0));
                        // Binding::accumulate: absolute float64 sums (any shift undone), as the oracle's. Unlike
                        // the step's ratio they carry the float32 error of each log2 weight, L c_i − L/2 D²,
                        // whose terms reach |L c_i| ≈ 192 and (GEMM) L/2 Σ w (q'² + x'²) ≈ 2Lk: 1.02e-4 at
                        // k = 64 on an H200 (cuda, TF32 GEMM, cutoff); test_accumulate.cpp's 1e-4 is for k = 3.
                        MatrixD sums = MatrixD::Zero(Q[b].rows(), binding->sum_width());
                        binding->accumulate(Q[b].data(), Q[b].rows(), sums.data());
                        CHECK(sums_rel_error(sums, want_sums[b], k, 12.0 * s) <= 3e-4);
                    }
                }
            }
        }
    }
}
