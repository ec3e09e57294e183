// Alg. 4 (mean shift clustering): the iteration driver shared by every backend. It owns
// per-mode convergence (Alg. 5 distance vs t_d, m_it), the active set (converged modes stop
// costing work), and the final groupModes (Alg. 6) on the host.
#include "skeleton/src/core/ascent.hpp"
#include "skeleton/src/core/blurring.hpp"
#include "skeleton/src/core/pending_backend.hpp"
#include "skeleton/src/core/prepare.hpp"
#include "skeleton/src/core/parallel.hpp"
#include "skeleton/src/approx/seeding.hpp"
#include "skeleton/src/core/sklearn_grouping.hpp"
#include "skeleton/src/approx/spatial_order.hpp"

#include <meanshift/meanshift.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

namespace meanshift {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

void validate_options(const Options& o)
{
    if (o.max_iterations < 1)
        throw InvalidArgument("max_iterations (m_it) must be >= 1, got " + std::to_string(o.max_iterations));
    if (!std::isfinite(o.tolerance) || o.tolerance < 0)
        throw InvalidArgument("tolerance (t_d) must be finite and >= 0, got " + std::to_string(o.tolerance));
    if (o.fixed_iterations && *o.fixed_iterations < 1)
        throw InvalidArgument("fixed_iterations must be >= 1, got " + std::to_string(*o.fixed_iterations));
    if (!std::isfinite(o.merge_eps) || o.merge_eps < 0)
        throw InvalidArgument("merge_eps (epsilon of groupModes) must be finite and >= 0, got " +
                              std::to_string(o.merge_eps));
    if (!(o.cutoff > 0))  // also NaN
        throw InvalidArgument("cutoff (Mahalanobis radius of the truncated kernel) must be > 0 (inf = exact), got " +
                              std::to_string(o.cutoff));
    if (!(o.bin_size > 0) || !std::isfinite(o.bin_size))
        throw InvalidArgument("bin_size must be finite and > 0, got " + std::to_string(o.bin_size));
    if (std::isnan(o.data_bin_size))
        throw InvalidArgument("data_bin_size must be 0 (automatic), > 0 (bandwidths) or < 0 / inf (never), got NaN");
    if (o.min_bin_count < 1)
        throw InvalidArgument("min_bin_count must be >= 1, got " + std::to_string(o.min_bin_count));
}

/// Pair evaluations × k per iteration up to which the default options run the exact kernel from
/// every point (or explicit seed): n_seeds · n · k ≤ 2^24 multiply-adds, tens of milliseconds per
/// iteration on one core even at the serial oracle's rate (~1e8 pairs/s at small k), while the
/// truncated kernel and bin seeding save at most that and moved centres by up to 0.16 bandwidths
/// on sets of 20-300 points. Equals n ≤ 2,365 at k = 3, n ≤ 1,024 at k = 16, n ≤ 209 at k = 384.
constexpr double kExactBudget = double(1 << 24);

/// Whether `options` are the approximating defaults (cutoff, Auto search, bin seeding, no binned
/// data) on a problem small enough that the exact answer costs little: then the run is
/// Options::exact's. Options set away from those defaults (a cutoff, a search, all-point seeding,
/// a bin size, binned data) are the caller's choice and kept; image lattices keep their own path.
bool exact_is_cheap(const Options& o, Index n, int k, Index seeds)
{
    const bool defaults = !o.exact && o.cutoff == kDefaultCutoff && o.search == NeighbourSearch::Auto &&
                          o.seeding == Seeding::Bins && o.bin_size == kDefaultBinSize && o.min_bin_count == 1 &&
                          !o.bin_data && o.data_bin_size == 0 && !o.lattice;
    return defaults && n > 0 && k > 0 && double(seeds > 0 ? seeds : n) * double(n) * double(k) <= kExactBudget;
}

/// Options::kernel = VonMisesFisher takes unit vectors and one isotropic bandwidth h (κ = 1/h²):
/// throws InvalidArgument naming the option otherwise (kernel_profile.hpp).
void check_vmf_input(const Options& o, const float* data, Index n, int k)
{
    if (o.kernel != KernelProfile::VonMisesFisher) return;
    const Bandwidth& bw = o.bandwidth;
    const std::vector<double>& h = bw.parameters();
    const bool isotropic = bw.kind() == BandwidthKind::Isotropic ||
                           (bw.kind() == BandwidthKind::Diagonal && !h.empty() &&
                            std::all_of(h.begin(), h.end(), [&](double v) { return v == h.front(); }));
    if (!isotropic)
        throw InvalidArgument("kernel 'vmf' (Options::kernel) needs an isotropic bandwidth (one h, kappa = 1/h^2); "
                              "per-point, diagonal and exponential bandwidths are not von Mises-Fisher kernels");
    for (Index i = 0; i < n; ++i) {
        double s = 0;
        for (int d = 0; d < k; ++d) s += double(data[i * k + d]) * double(data[i * k + d]);
        const double norm = std::sqrt(s);
        if (!(std::abs(norm - 1.0) <= 1e-3)) {
            std::ostringstream msg;
            msg << "kernel 'vmf' (Options::kernel) takes unit vectors (|x| = 1 within 1e-3): row " << i << " has norm "
                << norm;
            throw InvalidArgument(msg.str());
        }
    }
}

/// PreparedData's profile fields for Options::kernel: the profile and, for VonMisesFisher, the
/// unit sphere of the caller's coordinates in prepared units (prepared = (x − centre) · scale, so
/// its centre is −centre · scale and its radius scale = 1/h).
void set_profile(detail::Prepared& prep, const Options& o)
{
    prep.data.profile = o.kernel;
    prep.data.sphere_origin = VectorD();
    prep.data.sphere_radius = 0;
    if (o.kernel == KernelProfile::VonMisesFisher) {
        prep.data.sphere_origin = -(prep.centre.array() * prep.scale.array()).matrix();
        prep.data.sphere_radius = prep.scale[0];
    }
}

/// What one cluster() call passes from stage to stage.
struct Run {
    explicit Run(const Options& o) : options(o) {}
    const Options& options;  ///< the effective options (exact on cheap problems)
    Result r;
    detail::Prepared prep;
    detail::SeedPlan plan;
    /// Options::data_bin_size: the caller's points (prepared units, caller order) for the boundary
    /// refinement's fine bins; empty otherwise.
    MatrixD caller_points;
    MatrixD W0;  ///< per seed, its own metric (caller order) when plan.own_metric
    bool truncate = false;  ///< the truncated kernel runs (cutoff2 finite)
    std::shared_ptr<const PreparedData> D;
    detail::SeedAscents ascents;  ///< per seed, caller order
    Grouping grouping;
};

/// Stage "bandwidths": the data whitened by the bandwidths (prepared units) and the profile.
void bandwidths_stage(Run& run, const float* data, Index n, int k, const float* weights)
{
    run.prep = detail::prepare(data, n, k, run.options.bandwidth, weights);
    set_profile(run.prep, run.options);
}

/// Stage "bin": the seeds (all points, bins, binned data or explicit) and, per caller row, the seed
/// labelling it; Options::data_bin_size bins the data the ascents run on.
void bin_stage(Run& run, Index n, int k, const float* weights, const float* seeds, Index m)
{
    const auto t_seeding = Clock::now();
    run.plan = detail::plan_seeds(run.prep, n, k, run.options, weights, seeds, m);
    run.caller_points = detail::bin_data_for_ascent(run.prep, run.plan, run.options, weights);
    run.r.seeding = run.plan.description;
    run.r.seed_count = run.plan.seeds_are_points ? run.prep.data.n() : run.plan.seeds.rows();
    run.r.timing.seconds_seeding = seconds_since(t_seeding);
}

/// Stage "search": truncation and neighbour search (rows sorted by cell: PreparedData::original).
/// A compact profile runs with its support as the cutoff whatever Options::cutoff and exact say:
/// pairs beyond it weigh 0, so its truncation and the search's pruning are exact.
void search_stage(Run& run, detail::PendingBackend& pending, bool cheap)
{
    const Options& options = run.options;
    PreparedData& data = run.prep.data;
    Result& r = run.r;
    const bool exact = options.exact;
    const bool compact = is_compact(options.kernel);
    run.truncate = (compact || (!exact && std::isfinite(options.cutoff))) && pending.supports_cutoff();
    const double cutoff = compact ? profile_support(options.kernel) : options.cutoff;
    data.cutoff2 = run.truncate ? cutoff * cutoff : std::numeric_limits<double>::infinity();
    r.cutoff = run.truncate || compact ? cutoff : std::numeric_limits<double>::infinity();
    const auto t_search = Clock::now();
    const PixelLattice* lattice = options.lattice ? &*options.lattice : nullptr;
    if (run.truncate && compact) {
        detail::build_search(data, options.search, r.search, lattice);
        r.search += std::string("; the ") + profile_name(options.kernel) + " profile's support (radius 1 bandwidth)";
    } else if (!exact && std::isfinite(options.cutoff) && !pending.supports_cutoff()) {
        data.grid.reset();
        data.original.clear();
        r.search = "exact (backend has no truncated kernel yet)";
    } else {
        detail::build_search(data, exact ? NeighbourSearch::BruteForce : options.search, r.search, lattice);
        if (run.truncate && options.search == NeighbourSearch::Auto && !data.grid && !data.tree) {
            // No search structure prunes here (high k, or a cutoff that spans the data): the truncated
            // kernel would visit every pair as the exact one does, and only lose accuracy; the exact
            // kernel also opens the GEMM forms at high k ("approximate only where it pays").
            data.cutoff2 = std::numeric_limits<double>::infinity();
            r.cutoff = std::numeric_limits<double>::infinity();
            r.search += "; nothing to prune, so the exact kernel runs";
        }
    }
    if (cheap) r.search += "; exact kernel from every point (seeds x points x k within the exact budget)";
    r.timing.seconds_search = seconds_since(t_search);
}

/// Stage "seeds": the seeds' start positions and own metrics in the caller's order (the search may
/// have re-sorted the prepared rows); then the prepared data are frozen and shared.
void seeds_stage(Run& run)
{
    detail::Prepared& prep = run.prep;
    const Index m = run.r.seed_count;
    const Index k = prep.data.points.cols();
    if (run.plan.own_metric) {
        run.W0 = prep.data.precision;
        if (!prep.data.original.empty()) {
            // Back to the caller's row order (the seeds are the data in that order).
            for (Index q = 0; q < m; ++q) run.W0.row(prep.data.original[std::size_t(q)]) = prep.data.precision.row(q);
        }
    }
    if (run.plan.seeds_are_points && !prep.data.original.empty()) {
        // The search re-sorted the rows: the seeds are the points in the caller's order.
        run.plan.seeds.resize(m, k);
        for (Index q = 0; q < m; ++q) run.plan.seeds.row(prep.data.original[std::size_t(q)]) = prep.data.points.row(q);
        run.plan.seeds_are_points = false;
    }
    run.D = std::make_shared<const PreparedData>(std::move(prep.data));
}

/// Stage "bind": the backend (created on a thread while the host prepared, pending_backend.hpp:
/// this stage includes what is left of that wait), its topology and the data bound to it.
void bind_stage(Run& run, detail::PendingBackend& pending, std::unique_ptr<Binding>& binding)
{
    const auto t_bind = Clock::now();
    Backend& backend = pending.get();
    if (run.truncate && !backend.supports_cutoff())
        throw Error("backend '" + backend.name() + "' has no truncated kernel, which its creation promised");
    if (!backend.supports_profile(run.options.kernel))  // PendingBackend chose by profile: a defect
        throw BackendUnavailable("backend '" + backend.name() + "' has no kernel profile '" +
                                 profile_name(run.options.kernel) + "'");
    run.r.backend = backend.name();
    run.r.topology = backend.resolve_topology(run.options.topology, *run.D);
    binding.reset();  // release the previous run's device buffers first
    binding = backend.bind(run.D, run.r.topology);
    run.r.timing.seconds_bind = seconds_since(t_bind);
}

/// The order in which the modes go to the backend. Morton order: a PPU's block of consecutive
/// modes is then a compact region, so its PUs meet the same points (GPU kernels skip or share
/// work per block). On a pixel lattice the Morton curve of the seeds' pixels serves as well, in
/// O(m) (a 5-D morton_order of a photo's 273,280 pixels took 35-47 ms of its 0.08 s of
/// preparation). Empty: any order (the seeds go as they are).
std::vector<Index> mode_order(const Run& run, const MatrixD& Y0)
{
    const Options& options = run.options;
    const PreparedData& D = *run.D;
    const Index m = Y0.rows();
    const bool lattice = options.lattice && D.grid;
    // The lattice's own grid (not NeighbourSearch::Grid's) with the pixels as seeds: the order is
    // the image's Morton order, no keys needed.
    const bool own_pixels = lattice && options.search != NeighbourSearch::Grid && run.plan.seeds_are_points;
    // The exact kernel without a search structure visits every pair whatever the order: the seeds
    // go to the backend as they are, without the order's keys and an m x k copy (100,000 x 384
    // seeds: 0.3 GB of first-touch pages).
    if (!std::isfinite(D.cutoff2) && !D.grid && !D.tree) return {};
    if (own_pixels) return detail::lattice_order(options.lattice->height, options.lattice->width);
    // Per-point H_i on a grid: the grid's cells too (the range kernels' boxes span the grid dims
    // only; a 3-D Morton order scaled per dim also cuts a forest's height).
    if (lattice || (D.grid && D.model == KernelModel::PerPoint))
        return detail::cell_order(*D.grid, Y0.data(), m, Y0.cols());
    return detail::morton_order(Y0);
}

/// Uploads the seeds to the binding in `order` (empty: as they are), with their own metrics.
void set_modes_in_order(Run& run, Binding& binding, const MatrixD& Y0, const std::vector<Index>& order,
                        Clock::time_point t_order)
{
    const Index m = Y0.rows(), k = Y0.cols();
    const bool own_metric = run.plan.own_metric;
    if (order.empty()) {
        run.r.timing.seconds_order = seconds_since(t_order);
        const auto t_set = Clock::now();
        binding.set_modes(Y0.data(), m, own_metric ? run.W0.data() : nullptr);
        run.r.timing.seconds_bind += seconds_since(t_set);
        return;
    }
    MatrixD Ys(m, k), Ws;
    MS_PARALLEL_FOR(m * k)
    for (Index j = 0; j < m; ++j) Ys.row(j) = Y0.row(order[static_cast<std::size_t>(j)]);
    if (own_metric) {
        Ws.resize(m, k);
        MS_PARALLEL_FOR(m * k)
        for (Index j = 0; j < m; ++j) Ws.row(j) = run.W0.row(order[static_cast<std::size_t>(j)]);
    }
    const auto t_set = Clock::now();
    run.r.timing.seconds_order = seconds_since(t_order);
    binding.set_modes(Ys.data(), m, own_metric ? Ws.data() : nullptr);
    run.r.timing.seconds_bind += seconds_since(t_set);
}

/// Stage "ascend": Alg. 4's loop (ascent.hpp) from every seed, in the backend's mode order; the
/// modes and their outcomes come back in the seeds' order.
void ascend_stage(Run& run, Binding& binding, Clock::time_point t_start)
{
    const Options& options = run.options;
    const MatrixD& Y0 = run.plan.seeds_are_points ? run.D->points : run.plan.seeds;
    const Index m = Y0.rows(), k = Y0.cols();
    const auto t_order = Clock::now();
    const std::vector<Index> order = mode_order(run, Y0);
    set_modes_in_order(run, binding, Y0, order, t_order);
    run.r.timing.seconds_prepare = seconds_since(t_start);

    // Modes still active after m_it iterations are slow, not oscillating: Gaussian mean shift with
    // the |H_i|^-1/2 weights of eq. 2 is an EM step, a monotone ascent of the estimate, and near a
    // flat mode (inside a hollow, crown-shaped shell of points; a plateau) it contracts only by
    // ρ ≈ 0.95 per step (measured on the forest cloud: 6 of 10^5 and 7,302 of 10^6 points after 100 +
    // 100 iterations, shifts ~5e-3 bandwidths falling ~4 % per step; at 10^5, 300 iterations leave
    // none, with the same clusters and ARI). Such a mode is within shift·ρ/(1−ρ) ≈ 20 × its last
    // shift of its fixed point, far inside merge_eps; Result::converged reports it as not converged.
    const detail::AscentLimits limits = detail::ascent_limits(options);
    // Per mode, in the backend's order: iterations made, and the status of its last step.
    detail::ModeLedger ledger(static_cast<std::size_t>(m));
    detail::AscentHooks hooks;
    hooks.active = [&] { return binding.active_count(); };
    hooks.step = detail::binding_step(binding, limits, run.D->n());
    hooks.record = [&](Index q, ModeStatus s) { ledger.record(static_cast<std::size_t>(q), s); };
    if (options.progress)
        hooks.after = [&](int it) {
            if (!options.progress(it, binding.active_count(), m)) throw Error("cancelled by the progress callback");
            return true;
        };
    const auto t_iter = Clock::now();
    const detail::AscentTotals totals = detail::ascend(limits, hooks);
    run.r.timing.iterations = totals.iterations;
    run.r.timing.pair_interactions += totals.pairs;
    run.r.timing.seconds_kernels += totals.kernel_seconds;
    MatrixD Ys(m, k);
    binding.read_modes(Ys.data());
    run.r.timing.seconds_iterate = seconds_since(t_iter);

    // Back to the seeds' order.
    detail::SeedAscents& a = run.ascents;
    a.modes.resize(m, k);
    a.iterations.assign(static_cast<std::size_t>(m), 0);
    a.converged.assign(static_cast<std::size_t>(m), false);
    a.no_support.assign(static_cast<std::size_t>(m), false);
    auto seed_of = [&](Index j) { return order.empty() ? j : order[static_cast<std::size_t>(j)]; };
    MS_PARALLEL_FOR(m * k)
    for (Index j = 0; j < m; ++j) a.modes.row(seed_of(j)) = Ys.row(j);
    for (Index j = 0; j < m; ++j) {  // serial: std::vector<bool> packs bits
        const std::size_t sj = static_cast<std::size_t>(j), q = static_cast<std::size_t>(seed_of(j));
        a.iterations[q] = ledger.iterations[sj];
        a.no_support[q] = ledger.no_support(sj);
        a.converged[q] = ledger.converged(sj, limits.fixed);
    }
}

/// Stage "group": groupModes (Alg. 6) of the seeds' modes; GroupingMethod::None: modes only
/// (labels, centres and cluster sizes stay empty); ScikitLearn ranks and labels over the caller's
/// data (labels of the points).
void group_stage(Run& run, const float* data, Index n)
{
    const Options& options = run.options;
    const Index k = run.ascents.modes.cols();
    const auto t_group = Clock::now();
    if (options.grouping == GroupingMethod::ScikitLearn)
        run.grouping =
            detail::group_like_sklearn(run.ascents.modes, run.ascents.no_support, run.prep, data, n, options.merge_eps);
    else if (options.grouping != GroupingMethod::None)
        run.grouping = group_modes(run.ascents.modes, options.merge_eps, options.grouping);
    else
        run.grouping = Grouping{{}, MatrixD(0, k), {}};
    run.r.timing.seconds_grouping = seconds_since(t_group);
}

/// Stage "label": the result per seed (all points, explicit seeds, scikit-learn grouping) or per
/// caller row through its seed, after bin seeding's boundary refinement.
void label_stage(Run& run, Binding& binding)
{
    Result& r = run.r;
    detail::SeedAscents& a = run.ascents;
    const auto t_label = Clock::now();
    if (run.plan.point_seed.empty() || run.options.grouping == GroupingMethod::ScikitLearn) {
        r.labels = std::move(run.grouping.labels);
        r.cluster_sizes = std::move(run.grouping.sizes);
        r.centres = detail::from_prepared(run.prep, run.grouping.centres);
        r.modes = detail::from_prepared(run.prep, a.modes);
        r.iterations = std::move(a.iterations);
        r.converged = std::move(a.converged);
        r.no_support = std::move(a.no_support);
    } else {
        const MatrixD* caller_points = run.caller_points.rows() ? &run.caller_points : nullptr;
        const Grouping gr = detail::refine_boundaries(run.plan, *run.D, caller_points, binding, run.grouping, a,
                                                      run.options, r.timing, r.seeding);
        detail::label_points_by_seed(r, run.prep, gr, a, run.plan.point_seed);
    }
    for (bool none : r.no_support)
        if (none) ++r.modes_without_support;
    r.timing.seconds_label = seconds_since(t_label);
}

/// One cluster() call, Alg. 3-6 as a pipeline: validate → bandwidths → bin → search → seeds →
/// bind → ascend → group → label.
Result run(detail::PendingBackend& pending, std::unique_ptr<Binding>& binding, const float* data, Index n, int k,
           const Options& requested, const float* weights, const float* seeds, Index m)
{
    // Small problems: the default options compute the exact answer (approximate only where it pays).
    std::optional<Options> cheap;
    if (exact_is_cheap(requested, n, k, seeds ? m : 0)) {
        cheap = requested;
        cheap->exact = true;
    }
    const Options& options = cheap ? *cheap : requested;
    const auto t_start = Clock::now();
    // The host passes of this call use the threads the caller gave the backend (0 = all).
    const detail::HostThreads host_threads(options.backend_options.threads);
    validate_options(options);
    if (seeds && m < 1) throw InvalidArgument("seeds: need at least one seed point (m = 0)");
    if (requested.blurring) return detail::run_blurring(pending, binding, data, n, k, requested, weights, seeds);
    // Options::max_memory: the estimate comes before prepare() allocates anything (the caller's
    // options, as estimate_memory() sees them).
    if (n > 0 && k > 0)
        detail::check_memory(n, k, requested, seeds ? m : 0, weights != nullptr);  // else prepare() says why
    check_vmf_input(options, data, n, k);

    Run run(options);
    bandwidths_stage(run, data, n, k, weights);
    run.r.timing.seconds_validate = seconds_since(t_start);
    bin_stage(run, n, k, weights, seeds, m);
    search_stage(run, pending, cheap.has_value());
    seeds_stage(run);
    bind_stage(run, pending, binding);
    ascend_stage(run, *binding, t_start);
    const auto t_group = Clock::now();
    group_stage(run, data, n);
    label_stage(run, *binding);
    run.r.timing.seconds_group = seconds_since(t_group);
    run.r.timing.seconds_total = seconds_since(t_start);
    run.r.timing.peak_memory_bytes = peak_memory_bytes();
    return std::move(run.r);
}

}  // namespace

