// Seeding of Alg. 4 (every point, scikit-learn's bin seeding, binned data) and the labelling of
// every data point from its seed's ascent (docs/truncated-kernel.md).
#include "seeding.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

namespace meanshift::detail {
namespace {

std::string number(double v)
{
    std::ostringstream s;
    s << v;
    return s.str();
}

}  // namespace

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

SeedPlan plan_seeds(Prepared& prep, Index n, int k, const Options& options, const float* weights,
                    const float* seeds, Index m)
{
    SeedPlan p;
    const bool exact = options.exact;
    if (!exact && options.bin_data && !seeds && options.bandwidth.shared()) {
        // Binned data: the bin means, weighted by their counts (× sample weights), replace the data;
        // every bin is a seed and labels its points.
        const Bins b = make_bins(prep.data.points, options.bin_size, weights);
        const Index B = b.mean.rows();
        const MatrixF Xb = from_prepared(prep, b.mean);
        std::vector<float> wb(static_cast<std::size_t>(B));
        for (Index j = 0; j < B; ++j) wb[std::size_t(j)] = static_cast<float>(b.weight[j]);
        if (!weights) for (Index j = 0; j < B; ++j) wb[std::size_t(j)] = static_cast<float>(b.count[std::size_t(j)]);
        prep = prepare(Xb.data(), B, k, options.bandwidth, wb.data());
        p.seeds = to_prepared(prep, Xb.data(), B, "bins");
        p.point_seed = b.of;
        p.description = "binned data, bins of " + number(options.bin_size) + " bandwidths (" + std::to_string(B) +
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
        for (Index i = 0; i < n; ++i) p.point_seed[std::size_t(i)] = seed_of_bin[std::size_t(b.of[std::size_t(i)])];
        p.description = "bins of " + number(options.bin_size) + " bandwidths (" + std::to_string(S) + " seeds" +
                        (options.min_bin_count > 1 ? ", min_bin_count " + std::to_string(options.min_bin_count) : "") +
                        ")";
    } else if (seeds) {
        p.seeds = to_prepared(prep, seeds, m, "seeds");
        p.description = "explicit seeds";
    } else {
        p.seeds = prep.data.points;
        // Alg. 5 uses the seed's own H_i when the seeds are the data; otherwise (and for a shared H)
        // the whitened Euclidean distance, i.e. the Mahalanobis distance in bandwidth units.
        p.own_metric = prep.data.model == KernelModel::PerPoint;
        p.description = "all points";
    }
    return p;
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
    if (grouped)
        for (Index i = 0; i < n; ++i) ++size[std::size_t(g.labels[std::size_t(point_seed[std::size_t(i)])])];
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
    for (Index i = 0; i < n; ++i) {
        const std::size_t s = static_cast<std::size_t>(point_seed[std::size_t(i)]);
        if (grouped) r.labels[std::size_t(i)] = rank[std::size_t(g.labels[s])];
        r.modes.row(i) = seed_modes.row(static_cast<Index>(s));
        r.iterations[std::size_t(i)] = a.iterations[s];
        r.converged[std::size_t(i)] = a.converged[s];
        r.no_support[std::size_t(i)] = a.no_support[s];
    }
    // Drop clusters of no point (a seed group that only small-bin points could have reached).
    while (!r.cluster_sizes.empty() && r.cluster_sizes.back() == 0) {
        r.cluster_sizes.pop_back();
        r.centres.conservativeResize(r.centres.rows() - 1, k);
    }
}

}  // namespace meanshift::detail
