// Alg. 4 (mean shift clustering): the iteration driver shared by every backend. It owns
// per-mode convergence (Alg. 5 distance vs t_d, m_it), the active set (converged modes stop
// costing work), and the final groupModes (Alg. 6) on the host.
#include "prepare.hpp"
#include "spatial_order.hpp"

#include <meanshift/meanshift.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
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
    if (o.min_bin_count < 1)
        throw InvalidArgument("min_bin_count must be >= 1, got " + std::to_string(o.min_bin_count));
}

/// Points binned on a grid of side `side` (prepared units): bin of each row, bins in first-seen order.
struct Bins {
    std::vector<Index> of;     ///< n: bin of each row
    std::vector<Index> count;  ///< B
    MatrixD mean;              ///< B × k: mean of the rows of each bin (weighted by `weights` if given)
    VectorD weight;            ///< B: Σ weights (or counts)
};

Bins make_bins(const MatrixD& P, double side, const float* weights)
{
    const Index n = P.rows();
    const int k = static_cast<int>(P.cols());
    std::vector<std::int64_t> key(static_cast<std::size_t>(n) * static_cast<std::size_t>(k));
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d)
            key[std::size_t(i * k + d)] = static_cast<std::int64_t>(std::floor(P(i, d) / side));
    std::vector<Index> idx(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) idx[std::size_t(i)] = i;
    auto less = [&](Index a, Index b) {
        return std::lexicographical_compare(key.begin() + a * k, key.begin() + (a + 1) * k, key.begin() + b * k,
                                            key.begin() + (b + 1) * k);
    };
    std::sort(idx.begin(), idx.end(), less);
    Bins b;
    b.of.assign(static_cast<std::size_t>(n), 0);
    Index B = 0;
    for (Index r = 0; r < n; ++r) {
        if (r > 0 && less(idx[std::size_t(r - 1)], idx[std::size_t(r)])) ++B;
        b.of[std::size_t(idx[std::size_t(r)])] = B;
    }
    ++B;
    b.count.assign(static_cast<std::size_t>(B), 0);
    b.mean = MatrixD::Zero(B, k);
    b.weight = VectorD::Zero(B);
    VectorD wsum = VectorD::Zero(B);
    for (Index i = 0; i < n; ++i) {
        const Index j = b.of[std::size_t(i)];
        ++b.count[std::size_t(j)];
        const double w = weights ? static_cast<double>(weights[i]) : 1.0;
        b.weight[j] += w;
        // Bins of weight 0 fall back to the plain mean below.
        b.mean.row(j) += P.row(i) * (weights ? w : 1.0);
        wsum[j] += 1.0;
    }
    for (Index j = 0; j < B; ++j) {
        if (weights && b.weight[j] > 0)
            b.mean.row(j) /= b.weight[j];
        else if (weights) {
            b.mean.row(j).setZero();  // zero-weight bin: plain mean
            wsum[j] = 0;
        } else
            b.mean.row(j) /= static_cast<double>(b.count[std::size_t(j)]);
    }
    if (weights)
        for (Index i = 0; i < n; ++i) {
            const Index j = b.of[std::size_t(i)];
            if (!(b.weight[j] > 0)) {
                b.mean.row(j) += P.row(i);
                wsum[j] += 1.0;
            }
        }
    if (weights)
        for (Index j = 0; j < B; ++j)
            if (!(b.weight[j] > 0)) b.mean.row(j) /= wsum[j];
    return b;
}

std::string number(double v)
{
    std::ostringstream s;
    s << v;
    return s.str();
}

