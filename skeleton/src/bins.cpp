// Bins of side s (bandwidth units) over prepared points: scikit-learn's bin seeding, binned data
// and the boundary refinement's fine bins (docs/truncated-kernel.md). Every pass over the n rows
// runs on the host threads: keys, their range, the radix sort, the bins' starts and the sums per
// bin (a bin's rows are contiguous once sorted, so the sums need no atomics). The result is the
// sequential one bit for bit: the sort is stable, so each bin sums its rows in increasing row order.
#include "boundary_bins.hpp"
#include "parallel.hpp"
#include "radix_sort.hpp"
#include "seeding.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

namespace meanshift::detail {

bool bins_fit(const MatrixD& P, double side)
{
    if (!(side > 0) || !std::isfinite(side)) return false;
    const double extent = P.size() ? P.cwiseAbs().maxCoeff() : 0.0;
    const double cells = extent / side;  // inf when it overflows
    return cells < kMaxBinCell;
}

std::string bins_overflow_reason(const MatrixD& P, double side)
{
    const double extent = P.size() ? P.cwiseAbs().maxCoeff() : 0.0;
    std::ostringstream s;
    s << "coordinates reach " << extent / side << " bins of " << side
      << " bandwidths from the data's centre, beyond the 2^53 that integer bin keys hold exactly";
    return s.str();
}

Bins make_bins(const MatrixD& P, double side, const float* weights)
{
    if (!bins_fit(P, side)) throw InvalidArgument("bins: " + bins_overflow_reason(P, side));
    const Index n = P.rows();
    const int k = static_cast<int>(P.cols());
    const std::size_t ks = static_cast<std::size_t>(k);
    std::vector<std::int64_t> key(static_cast<std::size_t>(n) * ks);
    MS_PARALLEL_FOR(n * k)
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d)
            key[std::size_t(i) * ks + std::size_t(d)] = static_cast<std::int64_t>(std::floor(P(i, d) / side));
    // Range of the keys per dimension: per-thread minima and maxima on the heap (k may be large).
    std::vector<std::int64_t> lo(ks, INT64_MAX), hi(ks, INT64_MIN);
    {
        const int threads = n * k >= kParallelMinValues ? host_threads() : 1;
        std::vector<std::int64_t> tlo(std::size_t(threads) * ks, INT64_MAX), thi(std::size_t(threads) * ks, INT64_MIN);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(threads)
#endif
        for (int t = 0; t < threads; ++t) {
            const Index a = n * t / threads, b = n * (t + 1) / threads;
            std::int64_t* l = tlo.data() + std::size_t(t) * ks;
            std::int64_t* h = thi.data() + std::size_t(t) * ks;
            for (Index i = a; i < b; ++i)
                for (std::size_t d = 0; d < ks; ++d) {
                    const std::int64_t c = key[std::size_t(i) * ks + d];
                    l[d] = std::min(l[d], c);
                    h[d] = std::max(h[d], c);
                }
        }
        for (int t = 0; t < threads; ++t)
            for (std::size_t d = 0; d < ks; ++d) {
                lo[d] = std::min(lo[d], tlo[std::size_t(t) * ks + d]);
                hi[d] = std::max(hi[d], thi[std::size_t(t) * ks + d]);
            }
    }
    // Rows in lexicographic order of their cells. When the cell ranges fit 64 bits, the offsets
    // c_d − lo_d concatenated (dimension 0 highest) order as the cells do: a radix sort, O(n);
    // otherwise a stable comparison sort.
    std::vector<int> width(ks, 0);
    int bits = 0;
    for (std::size_t d = 0; d < ks && n > 0; ++d) {
        width[d] = bit_width(static_cast<std::uint64_t>(hi[d]) - static_cast<std::uint64_t>(lo[d]));
        bits += width[d];
    }
    std::vector<Index> idx(static_cast<std::size_t>(n));
    std::vector<std::pair<std::uint64_t, Index>> keyed;  // packed cells, sorted (when they fit)
    auto less = [&](Index a, Index b) {
        return std::lexicographical_compare(key.begin() + a * k, key.begin() + (a + 1) * k, key.begin() + b * k,
                                            key.begin() + (b + 1) * k);
    };
    if (bits <= 64) {
        keyed.resize(static_cast<std::size_t>(n));
        MS_PARALLEL_FOR(n * k)
        for (Index i = 0; i < n; ++i) {
            std::uint64_t packed = 0;
            for (std::size_t d = 0; d < ks; ++d) {
                const std::uint64_t off = static_cast<std::uint64_t>(key[std::size_t(i) * ks + d]) -
                                          static_cast<std::uint64_t>(lo[d]);
                packed = width[d] >= 64 ? off : (packed << width[d]) | off;
            }
            keyed[std::size_t(i)] = {packed, i};
        }
        radix_sort(keyed, bits);
        MS_PARALLEL_FOR(n)
        for (Index r = 0; r < n; ++r) idx[std::size_t(r)] = keyed[std::size_t(r)].second;
    } else {
        for (Index i = 0; i < n; ++i) idx[std::size_t(i)] = i;
        std::stable_sort(idx.begin(), idx.end(), less);
    }
    // Where each bin starts in the sorted rows.
    std::vector<char> starts(static_cast<std::size_t>(n), 0);
    MS_PARALLEL_FOR(n * 4)
    for (Index r = 0; r < n; ++r)
        starts[std::size_t(r)] = r == 0 || (keyed.empty() ? less(idx[std::size_t(r - 1)], idx[std::size_t(r)])
                                                          : keyed[std::size_t(r)].first != keyed[std::size_t(r - 1)].first);
    std::vector<Index> first;  // B + 1 sorted positions
    for (Index r = 0; r < n; ++r)
        if (starts[std::size_t(r)]) first.push_back(r);
    first.push_back(n);
    const Index B = static_cast<Index>(first.size()) - 1;