Result cluster(const float* data, Index n, int k, const Options& options, const float* seeds, Index m)
{
    validate_options(options);
    detail::PendingBackend backend(options.backend, options.backend_options, options.kernel);
    std::unique_ptr<Binding> binding;
    return run(backend, binding, data, n, k, options, nullptr, seeds, m);
}

Result cluster(const float* data, Index n, int k, const Options& options, const float* weights, const float* seeds,
               Index m)
{
    validate_options(options);
    detail::PendingBackend backend(options.backend, options.backend_options, options.kernel);
    std::unique_ptr<Binding> binding;
    return run(backend, binding, data, n, k, options, weights, seeds, m);
}

Result cluster(const Eigen::Ref<const MatrixF>& data, const Options& options, const float* weights,
               const Eigen::Ref<const MatrixF>* seeds)
{
    Clusterer c(options);
    return c.fit(data, weights, seeds);
}

Result cluster(const Eigen::Ref<const MatrixF>& data, const Options& options, const Eigen::Ref<const MatrixF>* seeds)
{
    Clusterer c(options);
    return c.fit(data, seeds);
}

Clusterer::Clusterer(Options options) : options_(std::move(options))
{
    validate_options(options_);
    backend_ = std::make_unique<detail::PendingBackend>(options_.backend, options_.backend_options, options_.kernel);
}
Clusterer::~Clusterer() = default;
Clusterer::Clusterer(Clusterer&&) noexcept = default;
Clusterer& Clusterer::operator=(Clusterer&&) noexcept = default;

