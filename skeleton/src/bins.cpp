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

namespace {

/// Key ranges ⌊x/side⌋ per dimension, from the columns' extremes (⌊·/side⌋ is monotone for side > 0,
/// so no n × k key array is needed), and the bits each offset c_d − lo_d takes when packed.
struct CellRange {
    std::vector<std::int64_t> lo, hi;
    std::vector<int> width;
    int bits = 0;  ///< Σ width; > 64 when the packed cells do not fit one word
};

CellRange cell_range(const MatrixD& P, double side)
{
    const Index n = P.rows();
    const std::size_t ks = static_cast<std::size_t>(P.cols());
    CellRange c;
    c.lo.assign(ks, 0);
    c.hi.assign(ks, 0);
    c.width.assign(ks, 0);
    if (n == 0) return c;
    std::vector<double> lo(ks, P(0, 0)), hi(ks, P(0, 0));
    for (std::size_t d = 0; d < ks; ++d) lo[d] = hi[d] = P(0, Index(d));
    const int threads = n * Index(ks) >= kParallelMinValues ? host_threads() : 1;
    std::vector<double> tlo(std::size_t(threads) * ks), thi(std::size_t(threads) * ks);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(threads)
#endif
    for (int t = 0; t < threads; ++t) {
        double* l = tlo.data() + std::size_t(t) * ks;
        double* h = thi.data() + std::size_t(t) * ks;
        std::copy(lo.begin(), lo.end(), l);
        std::copy(hi.begin(), hi.end(), h);
        for (Index i = n * t / threads; i < n * (t + 1) / threads; ++i)
            for (std::size_t d = 0; d < ks; ++d) {
                const double x = P(i, Index(d));
                l[d] = std::min(l[d], x);
                h[d] = std::max(h[d], x);
            }
    }
    for (int t = 0; t < threads; ++t)
        for (std::size_t d = 0; d < ks; ++d) {
            lo[d] = std::min(lo[d], tlo[std::size_t(t) * ks + d]);
            hi[d] = std::max(hi[d], thi[std::size_t(t) * ks + d]);
        }
    for (std::size_t d = 0; d < ks; ++d) {
        c.lo[d] = static_cast<std::int64_t>(std::floor(lo[d] / side));
        c.hi[d] = static_cast<std::int64_t>(std::floor(hi[d] / side));
        c.width[d] = bit_width(static_cast<std::uint64_t>(c.hi[d]) - static_cast<std::uint64_t>(c.lo[d]));
        c.bits += c.width[d];
    }
    return c;
}

/// Row i's cell offsets packed into one word, dimension 0 highest: packed words order as the
/// cells do lexicographically. Requires c.bits ≤ 64.
inline std::uint64_t packed_cell(const MatrixD& P, Index i, double side, const CellRange& c)
{
    std::uint64_t packed = 0;
    for (std::size_t d = 0; d < c.lo.size(); ++d) {
        const std::uint64_t off = static_cast<std::uint64_t>(static_cast<std::int64_t>(std::floor(P(i, Index(d)) / side))) -
                                  static_cast<std::uint64_t>(c.lo[d]);
        packed = c.width[d] >= 64 ? off : (packed << c.width[d]) | off;
    }
    return packed;
}

/// The integer cell of a packed word (inverse of packed_cell), into key[0..k).
void unpack_cell(std::uint64_t packed, const CellRange& c, std::int64_t* key)
{
    for (std::size_t d = c.lo.size(); d-- > 0;) {
        const int w = c.width[d];
        const std::uint64_t off = w >= 64 ? packed : packed & ((std::uint64_t{1} << w) - 1);
        key[d] = static_cast<std::int64_t>(static_cast<std::uint64_t>(c.lo[d]) + off);
        packed = w >= 64 ? 0 : packed >> w;
    }
}

/// Cells few enough for a table indexed by the packed cell (a counting sort): at most 2n cells
/// (or 2^20, whatever n), so the table never outweighs the rows' own bin indices.
bool dense_cells(const CellRange& c, Index n)
{
    const int limit = std::min(31, std::max(20, bit_width(static_cast<std::uint64_t>(n))));
    return c.bits <= limit;
}

}  // namespace