    Bins b;
    b.side = side;
    b.of.assign(static_cast<std::size_t>(n), 0);
    b.key.resize(std::size_t(B) * ks);
    b.count.assign(static_cast<std::size_t>(B), 0);
    b.mean = MatrixD::Zero(B, k);
    b.weight = VectorD::Zero(B);
    // Per bin: its key, its rows' bin, count, weight and mean. A bin whose weights are all 0 takes
    // the plain mean of its rows. Either way each bin sums its rows in increasing row order (the
    // sort is stable), so the sums are the sequential ones bit for bit.
    MS_PARALLEL_FOR(n)
    for (Index j = 0; j < B; ++j) {
        const Index r0 = first[std::size_t(j)], r1 = first[std::size_t(j + 1)];
        const Index i0 = idx[std::size_t(r0)];
        std::copy(key.begin() + i0 * k, key.begin() + (i0 + 1) * k, b.key.begin() + j * k);
        b.count[std::size_t(j)] = r1 - r0;
        for (Index r = r0; r < r1; ++r) b.of[std::size_t(idx[std::size_t(r)])] = j;
    }
    if (B * k <= (Index{1} << 22)) {
        // Few bins (the usual case: 10^7 points in 6e4 bins): one pass over the rows in their
        // order, the sums' rows stay in cache. Gathering the rows bin by bin instead reads them in
        // random order: 10^7 cache misses, measured 3x slower on one core.
        for (Index i = 0; i < n; ++i) {
            const Index j = b.of[std::size_t(i)];
            const double wi = weights ? static_cast<double>(weights[i]) : 1.0;
            b.weight[j] += wi;
            b.mean.row(j) += P.row(i) * wi;
        }
    } else {
        MS_PARALLEL_FOR(n * k)
        for (Index j = 0; j < B; ++j) {
            double w = 0;
            for (Index r = first[std::size_t(j)]; r < first[std::size_t(j + 1)]; ++r) {
                const Index i = idx[std::size_t(r)];
                const double wi = weights ? static_cast<double>(weights[i]) : 1.0;
                w += wi;
                b.mean.row(j) += P.row(i) * wi;
            }
            b.weight[j] = w;
        }
    }
    MS_PARALLEL_FOR(B * k)
    for (Index j = 0; j < B; ++j) {
        const Index r0 = first[std::size_t(j)], r1 = first[std::size_t(j + 1)];
        const double w = b.weight[j];
        if (weights && w > 0) {
            b.mean.row(j) /= w;
        } else if (weights) {
            b.mean.row(j).setZero();
            for (Index r = r0; r < r1; ++r) b.mean.row(j) += P.row(idx[std::size_t(r)]);
            b.mean.row(j) /= static_cast<double>(r1 - r0);
        } else {
            b.mean.row(j) /= static_cast<double>(r1 - r0);
        }
    }
    return b;
}

Index count_bins(const MatrixD& P, double side)
{
    if (!bins_fit(P, side)) throw InvalidArgument("bins: " + bins_overflow_reason(P, side));
    const Index n = P.rows();
    const Index k = P.cols();
    std::vector<std::pair<std::uint64_t, Index>> hashed(static_cast<std::size_t>(n));
    MS_PARALLEL_FOR(n * k)
    for (Index i = 0; i < n; ++i) {
        std::uint64_t h = 0x9e3779b97f4a7c15ull;
        for (Index d = 0; d < k; ++d) {
            const auto c = static_cast<std::uint64_t>(static_cast<std::int64_t>(std::floor(P(i, d) / side)));
            h = (h ^ (c + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2))) * 0xff51afd7ed558ccdull;
        }
        hashed[std::size_t(i)] = {h ^ (h >> 29), i};
    }
    radix_sort(hashed, 64);
    Index count = n > 0 ? 1 : 0;
    for (Index r = 1; r < n; ++r) count += hashed[std::size_t(r)].first != hashed[std::size_t(r - 1)].first;
    return count;
}

Index Bins::find(const std::int64_t* cell) const
{
    return find_cell(key, count.size(), static_cast<std::size_t>(mean.cols()), cell);
}

}  // namespace meanshift::detail
