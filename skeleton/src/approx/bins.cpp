// Bins of side s (bandwidth units) over prepared points: scikit-learn's bin seeding, binned data
// and the boundary refinement's fine bins (docs/truncated-kernel.md). Every pass over the n rows
// runs on the host threads: keys, their range, the radix sort, the bins' starts and the sums per
// bin (fixed chunks of rows, or a bin's rows contiguous once sorted: no atomics). The result does
// not depend on the thread count: the chunks are fixed by the sizes, and sorted bins sum their rows
// in increasing row order (the sort is stable).
#include "skeleton/src/core/array_scan.hpp"
#include "skeleton/src/approx/boundary_bins.hpp"
#include "skeleton/src/core/parallel.hpp"
#include "skeleton/src/approx/radix_sort.hpp"
#include "skeleton/src/approx/seeding.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

namespace meanshift::detail {

double bins_extent(const MatrixD& P)
{
    return max_abs(P.data(), static_cast<std::size_t>(P.size()));
}

bool bins_fit(double extent, double side)
{
    if (!(side > 0) || !std::isfinite(side)) return false;
    const double cells = extent / side;  // inf when it overflows
    return cells < kMaxBinCell;
}

bool bins_fit(const MatrixD& P, double side)
{
    return bins_fit(bins_extent(P), side);
}

std::string bins_overflow_reason(const MatrixD& P, double side)
{
    const double extent = bins_extent(P);
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

/// cell_range, after checking from the same column extremes that the keys fit (bins_fit): one
/// pass over the rows where bins_fit and the ranges took two. Throws InvalidArgument otherwise.
CellRange cell_range(const MatrixD& P, double side)
{
    const Index n = P.rows();
    const std::size_t ks = static_cast<std::size_t>(P.cols());
    CellRange c;
    c.lo.assign(ks, 0);
    c.hi.assign(ks, 0);
    c.width.assign(ks, 0);
    if (!(side > 0) || !std::isfinite(side)) throw InvalidArgument("bins: " + bins_overflow_reason(P, side));
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
    double extent = 0;
    for (std::size_t d = 0; d < ks; ++d) extent = std::max({extent, std::fabs(lo[d]), std::fabs(hi[d])});
    if (!bins_fit(extent, side)) throw InvalidArgument("bins: " + bins_overflow_reason(P, side));
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
        const std::uint64_t off =
            static_cast<std::uint64_t>(static_cast<std::int64_t>(std::floor(P(i, Index(d)) / side))) -
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

/// The dense path's occupied cells: one bit per packed cell (4 million cells: 512 kB, in cache,
/// where a table of int32 bin numbers took 16 MB and a cache miss per row), and per 64-cell word
/// the bins before it, so a cell's bin number is a rank: before[w] + popcount of the lower bits.
struct CellBits {
    std::vector<std::uint64_t> bits;
    std::vector<Index> before;  ///< words + 1 entries; before.back() = bins

    explicit CellBits(std::size_t cells) : bits((cells + 63) / 64, 0) {}
    void mark(std::uint64_t c)  // any thread; a word is read first, so most rows write nothing
    {
        std::uint64_t& w = bits[std::size_t(c >> 6)];
        const std::uint64_t bit = std::uint64_t{1} << (c & 63);
        if (!(__atomic_load_n(&w, __ATOMIC_RELAXED) & bit)) __atomic_fetch_or(&w, bit, __ATOMIC_RELAXED);
    }
    Index rank_all()  // after every mark
    {
        before.assign(bits.size() + 1, 0);
        for (std::size_t w = 0; w < bits.size(); ++w) before[w + 1] = before[w] + __builtin_popcountll(bits[w]);
        return before.back();
    }
    Index bin(std::uint64_t c) const
    {
        const std::size_t w = std::size_t(c >> 6);
        return before[w] + __builtin_popcountll(bits[w] & ((std::uint64_t{1} << (c & 63)) - 1));
    }
};

/// Partial sums of the bins over fixed chunks of rows (count, weight, Σ w·x per bin), added chunk
/// after chunk: the same sums for any thread count, and the sequential ones (rows in increasing
/// order) where there is one chunk. Chunks: at most 16 (the threads a pass of 10^7 rows uses
/// well), of at least 2^16 rows, and their tables no larger than the rows' values.
int sum_chunks(Index n, int k, Index B)
{
    const Index by_rows = n >> 16;
    const Index by_memory = (n * Index(k)) / std::max<Index>(1, B * Index(k + 2));
    return static_cast<int>(std::max<Index>(1, std::min({Index{16}, by_rows, by_memory})));
}

void chunked_sums(const MatrixD& P, const std::vector<Index, NoInitAllocator<Index>>& of, const float* weights,
                  int threads, Bins& b)
{
    const Index n = P.rows(), k = P.cols(), B = static_cast<Index>(b.count.size());
    const int chunks = sum_chunks(n, static_cast<int>(k), B);
    const std::size_t width = std::size_t(k) + 2, table = std::size_t(B) * width;  // count, weight, k sums
    std::vector<double> part(std::size_t(chunks) * table);  // zeroed below by the chunk's thread
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) num_threads(std::min(threads, chunks)) if (chunks > 1)
#endif
    for (int c = 0; c < chunks; ++c) {
        double* t = part.data() + std::size_t(c) * table;
        std::fill(t, t + table, 0.0);
        const Index r0 = n * c / chunks, r1 = n * (c + 1) / chunks;
        for (Index i = r0; i < r1; ++i) {
            double* s = t + std::size_t(of[std::size_t(i)]) * width;
            const double wi = weights ? static_cast<double>(weights[i]) : 1.0;
            s[0] += 1;
            s[1] += wi;
            for (Index d = 0; d < k; ++d) s[2 + d] += P(i, d) * wi;
        }
    }
    MS_PARALLEL_FOR(Index(chunks) * Index(table))
    for (Index j = 0; j < B; ++j) {
        const double* s = part.data() + std::size_t(j) * width;
        double count = s[0], w = s[1];
        for (Index d = 0; d < k; ++d) b.mean(j, d) = s[2 + d];
        for (int c = 1; c < chunks; ++c) {
            const double* u = s + std::size_t(c) * table;
            count += u[0];
            w += u[1];
            for (Index d = 0; d < k; ++d) b.mean(j, d) += u[2 + d];
        }
        b.count[std::size_t(j)] = static_cast<Index>(count);
        b.weight[j] = w;
    }
}

}  // namespace

Bins make_bins(const MatrixD& P, double side, const float* weights)
{
    const Index n = P.rows();
    const int k = static_cast<int>(P.cols());
    const std::size_t ks = static_cast<std::size_t>(k);
    const CellRange range = cell_range(P, side);  // throws where the keys do not fit (bins_fit)
    const int threads = n * k >= kParallelMinValues ? host_threads() : 1;

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
        CellBits occupied(cells);
        MS_PARALLEL_FOR(n * k)
        for (Index i = 0; i < n; ++i) {
            const std::uint64_t c = packed_cell(P, i, side, range);
            b.of[std::size_t(i)] = static_cast<Index>(c);
            occupied.mark(c);
        }
        B = occupied.rank_all();
        b.key.resize(std::size_t(B) * ks);
        const Index words = static_cast<Index>(occupied.bits.size());
        MS_PARALLEL_FOR(words)
        for (Index w = 0; w < words; ++w)
            for (std::uint64_t m = occupied.bits[std::size_t(w)]; m; m &= m - 1) {
                const std::uint64_t c = std::uint64_t(w) * 64 + std::uint64_t(__builtin_ctzll(m));
                unpack_cell(c, range, b.key.data() + std::size_t(occupied.bin(c)) * ks);
            }
        MS_PARALLEL_FOR(n)
        for (Index i = 0; i < n; ++i) b.of[std::size_t(i)] = occupied.bin(std::uint64_t(b.of[std::size_t(i)]));
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
            starts[std::size_t(r)] =
                r == 0 || (keyed.empty() ? less(idx[std::size_t(r - 1)], idx[std::size_t(r)])
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
    // Per bin: count, weight and mean, in an order fixed by the sizes (not the threads). A bin
    // whose weights are all 0 takes the plain mean of its rows.
    if (idx.empty() || B * k <= (Index{1} << 22)) {
        // Few bins (the usual case: 10^7 points in 6e4 bins): passes over the rows in their order
        // (chunked_sums), the sums' rows stay in cache. Gathering the rows bin by bin instead
        // reads them in random order: 10^7 cache misses, measured 3x slower on one core.
        chunked_sums(P, b.of, weights, threads, b);
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
