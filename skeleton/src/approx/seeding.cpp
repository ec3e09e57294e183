// Seeding of Alg. 4 (every point, scikit-learn's bin seeding, binned data) and the labelling of
// every data point from its seed's ascent (docs/truncated-kernel.md).
#include "skeleton/src/approx/seeding.hpp"

#include "skeleton/src/approx/boundary_bins.hpp"
#include "skeleton/src/core/ascent.hpp"
#include "skeleton/src/core/parallel.hpp"
#include "skeleton/src/approx/spatial_order.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>

namespace meanshift::detail {
namespace {

std::string number(double v)
{
    std::ostringstream s;
    s << v;
    return s.str();
}

/// 1000000 -> "1,000,000"
std::string grouped(Index v)
{
    std::string d = std::to_string(v), out;
    for (std::size_t i = 0; i < d.size(); ++i) {
        if (i > 0 && (d.size() - i) % 3 == 0) out += ',';
        out += d[i];
    }
    return out;
}

/// The q in [0, n) for which keep(q) holds, in increasing order, on the host threads: each thread
/// selects from its contiguous slice and writes after the slices before it (10^7 caller rows of
/// which a few percent lie in boundary bins: 0.09 s on one thread).
template <class Keep>
std::vector<Index> select_rows(Index n, Keep&& keep)
{
    const int threads = n >= kParallelMinValues ? host_threads() : 1;
    std::vector<Index> before(static_cast<std::size_t>(threads) + 1, 0), out;
#if defined(_OPENMP)
#pragma omp parallel num_threads(threads)
#endif
    {
#if defined(_OPENMP)
        const Index t = omp_get_thread_num(), T = omp_get_num_threads();
#else
        const Index t = 0, T = 1;
#endif
        const Index a = n * t / T, b = n * (t + 1) / T;
        std::vector<Index> mine;
        for (Index q = a; q < b; ++q)
            if (keep(q)) mine.push_back(q);
        before[std::size_t(t) + 1] = static_cast<Index>(mine.size());
#if defined(_OPENMP)
#pragma omp barrier
#pragma omp single
#endif
        {
            for (std::size_t u = 1; u < before.size(); ++u) before[u] += before[u - 1];
            out.resize(static_cast<std::size_t>(before.back()));
        }
        std::copy(mine.begin(), mine.end(), out.begin() + before[std::size_t(t)]);
    }
    return out;
}

}  // namespace

SeedPlan plan_seeds(Prepared& prep, Index n, int k, const Options& options, const float* weights, const float* seeds,
                    Index m)
{
    SeedPlan p;
    const bool exact = options.exact;
    // Bins whose integer keys would overflow (a tiny bandwidth or bin_size, a huge coordinate):
    // no binning at all, every point seeds its own ascent, which is exact's seeding.
    // The boundary refinement bins at bin_size / 4, so that side must fit too.
    std::string declined;
    const bool want_bin_data = !exact && options.bin_data && !seeds && options.bandwidth.shared();
    const bool want_bins = !exact && !seeds && !want_bin_data && options.seeding == Seeding::Bins;
    if (want_bin_data || want_bins) {
        const double side = want_bins && options.refine_boundaries ? options.bin_size / 4 : options.bin_size;
        if (!bins_fit(prep.data.points, side))
            declined = std::string(want_bin_data ? " (bin_data" : " (bin seeding") +
                       " declined: " + bins_overflow_reason(prep.data.points, side) + ")";
    }
    auto all_points = [&] {
        p.seeds_are_points = true;
        // Alg. 5 uses the seed's own H_i when the seeds are the data; otherwise (and for a shared H)
        // the whitened Euclidean distance, i.e. the Mahalanobis distance in bandwidth units.
        p.own_metric = prep.data.model == KernelModel::PerPoint;
        p.description = "all points" + declined;
    };
    if (want_bin_data && declined.empty()) {
        // Binned data: the bin means, weighted by their counts (× sample weights), replace the data;
        // every bin is a seed and labels its points.
        const Bins b = make_bins(prep.data.points, options.bin_size, weights);
        const Index B = b.mean.rows();
        const MatrixF Xb = from_prepared(prep, b.mean);
        std::vector<float> wb(static_cast<std::size_t>(B));
        for (Index j = 0; j < B; ++j) wb[std::size_t(j)] = static_cast<float>(b.weight[j]);
        if (!weights)
            for (Index j = 0; j < B; ++j) wb[std::size_t(j)] = static_cast<float>(b.count[std::size_t(j)]);
        prep = prepare(Xb.data(), B, k, options.bandwidth, wb.data());
        p.seeds = to_prepared(prep, Xb.data(), B, "bins");
        p.point_seed.assign(b.of.begin(), b.of.end());
        p.description = "binned data, bins of " + number(options.bin_size) + " bandwidths (" + std::to_string(B) +
                        " weighted points and seeds)";
    } else if (want_bins && declined.empty()) {
        // Bins of fewer than two points on average (high k, or a bandwidth small against the
        // spread): seeding from them saves under half the ascents, and their boundary refinement
        // re-seeds most points again at a quarter of the side (41 s of an 84 s run at
        // 20,000 x 384). Every point seeds its own ascent instead, as with the exact options. The
        // bins are counted before they are made: making them only to find singletons took 0.89 s
        // of a 3.3 s run at 100,000 x 384 on one H100's host.
        // At small k making the bins costs about what counting them does (a 64-bit hash sort is six
        // radix passes; small-k cells pack into 1-3), so they are made and counted in one go.
        std::optional<Bins> made;
        if (k <= 8) made = make_bins(prep.data.points, options.bin_size, nullptr);
        const Index counted = made ? made->mean.rows() : count_bins(prep.data.points, options.bin_size);
        if (2 * counted > n) {
            declined = " (bin seeding declined: " + grouped(counted) + " bins of " + number(options.bin_size) +
                       " bandwidths for " + grouped(n) + " points would save under half the ascents)";
            all_points();
            return p;
        }
        Bins b = made ? std::move(*made) : make_bins(prep.data.points, options.bin_size, nullptr);
        const Index B = b.mean.rows();
        std::vector<Index> seed_of_bin(static_cast<std::size_t>(B), -1);
        Index S = 0;
        for (Index j = 0; j < B; ++j)
            if (b.count[std::size_t(j)] >= options.min_bin_count) seed_of_bin[std::size_t(j)] = S++;
        if (S == 0)
            throw InvalidArgument("min_bin_count = " + std::to_string(options.min_bin_count) +
                                  ": no bin holds that many points (no seeds)");
        p.seeds.resize(S, k);
        for (Index j = 0; j < B; ++j)
            if (seed_of_bin[std::size_t(j)] >= 0) p.seeds.row(seed_of_bin[std::size_t(j)]) = b.mean.row(j);
        // Bins below min_bin_count: the nearest seed (brute force over the seeds, once per bin).
        for (Index j = 0; j < B; ++j) {
            if (seed_of_bin[std::size_t(j)] >= 0) continue;
            Index best = 0;
            (p.seeds.rowwise() - b.mean.row(j)).rowwise().squaredNorm().minCoeff(&best);
            seed_of_bin[std::size_t(j)] = best;
        }
        p.point_seed.resize(static_cast<std::size_t>(n));
        MS_PARALLEL_FOR(n)
        for (Index i = 0; i < n; ++i) p.point_seed[std::size_t(i)] = seed_of_bin[std::size_t(b.of[std::size_t(i)])];
        p.description = "bins of " + number(options.bin_size) + " bandwidths (" + std::to_string(S) + " seeds" +
                        (options.min_bin_count > 1 ? ", min_bin_count " + std::to_string(options.min_bin_count) : "") +
                        ")";
        p.refine = options.refine_boundaries;
        p.bins = std::move(b);
        p.seed_of_bin = std::move(seed_of_bin);
    } else if (seeds) {
        p.seeds = to_prepared(prep, seeds, m, "seeds");
        p.description = "explicit seeds";
    } else {
        all_points();
    }
    return p;
}

MatrixD bin_data_for_ascent(Prepared& prep, SeedPlan& plan, const Options& options, const float* weights)
{
    const double s = options.data_bin_size;
    const bool automatic = s == 0;
    if (options.exact || options.bin_data || plan.bins.count.empty() || !options.bandwidth.shared() ||
        options.lattice || s < 0 || !std::isfinite(s))
        return MatrixD();
    const double side = automatic ? options.bin_size / 4 : s;
    const Index n = prep.data.n();
    const int k = prep.data.k();
    if (!bins_fit(prep.data.points, side)) {  // keys would overflow: the ascents run on the raw data
        plan.description += ", data not binned (" + bins_overflow_reason(prep.data.points, side) + ")";
        return MatrixD();
    }
    Bins b = make_bins(prep.data.points, side, weights);
    const Index B = b.mean.rows();
    // Automatic: only when it cuts the ascents' work (∝ points) at least 4-fold.
    if (automatic && 4 * B > n) return MatrixD();
    MatrixD caller = std::move(prep.data.points);
    // Same prepared frame (centre, scale): the seeds and from_prepared() stay valid. The counts
    // (× sample weights) ride on the per-point model's log-weight with unit precisions, as in prepare().
    PreparedData D;
    D.model = KernelModel::PerPoint;
    D.precision = MatrixD::Ones(B, k);
    D.points = std::move(b.mean);
    D.finalize();
    for (Index j = 0; j < B; ++j) D.log_weight[j] += b.weight[j] > 0 ? std::max(-1e4, std::log(b.weight[j])) : -1e4;
    D.log_weight.array() -= D.log_weight.maxCoeff();
    D.log_weight = D.log_weight.cwiseMax(-1e4);
    D.log_weight_f = D.log_weight.cast<float>();
    prep.data = std::move(D);
    plan.description +=
        ", data binned at " + number(side) + " bandwidths: " + grouped(n) + " -> " + grouped(B) + " weighted points";
    return caller;
}

namespace {

/// The fine seeds of the boundary refinement while they ascend: their positions and, once
/// resolved, their labels and the bin seed whose mode they take.
struct FineSeeds {
    MatrixD Z;  ///< F × k positions (prepared units)
    std::vector<int> label;  ///< per fine seed: its cluster, -1 until resolved
    std::vector<Index> via;  ///< per fine seed: the bin seed whose mode it takes, -1 for its own
    ModeLedger ledger;  ///< per fine seed: iterations made and its last step's status
    Index early = 0;  ///< resolved by their trajectory (a bin off the boundaries) while still active
};

/// The bins of the boundary refinement: which are on a boundary, their labels, and the lookup of
/// a position's bin.
struct BinLabels {
    const Bins& bins;
    const std::vector<char>& boundary;
    const std::vector<int>& label;  ///< per bin: its seed's cluster
    const std::vector<Index>& seed_of_bin;

