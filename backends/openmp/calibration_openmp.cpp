// The openmp backend's calibration (calibration_openmp.hpp): one step of every candidate form
// (direct SIMD kernels, GEMM form with Eigen products, GEMM form with AMX products where AMX runs)
// on the same synthetic blobs, the fastest of five interleaved repeats each, ~0.2-0.5 s per k bucket.
// Timed on one thread by that thread's CPU clock: the forms share modes among threads alike (blocks
// of modes per thread), so the crossover is a property of one core, and a loaded machine's
// scheduling (a parallel region's barrier waits a time slice per busy core) must not decide it.
#include "backends/openmp/calibration_openmp.hpp"

#include "backends/factory.hpp"
#include "backends/openmp/gemm_step.hpp"

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
/// enough for the timer and the block scheduling, short enough for five repeats of three forms.
constexpr double kPairsTimesK = 1e8;
/// A later form (direct, then Eigen's GEMM, then AMX's GEMM) is taken only where it beats the one
/// chosen so far by more than this factor in the calibration: its one block per step does not see a
/// run's per-step costs (the partition of the modes among 16 pivots, parallel regions, convergence
/// leaving fewer modes). 2-core AMD EPYC (Zen 3, AVX2), k = 64: calibration GEMM 1.13-1.20x direct,
/// embeddings runs (n = 8,000) direct 1.12-1.2x GEMM, bench --exact n = 20,000 a tie in wall time.
/// 1.25 (was 1.3) with each GEMM unit timed at its own block size (AMX's 256 modes, was 128 for all)
/// and the fastest of five repeats: on the Xeon with AMX (2 threads via taskset, 2026-11-28) the
/// calibration then had AMX 1.41x direct at k = 64 (1.21x at 128 modes, under 1.3: direct kept) and
/// bench --exact n = 20,000 ran AMX's default at 7.5-8.0e8 pairs/s against 4.7-5.4e8 direct.
constexpr double kGemmMargin = 1.25;
/// Timed repeats per form (interleaved; the fastest counts).
constexpr int kRepeats = 5;

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
    Index modes;  ///< one full block of the form's unit
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
    // One full block of each GEMM unit (128 modes; AMX's 256), as the runs it stands for have: more
    // modes are partitioned among 16 pivots first (256 modes gave blocks of 16-32, at half its speed),
    // and that partition, O(modes x 16 x k) per step, is only negligible against a step over many
    // points. The forms are compared per mode.
    const Index m = 128;
    const GemmTable* amx_unit = amx ? gemm_table_amx() : nullptr;
    const Index m_amx = amx_unit ? amx_unit->modes_per_block : m;
    // At least 8,192 points: the direct kernels stream them from cache per block of 16 modes, and at
    // n = 1,525 (k = 512) they fit in L2 and made direct look 1.2x faster than in runs.
    const Index n = std::clamp<Index>(static_cast<Index>(kPairsTimesK / k / static_cast<double>(m)), 8192, 1 << 16);
    const auto data = synthetic(n, k, per_point);
    // The Eigen unit: where AMX is allowed, "avx512" names the same kernels without it.
    const std::string eigen_isa = amx ? "avx512" : base.openmp.isa;
    std::vector<Candidate> c;
    c.push_back({"direct", PairForm::Direct, base.openmp.isa, m, nullptr, nullptr});
    c.push_back({"gemm", PairForm::Gemm, eigen_isa, m, nullptr, nullptr});
    if (amx) c.push_back({"gemm-amx", PairForm::Gemm, "amx", m_amx, nullptr, nullptr});

    const Index mmax = std::max(m, m_amx);
    std::vector<double> in(static_cast<std::size_t>(mmax) * static_cast<std::size_t>(k)), out(in.size());
    for (Index q = 0; q < mmax; ++q)
        for (int d = 0; d < k; ++d) in[static_cast<std::size_t>(q * k + d)] = data->points(q % n, d);
    for (Candidate& x : c) {
        BackendOptions o = base;
        o.calibration = Calibration::Off;
        o.pair_form = x.pair_form;
        o.openmp.isa = x.isa;
        o.threads = 1;  // the step runs on this thread (a team of one)
        x.backend = detail::openmp_factory().create(o);
        x.binding = x.backend->bind(data, Topology{});
        x.binding->step_once(in.data(), out.data(), x.modes);  // warm-up: layouts, scratch, page faults
    }
    for (int round = 0; round < kRepeats; ++round)  // interleaved, so a burst of load hits every form alike
        for (Candidate& x : c) {
            const double t0 = thread_seconds();
            x.binding->step_once(in.data(), out.data(), x.modes);
            x.best = std::min(x.best, thread_seconds() - t0);
        }
    // Seconds of a 128-mode step at each form's per-mode rate.
    std::vector<CalibrationTiming> timings;
    for (const Candidate& x : c)
        timings.push_back({x.form, x.best * static_cast<double>(m) / static_cast<double>(x.modes)});
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
    f.entry = calibrated(
        options, id, [&] { return measure(options, per_point, kb, amx); }, may_measure, kGemmMargin);
    if (f.entry) {
        f.gemm = f.entry->choice != "direct";
        f.amx = amx && f.entry->choice == "gemm-amx";
    }
    return f;
}

}  // namespace meanshift::openmp_detail