Bins make_bins(const MatrixD& P, double side, const float* weights)
{
    if (!bins_fit(P, side)) throw InvalidArgument("bins: " + bins_overflow_reason(P, side));
    const Index n = P.rows();
    const int k = static_cast<int>(P.cols());
    const std::size_t ks = static_cast<std::size_t>(k);
    const CellRange range = cell_range(P, side);

    Bins b;
    b.side = side;
    b.of.resize(static_cast<std::size_t>(n));
    Index B = 0;
    // Rows of each bin in increasing order (the sorted paths only; the dense path sums in row order).
    std::vector<Index> idx, first;
    if (dense_cells(range, n)) {
        // Low-dimensional data (10^7 2-D points in 10^5 cells): mark the occupied cells in a table
        // indexed by the packed cell, number them in packed (= lexicographic) order, look each row's
        // number up. O(n + cells), no sort, no n-long temporaries: the sorted path's keys, pairs and
        // sort buffers were 48 bytes a row whose first-touch page faults took most of its time.
        const std::size_t cells = std::size_t{1} << range.bits;
        std::vector<std::int32_t> id(cells, 0);
        MS_PARALLEL_FOR(n * k)
        for (Index i = 0; i < n; ++i) {
            const std::uint64_t c = packed_cell(P, i, side, range);
            b.of[std::size_t(i)] = static_cast<Index>(c);
            __atomic_store_n(&id[c], 1, __ATOMIC_RELAXED);  // every writer stores the same value
        }
        for (std::size_t c = 0; c < cells; ++c)
            id[c] = id[c] ? static_cast<std::int32_t>(B++) : -1;
        b.key.resize(std::size_t(B) * ks);
        for (std::size_t c = 0; c < cells; ++c)
            if (id[c] >= 0) unpack_cell(c, range, b.key.data() + std::size_t(id[c]) * ks);
        MS_PARALLEL_FOR(n)
        for (Index i = 0; i < n; ++i) b.of[std::size_t(i)] = id[std::size_t(b.of[std::size_t(i)])];
    } else {
        // Rows in lexicographic order of their cells: a radix sort of the packed cells when they fit
        // 64 bits, O(n); otherwise a stable comparison sort of the integer keys.
        idx.resize(static_cast<std::size_t>(n));
        std::vector<std::pair<std::uint64_t, Index>> keyed;
        std::vector<std::int64_t> key;  // n × k, the comparison sort only
        auto less = [&](Index a, Index c) {
            return std::lexicographical_compare(key.begin() + a * k, key.begin() + (a + 1) * k, key.begin() + c * k,
                                                key.begin() + (c + 1) * k);
        };
        if (range.bits <= 64) {
            keyed.resize(static_cast<std::size_t>(n));
            MS_PARALLEL_FOR(n * k)
            for (Index i = 0; i < n; ++i) keyed[std::size_t(i)] = {packed_cell(P, i, side, range), i};
            radix_sort(keyed, range.bits);
            MS_PARALLEL_FOR(n)
            for (Index r = 0; r < n; ++r) idx[std::size_t(r)] = keyed[std::size_t(r)].second;
        } else {
            key.resize(static_cast<std::size_t>(n) * ks);
            MS_PARALLEL_FOR(n * k)
            for (Index i = 0; i < n; ++i)
                for (int d = 0; d < k; ++d)
                    key[std::size_t(i) * ks + std::size_t(d)] = static_cast<std::int64_t>(std::floor(P(i, d) / side));
            for (Index i = 0; i < n; ++i) idx[std::size_t(i)] = i;
            std::stable_sort(idx.begin(), idx.end(), less);
        }
        // Where each bin starts in the sorted rows.
        std::vector<char> starts(static_cast<std::size_t>(n), 0);
        MS_PARALLEL_FOR(n * 4)
        for (Index r = 0; r < n; ++r)
            starts[std::size_t(r)] = r == 0 || (keyed.empty() ? less(idx[std::size_t(r - 1)], idx[std::size_t(r)])
                                                              : keyed[std::size_t(r)].first != keyed[std::size_t(r - 1)].first);
        for (Index r = 0; r < n; ++r)
            if (starts[std::size_t(r)]) first.push_back(r);
        first.push_back(n);
        B = static_cast<Index>(first.size()) - 1;
        b.key.resize(std::size_t(B) * ks);
        MS_PARALLEL_FOR(n)
        for (Index j = 0; j < B; ++j) {
            const Index r0 = first[std::size_t(j)], r1 = first[std::size_t(j + 1)];
            const Index i0 = idx[std::size_t(r0)];
            if (keyed.empty())
                std::copy(key.begin() + i0 * k, key.begin() + (i0 + 1) * k, b.key.begin() + j * k);
            else
                unpack_cell(keyed[std::size_t(r0)].first, range, b.key.data() + std::size_t(j) * ks);
            for (Index r = r0; r < r1; ++r) b.of[std::size_t(idx[std::size_t(r)])] = j;
        }
    }

    b.count.assign(static_cast<std::size_t>(B), 0);
    b.mean = MatrixD::Zero(B, k);
    b.weight = VectorD::Zero(B);
    // Per bin: count, weight and mean; each bin sums its rows in increasing row order (the sort is
    // stable), so the sums are the sequential ones bit for bit. A bin whose weights are all 0 takes
    // the plain mean of its rows.
    if (idx.empty() || B * k <= (Index{1} << 22)) {
        // Few bins (the usual case: 10^7 points in 6e4 bins): one pass over the rows in their
        // order, the sums' rows stay in cache. Gathering the rows bin by bin instead reads them in
        // random order: 10^7 cache misses, measured 3x slower on one core.
        for (Index i = 0; i < n; ++i) {
            const Index j = b.of[std::size_t(i)];
            const double wi = weights ? static_cast<double>(weights[i]) : 1.0;
            b.count[std::size_t(j)] += 1;
            b.weight[j] += wi;
            b.mean.row(j) += P.row(i) * wi;
        }
        bool unweighted = false;  // some bin's weights are all 0: the plain sums of those bins
        for (Index j = 0; j < B && weights; ++j) unweighted = unweighted || !(b.weight[j] > 0);
        if (unweighted) {
            for (Index j = 0; j < B; ++j)
                if (!(b.weight[j] > 0)) b.mean.row(j).setZero();
            for (Index i = 0; i < n; ++i) {
                const Index j = b.of[std::size_t(i)];
                if (!(b.weight[j] > 0)) b.mean.row(j) += P.row(i);
            }
        }
    } else {
        MS_PARALLEL_FOR(n * k)
        for (Index j = 0; j < B; ++j) {
            const Index r0 = first[std::size_t(j)], r1 = first[std::size_t(j + 1)];
            double w = 0;
            for (Index r = r0; r < r1; ++r) {
                const Index i = idx[std::size_t(r)];
                const double wi = weights ? static_cast<double>(weights[i]) : 1.0;
                w += wi;
                b.mean.row(j) += P.row(i) * wi;
            }
            b.weight[j] = w;
            b.count[std::size_t(j)] = r1 - r0;
            if (weights && !(w > 0)) {
                b.mean.row(j).setZero();
                for (Index r = r0; r < r1; ++r) b.mean.row(j) += P.row(idx[std::size_t(r)]);
            }
        }
    }
    MS_PARALLEL_FOR(B * k)
    for (Index j = 0; j < B; ++j) {
        const double w = b.weight[j];
        b.mean.row(j) /= weights && w > 0 ? w : static_cast<double>(b.count[std::size_t(j)]);
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