Backend& Clusterer::backend()
{
    return backend_->get();
}

Binding& Clusterer::binding()
{
    if (!binding_) throw Error("Clusterer::binding(): no data bound yet (call fit() first)");
    return *binding_;
}

Result Clusterer::fit(const Eigen::Ref<const MatrixF>& data, const Eigen::Ref<const MatrixF>* seeds)
{
    return fit(data, nullptr, seeds);
}

Result Clusterer::fit(const Eigen::Ref<const MatrixF>& data, const float* weights,
                      const Eigen::Ref<const MatrixF>* seeds)
{
    // Eigen::Ref of a row-major matrix may still carry an outer stride: copy to dense then.
    const Index n = data.rows();
    const int k = static_cast<int>(data.cols());
    MatrixF dense_data;
    const float* dp = data.data();
    if (n > 0 && data.outerStride() != k) {
        dense_data = data;
        dp = dense_data.data();
    }
    MatrixF dense_seeds;
    const float* sp = nullptr;
    Index m = 0;
    if (seeds) {
        if (seeds->cols() != data.cols())
            throw InvalidArgument("seeds have " + std::to_string(seeds->cols()) + " columns, data have " +
                                  std::to_string(k));
        m = seeds->rows();
        if (m < 1) throw InvalidArgument("seeds: need at least one seed point (m = 0)");
        dense_seeds = *seeds;
        sp = dense_seeds.data();
    }
    return run(*backend_, binding_, dp, n, k, options_, weights, sp, m);
}

}  // namespace meanshift