Result run(Backend& backend, std::unique_ptr<Binding>& binding, const float* data, Index n, int k,
           const Options& options, const float* weights, const float* seeds, Index m)
{
    const auto t_start = Clock::now();
    validate_options(options);
    if (seeds && m < 1) throw InvalidArgument("seeds: need at least one seed point (m = 0)");

    Result r;
    const bool exact = options.exact;
    detail::Prepared prep = detail::prepare(data, n, k, options.bandwidth, weights);
    // Per caller row: the seed whose ascent labels it (bin seeding / binned data), or none.
    std::vector<Index> point_seed;
    MatrixD Y0;
    bool own_metric = false;
    if (!exact && options.bin_data && !seeds && options.bandwidth.shared()) {
        // Binned data: the bin means, weighted by their counts (× sample weights), replace the data;
        // every bin is a seed and labels its points.
        const Bins b = make_bins(prep.data.points, options.bin_size, weights);
        const Index B = b.mean.rows();
        const MatrixF Xb = detail::from_prepared(prep, b.mean);
        std::vector<float> wb(static_cast<std::size_t>(B));
        for (Index j = 0; j < B; ++j) wb[std::size_t(j)] = static_cast<float>(b.weight[j]);
        if (!weights) for (Index j = 0; j < B; ++j) wb[std::size_t(j)] = static_cast<float>(b.count[std::size_t(j)]);
        prep = detail::prepare(Xb.data(), B, k, options.bandwidth, wb.data());
        Y0 = detail::to_prepared(prep, Xb.data(), B, "bins");
        point_seed = b.of;
        r.seeding = "binned data, bins of " + number(options.bin_size) + " bandwidths (" + std::to_string(B) +
                    " weighted points and seeds)";
    } else if (!exact && !seeds && options.seeding == Seeding::Bins) {
        const Bins b = make_bins(prep.data.points, options.bin_size, nullptr);
        const Index B = b.mean.rows();
        std::vector<Index> seed_of_bin(static_cast<std::size_t>(B), -1);
        Index S = 0;
        for (Index j = 0; j < B; ++j)
            if (b.count[std::size_t(j)] >= options.min_bin_count) seed_of_bin[std::size_t(j)] = S++;
        if (S == 0) throw InvalidArgument("min_bin_count = " + std::to_string(options.min_bin_count) +
                                          ": no bin holds that many points (no seeds)");
        Y0.resize(S, k);
        for (Index j = 0; j < B; ++j)
            if (seed_of_bin[std::size_t(j)] >= 0) Y0.row(seed_of_bin[std::size_t(j)]) = b.mean.row(j);
        // Bins below min_bin_count: the nearest seed (brute force over the seeds, once per bin).
        for (Index j = 0; j < B; ++j) {
            if (seed_of_bin[std::size_t(j)] >= 0) continue;
            Index best = 0;
            (Y0.rowwise() - b.mean.row(j)).rowwise().squaredNorm().minCoeff(&best);
            seed_of_bin[std::size_t(j)] = best;
        }
        point_seed.resize(static_cast<std::size_t>(n));
        for (Index i = 0; i < n; ++i) point_seed[std::size_t(i)] = seed_of_bin[std::size_t(b.of[std::size_t(i)])];
        r.seeding = "bins of " + number(options.bin_size) + " bandwidths (" + std::to_string(S) + " seeds" +
                    (options.min_bin_count > 1 ? ", min_bin_count " + std::to_string(options.min_bin_count) : "") + ")";
    } else if (seeds) {
        Y0 = detail::to_prepared(prep, seeds, m, "seeds");
        r.seeding = "explicit seeds";
    } else {
        Y0 = prep.data.points;
        // Alg. 5 uses the seed's own H_i when the seeds are the data; otherwise (and for a shared H)
        // the whitened Euclidean distance, i.e. the Mahalanobis distance in bandwidth units.
        own_metric = prep.data.model == KernelModel::PerPoint;
        r.seeding = "all points";
    }
    m = Y0.rows();
    r.seed_count = m;

    // Truncation and neighbour search (rows sorted by cell: PreparedData::original).
    const bool truncate = !exact && std::isfinite(options.cutoff) && backend.supports_cutoff();
    prep.data.cutoff2 = truncate ? options.cutoff * options.cutoff : std::numeric_limits<double>::infinity();
    r.cutoff = truncate ? options.cutoff : std::numeric_limits<double>::infinity();
    if (!exact && std::isfinite(options.cutoff) && !backend.supports_cutoff()) {
        prep.data.grid.reset();
        prep.data.original.clear();
        r.search = "exact (backend has no truncated kernel yet)";
    } else {
        detail::build_search(prep.data, exact ? NeighbourSearch::BruteForce : options.search, r.search);
    }
    MatrixD W0;
    if (own_metric) {
        W0 = prep.data.precision;
        if (!prep.data.original.empty()) {
            // Back to the caller's row order (the seeds are the data in that order).
            for (Index q = 0; q < m; ++q) W0.row(prep.data.original[std::size_t(q)]) = prep.data.precision.row(q);
        }
    }
    auto D = std::make_shared<const PreparedData>(std::move(prep.data));

    r.backend = backend.name();
    r.topology = backend.resolve_topology(options.topology, *D);
    binding.reset();  // release the previous run's device buffers first
    binding = backend.bind(D, r.topology);
    // The backends get the modes in Morton order: a PPU's block of consecutive modes is then a
    // compact region, so its PUs meet the same points (GPU kernels skip or share work per block).
    // Per-mode results are kept in that order and mapped back to the caller's order at the end.
    const std::vector<Index> order = detail::morton_order(Y0);
    {
        MatrixD Ys(m, k), Ws;
        for (Index j = 0; j < m; ++j) Ys.row(j) = Y0.row(order[static_cast<std::size_t>(j)]);
        if (own_metric) {
            Ws.resize(m, k);
            for (Index j = 0; j < m; ++j) Ws.row(j) = W0.row(order[static_cast<std::size_t>(j)]);
        }
        binding->set_modes(Ys.data(), m, own_metric ? Ws.data() : nullptr);
    }
    r.timing.seconds_prepare = seconds_since(t_start);

    const bool fixed = options.fixed_iterations.has_value();
    const int max_it = fixed ? *options.fixed_iterations : options.max_iterations;
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
        r.timing.pair_interactions += static_cast<double>(a) * static_cast<double>(nd);
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
    for (Index j = 0; j < m; ++j) {
        const std::size_t sj = static_cast<std::size_t>(j), q = static_cast<std::size_t>(order[sj]);
        Y.row(static_cast<Index>(q)) = Ys.row(j);
        seed_iterations[q] = iterations[sj];
        const bool none = last[sj] == ModeStatus::NoSupport;
        seed_none[q] = none;
        // Fixed iterations: every supported mode counts as converged.
        seed_converged[q] = fixed ? !none : last[sj] == ModeStatus::Converged;
    }

    const auto t_group = Clock::now();
    Grouping g = group_modes(Y, options.merge_eps, options.grouping);
    if (point_seed.empty()) {
        r.labels = std::move(g.labels);
        r.cluster_sizes = std::move(g.sizes);
        r.centres = detail::from_prepared(prep, g.centres);
        r.modes = detail::from_prepared(prep, Y);
        r.iterations = std::move(seed_iterations);
        r.converged = std::move(seed_converged);
        r.no_support = std::move(seed_none);
    } else {
        // Every data point takes its seed's label and mode; clusters renumbered by point count.
        const Index c = static_cast<Index>(g.sizes.size());
        std::vector<Index> size(static_cast<std::size_t>(c), 0);
        for (Index i = 0; i < n; ++i) ++size[std::size_t(g.labels[std::size_t(point_seed[std::size_t(i)])])];
        std::vector<int> rank(static_cast<std::size_t>(c)), by(static_cast<std::size_t>(c));
        for (int j = 0; j < static_cast<int>(c); ++j) by[std::size_t(j)] = j;
        std::stable_sort(by.begin(), by.end(), [&](int a, int b) { return size[std::size_t(a)] > size[std::size_t(b)]; });
        MatrixD centres(c, k);
        r.cluster_sizes.resize(static_cast<std::size_t>(c));
        for (int j = 0; j < static_cast<int>(c); ++j) {
            rank[std::size_t(by[std::size_t(j)])] = j;
            centres.row(j) = g.centres.row(by[std::size_t(j)]);
            r.cluster_sizes[std::size_t(j)] = size[std::size_t(by[std::size_t(j)])];
        }
        // Clusters no point maps to (possible only via min_bin_count) stay with size 0 at the end.
        r.centres = detail::from_prepared(prep, centres);
        const MatrixF seed_modes = detail::from_prepared(prep, Y);
        r.modes.resize(n, k);
        r.labels.resize(static_cast<std::size_t>(n));
        r.iterations.resize(static_cast<std::size_t>(n));
        r.converged.assign(static_cast<std::size_t>(n), false);
        r.no_support.assign(static_cast<std::size_t>(n), false);
        for (Index i = 0; i < n; ++i) {
            const std::size_t s = static_cast<std::size_t>(point_seed[std::size_t(i)]);
            r.labels[std::size_t(i)] = rank[std::size_t(g.labels[s])];
            r.modes.row(i) = seed_modes.row(static_cast<Index>(s));
            r.iterations[std::size_t(i)] = seed_iterations[s];
            r.converged[std::size_t(i)] = seed_converged[s];
            r.no_support[std::size_t(i)] = seed_none[s];
        }
        // Drop clusters of no point (a seed group that only small-bin points could have reached).
        while (!r.cluster_sizes.empty() && r.cluster_sizes.back() == 0) {
            r.cluster_sizes.pop_back();
            r.centres.conservativeResize(r.centres.rows() - 1, k);
        }
    }
    for (bool none : r.no_support) if (none) ++r.modes_without_support;
    r.timing.seconds_group = seconds_since(t_group);
    r.timing.seconds_total = seconds_since(t_start);
    return r;
}

}  // namespace

