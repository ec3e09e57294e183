// The openmp backend's calibration (calibration_openmp.hpp): one step of every candidate form
// (direct SIMD kernels, GEMM form with Eigen products, GEMM form with AMX products where AMX runs)
// on the same synthetic blobs, the fastest of three interleaved repeats each, ~0.1-0.3 s per k bucket.
// Timed on one thread by that thread's CPU clock: the forms share modes among threads alike (blocks
// of modes per thread), so the crossover is a property of one core, and a loaded machine's
// scheduling (a parallel region's barrier waits a time slice per busy core) must not decide it.
#include "backends/openmp/calibration_openmp.hpp"

#include "backends/factory.hpp"

#include <meanshift/backend.hpp>

#include <algorithm>
#include <ctime>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

namespace meanshift::openmp_detail {
namespace {

/// Pairs of one timed step: ~1e8 / k, at least 128 x 8192 (5-100 ms of either form on one Zen 3 core),
/// enough for the timer and the block scheduling, short enough for three repeats of three forms.
constexpr double kPairsTimesK = 1e8;
/// The GEMM forms are taken only where they beat the direct kernels by more than this factor in the
/// calibration: its one block per step does not see the GEMM form's per-step costs in a run (the
/// partition of the modes among 16 pivots, its parallel regions). Measured on the 2-core AMD EPYC,
/// 2026-11-27: at k = 64 the calibration had GEMM 1.13x direct, embeddings runs (n = 8,000) direct
/// 1.12-1.2x GEMM (the n = 20,000 step: 1.17x); at k = 384-1,024 GEMM 1.4-1.5x in the
/// calibration and 1.7x in the runs.
constexpr double kGemmMargin = 1.3;

/// n points of 8 Gaussian blobs, deterministic, scaled as data whose kernel sees neighbours at any
/// k: centres ±4/√k per coordinate (4-8 bandwidths apart), σ = 1.5/√k per coordinate (a blob's points
/// ~2 bandwidths apart), so the weights neither all underflow nor all equal 1.
std::shared_ptr<const PreparedData> synthetic(Index n, int k, bool per_point)
{
    PreparedData D;
    D.model = per_point ? KernelModel::PerPoint : KernelModel::Shared;
    D.points.resize(n, k);
    std::uint64_t s = 0x9E3779B97F4A7C15ull;
    auto uniform = [&] {  // splitmix64 -> (0, 1)
        s += 0x9E3779B97F4A7C15ull;
        std::uint64_t z = s;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return (static_cast<double>((z ^ (z >> 31)) >> 11) + 0.5) * 0x1p-53;
    };
    for (Index i = 0; i < n; ++i) {
        const int blob = static_cast<int>(i % 8);
        for (int d = 0; d < k; ++d) {
            const double g = std::sqrt(-2 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
            D.points(i, d) = (((blob >> (d % 3)) & 1 ? 4.0 : -4.0) + 1.5 * g) / std::sqrt(static_cast<double>(k));
        }
    }
    if (per_point) {
        D.precision.resize(n, k);
        for (Index i = 0; i < n; ++i)
            for (int d = 0; d < k; ++d) D.precision(i, d) = 0.5 + 1.5 * uniform();
    }
    D.finalize();
    return std::make_shared<const PreparedData>(std::move(D));
}

struct Candidate {
    const char* form;
    PairForm pair_form;
    std::string isa;
    std::unique_ptr<Backend> backend;
    std::unique_ptr<Binding> binding;
    double best = HUGE_VAL;
};

/// CPU seconds of the calling thread.
double thread_seconds()
{
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::vector<CalibrationTiming> measure(const BackendOptions& base, bool per_point, int k, bool amx)
{
    // One full block of the GEMM form (128 modes), as the runs it stands for have: more modes are
    // partitioned among 16 pivots first (256 modes gave blocks of 16-32, at half its speed), and that
    // partition, O(modes x 16 x k) per step, is only negligible against a step over many points.
    const Index m = 128;
    // At least 8,192 points: the direct kernels stream them from cache per block of 16 modes, and at
    // n = 1,525 (k = 512) they fit in L2 and made direct look 1.2x faster than in runs.
    const Index n = std::clamp<Index>(static_cast<Index>(kPairsTimesK / k / static_cast<double>(m)), 8192, 1 << 16);
    const auto data = synthetic(n, k, per_point);
    // The Eigen unit: where AMX is allowed, "avx512" names the same kernels without it.
    const std::string eigen_isa = amx ? "avx512" : base.openmp.isa;
    std::vector<Candidate> c;
    c.push_back({"direct", PairForm::Direct, base.openmp.isa, nullptr, nullptr});
    c.push_back({"gemm", PairForm::Gemm, eigen_isa, nullptr, nullptr});
    if (amx) c.push_back({"gemm-amx", PairForm::Gemm, "amx", nullptr, nullptr});

    std::vector<double> in(static_cast<std::size_t>(m) * static_cast<std::size_t>(k)), out(in.size());
    for (Index q = 0; q < m; ++q)
        for (int d = 0; d < k; ++d) in[static_cast<std::size_t>(q * k + d)] = data->points(q % n, d);
    for (Candidate& x : c) {
        BackendOptions o = base;
        o.calibration = Calibration::Off;
        o.pair_form = x.pair_form;
        o.openmp.isa = x.isa;
        o.threads = 1;  // the step runs on this thread (a team of one)
        x.backend = detail::openmp_factory().create(o);
        x.binding = x.backend->bind(data, Topology{});
        x.binding->step_once(in.data(), out.data(), m);  // warm-up: layouts, scratch, page faults
    }
    for (int round = 0; round < 3; ++round)  // interleaved, so a burst of load hits every form alike
        for (Candidate& x : c) {
            const double t0 = thread_seconds();
            x.binding->step_once(in.data(), out.data(), m);
            x.best = std::min(x.best, thread_seconds() - t0);
        }
    std::vector<CalibrationTiming> timings;
    for (const Candidate& x : c) timings.push_back({x.form, x.best});
    return timings;
}

}  // namespace

AutoForm calibrated_auto_form(const BackendOptions& options, const std::string& isa_label, int threads, bool per_point,
                              int k, bool gemm_default, bool amx, bool may_measure)
{
    AutoForm f;
    f.gemm = gemm_default;
    f.amx = amx;
    CalibrationEntry id;
    id.backend = "openmp";
    id.device = std::to_string(threads) + (threads == 1 ? " thread, " : " threads, ") + isa_label;
    id.model = per_point ? "per-point" : "shared";
    id.k_bucket = calibration_k_bucket(k);
    const int kb = id.k_bucket;
    f.entry = calibrated(options, id, [&] { return measure(options, per_point, kb, amx); }, may_measure, kGemmMargin);
    if (f.entry) {
        f.gemm = f.entry->choice != "direct";
        f.amx = amx && f.entry->choice == "gemm-amx";
    }
    return f;
}

}  // namespace meanshift::openmp_detail
