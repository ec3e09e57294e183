// Alg. 4 (mean shift clustering): the iteration driver shared by every backend. It owns
// per-mode convergence (Alg. 5 distance vs t_d, m_it), the active set (converged modes stop
// costing work), and the final groupModes (Alg. 6) on the host.
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
    // Options::max_memory: the estimate comes before prepare() allocates anything.
    if (n > 0 && k > 0)
        detail::check_memory(n, k, requested, seeds ? m : 0, weights != nullptr);  // else prepare() says why
    // (the caller's options, as estimate_memory() sees them)

    Result r;
    const bool exact = options.exact;
    check_vmf_input(options, data, n, k);
    detail::Prepared prep = detail::prepare(data, n, k, options.bandwidth, weights);
    r.timing.seconds_validate = seconds_since(t_start);
    const auto t_seeding = Clock::now();
    // Seeds (all points, bins, binned data or explicit) and, per caller row, the seed labelling it.
    detail::SeedPlan plan = detail::plan_seeds(prep, n, k, options, weights, seeds, m);
    // Options::data_bin_size: the ascents run on the binned data; the caller's points (prepared
    // units, caller order) are kept for the boundary refinement's fine bins.
    const MatrixD caller_points = detail::bin_data_for_ascent(prep, plan, options, weights);
    const bool own_metric = plan.own_metric;
    r.seeding = plan.description;
    m = plan.seeds_are_points ? prep.data.n() : plan.seeds.rows();
    r.seed_count = m;
    r.timing.seconds_seeding = seconds_since(t_seeding);

    set_profile(prep, options);
    // Truncation and neighbour search (rows sorted by cell: PreparedData::original). A compact
    // profile runs with its support as the cutoff whatever Options::cutoff and exact say: pairs
    // beyond it weigh 0, so its truncation and the search's pruning are exact.
    const bool compact = is_compact(options.kernel);
    const bool truncate = (compact || (!exact && std::isfinite(options.cutoff))) && pending.supports_cutoff();
    const double cutoff = compact ? profile_support(options.kernel) : options.cutoff;
    prep.data.cutoff2 = truncate ? cutoff * cutoff : std::numeric_limits<double>::infinity();
    r.cutoff = truncate || compact ? cutoff : std::numeric_limits<double>::infinity();
    const auto t_search = Clock::now();
    if (truncate && compact) {
        detail::build_search(prep.data, options.search, r.search, options.lattice ? &*options.lattice : nullptr);
        r.search += std::string("; the ") + profile_name(options.kernel) + " profile's support (radius 1 bandwidth)";
    } else if (!exact && std::isfinite(options.cutoff) && !pending.supports_cutoff()) {
        prep.data.grid.reset();
        prep.data.original.clear();
        r.search = "exact (backend has no truncated kernel yet)";
    } else {
        detail::build_search(prep.data, exact ? NeighbourSearch::BruteForce : options.search, r.search,
                             options.lattice ? &*options.lattice : nullptr);
        if (truncate && options.search == NeighbourSearch::Auto && !prep.data.grid && !prep.data.tree) {
            // No search structure prunes here (high k, or a cutoff that spans the data): the truncated
            // kernel would visit every pair as the exact one does, and only lose accuracy; the exact
            // kernel also opens the GEMM forms at high k ("approximate only where it pays").
            prep.data.cutoff2 = std::numeric_limits<double>::infinity();
            r.cutoff = std::numeric_limits<double>::infinity();
            r.search += "; nothing to prune, so the exact kernel runs";
        }
    }
    if (cheap) r.search += "; exact kernel from every point (seeds x points x k within the exact budget)";
    r.timing.seconds_search = seconds_since(t_search);
    MatrixD W0;
    if (own_metric) {
        W0 = prep.data.precision;
        if (!prep.data.original.empty()) {
            // Back to the caller's row order (the seeds are the data in that order).
            for (Index q = 0; q < m; ++q) W0.row(prep.data.original[std::size_t(q)]) = prep.data.precision.row(q);
        }
    }
    if (plan.seeds_are_points && !prep.data.original.empty()) {
        // The search re-sorted the rows: the seeds are the points in the caller's order.
        plan.seeds.resize(m, k);
        for (Index q = 0; q < m; ++q) plan.seeds.row(prep.data.original[std::size_t(q)]) = prep.data.points.row(q);
        plan.seeds_are_points = false;
    }
    auto D = std::make_shared<const PreparedData>(std::move(prep.data));
    const MatrixD& Y0 = plan.seeds_are_points ? D->points : plan.seeds;

    // The backend was created on a thread while the host prepared (pending_backend.hpp): the bind
    // stage includes what is left of that wait.
    const auto t_bind = Clock::now();
    Backend& backend = pending.get();
    if (truncate && !backend.supports_cutoff())
        throw Error("backend '" + backend.name() + "' has no truncated kernel, which its creation promised");
    if (!backend.supports_profile(options.kernel))  // PendingBackend chose by profile: a defect
        throw BackendUnavailable("backend '" + backend.name() + "' has no kernel profile '" +
                                 profile_name(options.kernel) + "'");
    r.backend = backend.name();
    r.topology = backend.resolve_topology(options.topology, *D);
    binding.reset();  // release the previous run's device buffers first
    binding = backend.bind(D, r.topology);
    r.timing.seconds_bind = seconds_since(t_bind);
    // The backends get the modes in Morton order: a PPU's block of consecutive modes is then a
    // compact region, so its PUs meet the same points (GPU kernels skip or share work per block).
    // Per-mode results are kept in that order and mapped back to the caller's order at the end.
    // On a pixel lattice the Morton curve of the seeds' pixels serves as well, in O(m) (a 5-D
    // morton_order of a photo's 273,280 pixels took 35-47 ms of its 0.08 s of preparation).
    const auto t_order = Clock::now();
    const bool lattice = options.lattice && D->grid;
    // The lattice's own grid (not NeighbourSearch::Grid's) with the pixels as seeds: the order is
    // the image's Morton order, no keys needed.
    const bool own_pixels = lattice && options.search != NeighbourSearch::Grid && plan.seeds_are_points;
    // The exact kernel without a search structure visits every pair whatever the order: the seeds
    // go to the backend as they are, without the order's keys and an m x k copy (100,000 x 384
    // seeds: 0.3 GB of first-touch pages).
    const bool any_order = !std::isfinite(D->cutoff2) && !D->grid && !D->tree;
    std::vector<Index> order;
    if (any_order) {
        order.resize(static_cast<std::size_t>(m));
        for (Index j = 0; j < m; ++j) order[static_cast<std::size_t>(j)] = j;
    } else {
        order = own_pixels ? detail::lattice_order(options.lattice->height, options.lattice->width)
                // Per-point H_i on a grid: the grid's cells too (the range kernels' boxes span the
                // grid dims only; a 3-D Morton order scaled per dim also cuts a forest's height).
                : lattice || (D->grid && D->model == KernelModel::PerPoint)
                    ? detail::cell_order(*D->grid, Y0.data(), m, k)
                    : detail::morton_order(Y0);
    }
    if (any_order) {
        r.timing.seconds_order = seconds_since(t_order);
        const auto t_set = Clock::now();
        binding->set_modes(Y0.data(), m, own_metric ? W0.data() : nullptr);
        r.timing.seconds_bind += seconds_since(t_set);
    } else {
        MatrixD Ys(m, k), Ws;
        MS_PARALLEL_FOR(m * k)
        for (Index j = 0; j < m; ++j) Ys.row(j) = Y0.row(order[static_cast<std::size_t>(j)]);
        if (own_metric) {
            Ws.resize(m, k);
            MS_PARALLEL_FOR(m * k)
            for (Index j = 0; j < m; ++j) Ws.row(j) = W0.row(order[static_cast<std::size_t>(j)]);
        }
        const auto t_set = Clock::now();
        r.timing.seconds_order = seconds_since(t_order);
        binding->set_modes(Ys.data(), m, own_metric ? Ws.data() : nullptr);
        r.timing.seconds_bind += seconds_since(t_set);
    }
    r.timing.seconds_prepare = seconds_since(t_start);

    const bool fixed = options.fixed_iterations.has_value();
    const int max_it = fixed ? *options.fixed_iterations : options.max_iterations;
    // Modes still active after m_it iterations are slow, not oscillating: Gaussian mean shift with
    // the |H_i|^-1/2 weights of eq. 2 is an EM step, a monotone ascent of the estimate, and near a
    // flat mode (inside a hollow, crown-shaped shell of points; a plateau) it contracts only by
    // ρ ≈ 0.95 per step (measured on the forest cloud: 6 of 10^5 and 7,302 of 10^6 points after 100 +
    // 100 iterations, shifts ~5e-3 bandwidths falling ~4 % per step; at 10^5, 300 iterations leave
    // none, with the same clusters and ARI). Such a mode is within shift·ρ/(1−ρ) ≈ 20 × its last
    // shift of its fixed point, far inside merge_eps; Result::converged reports it as not converged.
    const double tol2 = options.tolerance * options.tolerance;
    // Per mode, in the backend's (Morton) order: iterations made, and the status of its last step.
    std::vector<int> iterations(static_cast<std::size_t>(m), 0);
    std::vector<ModeStatus> last(static_cast<std::size_t>(m), ModeStatus::Active);
    StepReport report;

    const auto t_iter = Clock::now();
    int it = 0;
    const Index nd = D->n();
    while (binding->active_count() > 0 && it < max_it) {
        const Index a = binding->active_count();
        binding->step(tol2, !fixed, report);
        if (report.kernel_seconds > 0) r.timing.seconds_kernels += report.kernel_seconds;
        for (std::size_t j = 0; j < report.mode.size(); ++j) {
            const std::size_t q = static_cast<std::size_t>(report.mode[j]);
            ++iterations[q];
            last[q] = report.status[j];
        }
        // Candidate pairs the backend visited (a neighbour grid visits fewer than a × n).
        r.timing.pair_interactions +=
            report.pairs >= 0 ? report.pairs : static_cast<double>(a) * static_cast<double>(nd);
        ++it;
        if (options.progress && !options.progress(it, binding->active_count(), m))
            throw Error("cancelled by the progress callback");
    }
    r.timing.iterations = it;
    MatrixD Ys(m, k);
    binding->read_modes(Ys.data());
    r.timing.seconds_iterate = seconds_since(t_iter);

    // Back to the seeds' order.
    MatrixD Y(m, k);
    std::vector<int> seed_iterations(static_cast<std::size_t>(m), 0);
    std::vector<bool> seed_converged(static_cast<std::size_t>(m), false), seed_none(static_cast<std::size_t>(m), false);
    MS_PARALLEL_FOR(m * k)
    for (Index j = 0; j < m; ++j) Y.row(order[static_cast<std::size_t>(j)]) = Ys.row(j);
    for (Index j = 0; j < m; ++j) {  // serial: std::vector<bool> packs bits
        const std::size_t sj = static_cast<std::size_t>(j), q = static_cast<std::size_t>(order[sj]);
        seed_iterations[q] = iterations[sj];
        const bool none = last[sj] == ModeStatus::NoSupport;
        seed_none[q] = none;
        // Fixed iterations: every supported mode counts as converged.
        seed_converged[q] = fixed ? !none : last[sj] == ModeStatus::Converged;
    }

    const auto t_group = Clock::now();
    const bool group = options.grouping != GroupingMethod::None;
    // GroupingMethod::None: modes only; labels, centres and cluster sizes stay empty.
    // GroupingMethod::ScikitLearn ranks and labels over the caller's data: labels of the points.
    const bool sklearn = options.grouping == GroupingMethod::ScikitLearn;
    Grouping g = sklearn ? detail::group_like_sklearn(Y, seed_none, prep, data, n, options.merge_eps)
                 : group ? group_modes(Y, options.merge_eps, options.grouping)
                         : Grouping{{}, MatrixD(0, k), {}};
    r.timing.seconds_grouping = seconds_since(t_group);
    const auto t_label = Clock::now();
    if (plan.point_seed.empty() || sklearn) {
        r.labels = std::move(g.labels);
        r.cluster_sizes = std::move(g.sizes);
        r.centres = detail::from_prepared(prep, g.centres);
        r.modes = detail::from_prepared(prep, Y);
        r.iterations = std::move(seed_iterations);
        r.converged = std::move(seed_converged);
        r.no_support = std::move(seed_none);
    } else {
        detail::SeedAscents a{Y, std::move(seed_iterations), std::move(seed_converged), std::move(seed_none)};
        const Grouping gr = detail::refine_boundaries(plan, *D, caller_points.rows() ? &caller_points : nullptr,
                                                      *binding, g, a, options, r.timing, r.seeding);
        detail::label_points_by_seed(r, prep, gr, a, plan.point_seed);
    }
    for (bool none : r.no_support)
        if (none) ++r.modes_without_support;
    r.timing.seconds_label = seconds_since(t_label);
    r.timing.seconds_group = seconds_since(t_group);
    r.timing.seconds_total = seconds_since(t_start);
    r.timing.peak_memory_bytes = peak_memory_bytes();
    return r;
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