Result cluster(const float* data, Index n, int k, const Options& options, const float* seeds, Index m)
{
    validate_options(options);
    auto backend = make_backend(options.backend, options.backend_options);
    std::unique_ptr<Binding> binding;
    return run(*backend, binding, data, n, k, options, nullptr, seeds, m);
}

Result cluster(const float* data, Index n, int k, const Options& options, const float* weights, const float* seeds,
               Index m)
{
    validate_options(options);
    auto backend = make_backend(options.backend, options.backend_options);
    std::unique_ptr<Binding> binding;
    return run(*backend, binding, data, n, k, options, weights, seeds, m);
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
    backend_ = make_backend(options_.backend, options_.backend_options);
}
Clusterer::~Clusterer() = default;
Clusterer::Clusterer(Clusterer&&) noexcept = default;
Clusterer& Clusterer::operator=(Clusterer&&) noexcept = default;

Backend& Clusterer::backend() { return *backend_; }

Binding& Clusterer::binding()
{
    if (!binding_) throw Error("Clusterer::binding(): no data bound yet (call fit() first)");
    return *binding_;
}

Result Clusterer::fit(const Eigen::Ref<const MatrixF>& data, const Eigen::Ref<const MatrixF>* seeds)
{
    return fit(data, nullptr, seeds);
}

Result Clusterer::fit(const Eigen::Ref<const MatrixF>& data, const float* weights, const Eigen::Ref<const MatrixF>* seeds)
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