    /// Bin of a position, -1 outside every bin (and no int64 overflow); `cell` is the caller's
    /// scratch (one per thread).
    Index bin_of(const double* y, std::int64_t* cell, std::size_t k) const
    {
        for (std::size_t d = 0; d < k; ++d) {
            const double c = std::floor(y[d] / bins.side);
            if (!(std::fabs(c) < kMaxBinCell)) return -1;
            cell[d] = static_cast<std::int64_t>(c);
        }
        return bins.find(cell);
    }
};

/// Alg. 4 (ascent.hpp) from the fine seeds; after every iteration a seed inside a bin off the
/// boundaries is resolved by that bin, and one that stopped elsewhere (or ran out of iterations)
/// is left for the nearest centre (returned). The binding keeps its modes from one iteration to
/// the next: every iteration reads them back and resolves the seeds that reached a bin off the
/// boundaries, which leave the live set but stay in the binding (the API has no way to retire one
/// mode) and ascend on unread until the next upload. The live seeds are uploaded again, in the
/// grid's cell order, only when the binding's active modes exceed them by a quarter: a few uploads
/// and sorts instead of one per iteration (up to 200: the host work of this stage on the GPU), at
/// most 25 % steps spent on resolved seeds. A mode's step depends on its own position only, so the
/// trajectories and labels are those of one upload per iteration.
std::vector<Index> ascend_fine_seeds(FineSeeds& fs, const BinLabels& bl, const PreparedData& D, Binding& binding,
                                     const AscentLimits& limits, Timing& timing)
{
    const Index F = fs.Z.rows(), k = fs.Z.cols();
    const std::size_t ks = static_cast<std::size_t>(k);
    std::vector<Index> active(static_cast<std::size_t>(F));  // live fine seeds, to upload next
    for (Index f = 0; f < F; ++f) active[std::size_t(f)] = f;
    std::vector<Index> unresolved;  // stopped in a boundary bin
    std::vector<Index> id;  // binding slot -> fine seed
    std::vector<char> live;  // binding slot still wanted
    std::vector<Index> slot_bin;  // bin of the slot's position after the last step
    Index n_live = 0;
    bool uploaded = false;
    MatrixD Ys;
    auto upload = [&] {
        const Index m = static_cast<Index>(active.size());
        {
            MatrixD Y(m, k);
            MS_PARALLEL_FOR(m * k)
            for (Index q = 0; q < m; ++q) Y.row(q) = fs.Z.row(active[std::size_t(q)]);
            // The grid's own cell order where there is one: the GPU range kernels take blocks of
            // consecutive modes and visit their union box over the grid dims only (a 3-D Morton
            // order scaled per dim also splits a forest cloud's 28 m of height like its 500 m of ground).
            const std::vector<Index> order = D.grid ? cell_order(*D.grid, Y.data(), m, k) : morton_order(Y);
            Ys.resize(m, k);
            id.resize(std::size_t(m));
            MS_PARALLEL_FOR(m * k)
            for (Index q = 0; q < m; ++q) {
                id[std::size_t(q)] = active[std::size_t(order[std::size_t(q)])];
                Ys.row(q) = fs.Z.row(id[std::size_t(q)]);
            }
        }
        binding.set_modes(Ys.data(), m);
        live.assign(std::size_t(m), 1);
        slot_bin.assign(std::size_t(m), -1);
        n_live = m;
        active.clear();
        uploaded = true;
    };
    AscentHooks hooks;
    // Iterations on one upload until the binding's active modes outnumber the live ones by a
    // quarter (or none is live); then the live seeds, in fine-seed order, are uploaded again.
    hooks.active = [&]() -> Index {
        if (n_live > 0 && 4 * binding.active_count() <= 5 * n_live) return n_live;
        if (uploaded)
            for (std::size_t q = 0; q < live.size(); ++q)
                if (live[q]) active.push_back(id[q]);
        std::sort(active.begin(), active.end());
        if (active.empty()) return 0;
        upload();
        return n_live;
    };
    hooks.step = binding_step(binding, limits, D.n());
    hooks.record = [&](Index q, ModeStatus s) {
        if (live[std::size_t(q)]) fs.ledger.record(std::size_t(id[std::size_t(q)]), s);
    };
    hooks.after = [&](int it) {
        const Index m = static_cast<Index>(live.size());
        binding.read_modes(Ys.data());
        // Positions and bins of the live seeds on the threads (a hash look-up each).
#if defined(_OPENMP)
#pragma omp parallel num_threads(host_threads()) if (m * k >= kParallelMinValues / 4)
#endif
        {
            std::vector<std::int64_t> cell(ks);
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
            for (Index q = 0; q < m; ++q) {
                if (!live[std::size_t(q)]) continue;
                fs.Z.row(id[std::size_t(q)]) = Ys.row(q);
                slot_bin[std::size_t(q)] = bl.bin_of(Ys.row(q).data(), cell.data(), ks);
            }
        }
        for (Index q = 0; q < m; ++q) {
            if (!live[std::size_t(q)]) continue;
            const std::size_t f = std::size_t(id[std::size_t(q)]);
            const Index j = slot_bin[std::size_t(q)];
            if (j >= 0 && !bl.boundary[std::size_t(j)]) {
                fs.label[f] = bl.label[std::size_t(j)];
                fs.via[f] = bl.seed_of_bin[std::size_t(j)];
                fs.early += fs.ledger.status[f] == ModeStatus::Active;
            } else if (fs.ledger.status[f] != ModeStatus::Active || it >= limits.max_iterations) {
                unresolved.push_back(Index(f));  // labelled by the nearest centre, on the threads
            } else {
                continue;
            }
            live[std::size_t(q)] = 0;
            --n_live;
        }
        return true;
    };
    const AscentTotals totals = ascend(limits, hooks);
    timing.iterations += totals.iterations;
    timing.pair_interactions += totals.pairs;
    timing.seconds_kernels += totals.kernel_seconds;
    return unresolved;
}

}  // namespace

Grouping refine_boundaries(SeedPlan& plan, const PreparedData& D, const MatrixD* points, Binding& binding,
                           const Grouping& g, SeedAscents& a, const Options& options, Timing& timing,
                           std::string& description)
{
    Grouping out = g;
    if (!plan.refine || g.labels.empty()) return out;
    const Bins& b = plan.bins;
    const Index B = static_cast<Index>(b.count.size());
    const int k = D.k();
    std::vector<int> label(static_cast<std::size_t>(B));
    for (Index j = 0; j < B; ++j) label[std::size_t(j)] = g.labels[std::size_t(plan.seed_of_bin[std::size_t(j)])];

    const std::vector<char> boundary = boundary_bins(b.key, label, b.count, options.min_bin_count, k,
                                                     [&](const std::int64_t* c) { return b.find(c); });
    Index n_boundary = 0;
    for (char bd : boundary) n_boundary += bd;
    if (n_boundary == 0) return out;

    // The points of boundary bins (caller rows), binned on the fine cells.
    const MatrixD& X = points ? *points : D.points;
    auto caller_row = [&](Index q) { return points || D.original.empty() ? q : D.original[std::size_t(q)]; };
    const std::vector<Index> rows =
        select_rows(X.rows(), [&](Index q) { return boundary[std::size_t(b.of[std::size_t(caller_row(q))])] != 0; });
    MatrixD P(static_cast<Index>(rows.size()), k);
    MS_PARALLEL_FOR(Index(rows.size()) * k)
    for (std::size_t r = 0; r < rows.size(); ++r) P.row(static_cast<Index>(r)) = X.row(rows[r]);
    const Bins fine = make_bins(P, b.side / 4, nullptr);
    const Index F = fine.mean.rows();

    // Ascent of the fine seeds; a seed inside a bin off the boundaries is resolved by that bin.
    const Index S = a.modes.rows();
    FineSeeds fs{fine.mean, std::vector<int>(std::size_t(F), -1), std::vector<Index>(std::size_t(F), -1),
                 ModeLedger(std::size_t(F)), 0};
    const AscentLimits limits = ascent_limits(options);
    const std::vector<Index> unresolved =
        ascend_fine_seeds(fs, BinLabels{b, boundary, label, plan.seed_of_bin}, D, binding, limits, timing);
    // Each a scan of the c centres: seeds x centres grows as n^2 at constant density (a forest
    // cloud: both ∝ its trees), so on the threads rather than inside the ascent's serial loop.
    auto nearest_centre = [&](Index f) {
        Index best = 0;
        (g.centres.rowwise() - fs.Z.row(f)).rowwise().squaredNorm().minCoeff(&best);
        return static_cast<int>(best);
    };
    MS_PARALLEL_FOR(Index(unresolved.size()) * g.centres.rows() * k)
    for (std::size_t u = 0; u < unresolved.size(); ++u)
        fs.label[std::size_t(unresolved[u])] = nearest_centre(unresolved[u]);

    // Append the fine seeds (their own mode, or that of the bin seed that resolved them).
    a.modes.conservativeResize(S + F, k);
    a.iterations.resize(std::size_t(S + F));
    a.converged.resize(std::size_t(S + F));
    a.no_support.resize(std::size_t(S + F));
    out.labels.resize(std::size_t(S + F));
    for (Index f = 0; f < F; ++f) {
        const std::size_t t = std::size_t(S + f), v = std::size_t(fs.via[std::size_t(f)]);
        const bool by_bin = fs.via[std::size_t(f)] >= 0;
        const ModeStatus st = fs.ledger.status[std::size_t(f)];
        a.modes.row(S + f) = by_bin ? a.modes.row(fs.via[std::size_t(f)]).eval() : fs.Z.row(f).eval();
        a.iterations[t] = fs.ledger.iterations[std::size_t(f)] + (by_bin ? a.iterations[v] : 0);
        // Fixed iterations: every fine seed counts as converged (the driver's rule for supported ones).
        a.converged[t] = by_bin ? bool(a.converged[v]) : st == ModeStatus::Converged || limits.fixed;
        a.no_support[t] = by_bin ? bool(a.no_support[v]) : st == ModeStatus::NoSupport;
        out.labels[t] = fs.label[std::size_t(f)];
    }
    for (std::size_t r = 0; r < rows.size(); ++r) {
        plan.point_seed[std::size_t(caller_row(rows[r]))] = S + fine.of[r];
    }
    description += ", " + std::to_string(n_boundary) + " boundary bins re-seeded at " + number(b.side / 4) + " (" +
                   std::to_string(F) + " seeds, " + std::to_string(fs.early) + " resolved by their trajectory)";
    return out;
}

void label_points_by_seed(Result& r, const Prepared& prep, const Grouping& g, const SeedAscents& a,
                          const std::vector<Index>& point_seed)
{
    const Index n = static_cast<Index>(point_seed.size());
    const Index k = a.modes.cols();
    // No grouping (GroupingMethod::None): each point still gets its seed's mode, but no label.
    const bool grouped = !g.labels.empty();
    // Every data point takes its seed's label and mode; clusters renumbered by point count.
    const Index c = grouped ? static_cast<Index>(g.sizes.size()) : 0;
    std::vector<Index> size(static_cast<std::size_t>(c), 0);
    if (grouped) {
        // Per-thread counts (c × threads values), summed after: integer sums, so the same as one
        // thread's. Where c is as large as n (every point its own cluster) one thread counts.
        const int threads = c <= n / 16 ? host_threads() : 1;
#if defined(_OPENMP)
#pragma omp parallel num_threads(threads) if (threads > 1 && n * k >= kParallelMinValues)
#endif
        {
            std::vector<Index> local(static_cast<std::size_t>(c), 0);
#if defined(_OPENMP)
#pragma omp for schedule(static) nowait
#endif
            for (Index i = 0; i < n; ++i) ++local[std::size_t(g.labels[std::size_t(point_seed[std::size_t(i)])])];
#if defined(_OPENMP)
#pragma omp critical(meanshift_label_sizes)
#endif
            for (Index j = 0; j < c; ++j) size[std::size_t(j)] += local[std::size_t(j)];
        }
    }
    std::vector<int> rank(static_cast<std::size_t>(c)), by(static_cast<std::size_t>(c));
    for (int j = 0; j < static_cast<int>(c); ++j) by[std::size_t(j)] = j;
    std::stable_sort(by.begin(), by.end(), [&](int x, int y) { return size[std::size_t(x)] > size[std::size_t(y)]; });
    MatrixD centres(c, k);
    r.cluster_sizes.resize(static_cast<std::size_t>(c));
    for (int j = 0; j < static_cast<int>(c); ++j) {
        rank[std::size_t(by[std::size_t(j)])] = j;
        centres.row(j) = g.centres.row(by[std::size_t(j)]);
        r.cluster_sizes[std::size_t(j)] = size[std::size_t(by[std::size_t(j)])];
    }
    // Clusters no point maps to (possible only via min_bin_count) stay with size 0 at the end.
    r.centres = from_prepared(prep, centres);
    const MatrixF seed_modes = from_prepared(prep, a.modes);
    r.modes.resize(n, k);
    r.labels.assign(grouped ? static_cast<std::size_t>(n) : 0, 0);
    r.iterations.resize(static_cast<std::size_t>(n));
    r.converged.assign(static_cast<std::size_t>(n), false);
    r.no_support.assign(static_cast<std::size_t>(n), false);
    // Blocks of 64 rows: std::vector<bool> packs bits into words of (at most) 64 bits, so two
    // threads never write bits of one word when each writes whole blocks.
    constexpr Index kBlock = 64;
    const Index blocks = (n + kBlock - 1) / kBlock;
    MS_PARALLEL_FOR(n * (k + 4))
    for (Index b = 0; b < blocks; ++b) {
        const Index end = std::min(n, (b + 1) * kBlock);
        for (Index i = b * kBlock; i < end; ++i) {
            const std::size_t s = static_cast<std::size_t>(point_seed[std::size_t(i)]);
            if (grouped) r.labels[std::size_t(i)] = rank[std::size_t(g.labels[s])];
            r.modes.row(i) = seed_modes.row(static_cast<Index>(s));
            r.iterations[std::size_t(i)] = a.iterations[s];
            r.converged[std::size_t(i)] = a.converged[s];
            r.no_support[std::size_t(i)] = a.no_support[s];
        }
    }
    // Drop clusters of no point (a seed group that only small-bin points could have reached).
    while (!r.cluster_sizes.empty() && r.cluster_sizes.back() == 0) {
        r.cluster_sizes.pop_back();
        r.centres.conservativeResize(r.centres.rows() - 1, k);
    }
}

}  // namespace meanshift::detail
