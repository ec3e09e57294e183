#pragma once
// The bin tables' lookup and the basin-boundary rule of the boundary refinement
// (Options::refine_boundaries), shared by one process's bins (seeding.cpp) and the MPI layer's
// (mpi/bins.cpp, mpi/cluster.cpp), so both find and re-seed the same bins.

#include <meanshift/types.hpp>

#include <algorithm>
#include <utility>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace meanshift::detail {

/// Largest |⌊x / side⌋| the bins' integer keys take (one process's bins and the MPI layer's): below
/// 2^53 the quotient's floor is exact in float64, and the int64 keys, their neighbours (±1) and
/// their differences cannot overflow. Beyond it (a bandwidth of 1e-20 on data of extent 10, a
/// coordinate of 1e19 with bandwidth 1, bin_size 1e-300) the keys overflowed int64 and unrelated
/// points shared a bin: the callers then do not bin at all.
inline constexpr double kMaxBinCell = 9007199254740992.0;  // 2^53

/// The row of `cell` (k integer coordinates) in `keys` (rows × k, lexicographically increasing),
/// or -1 when it is not there. Binary search.
inline Index find_cell(const std::vector<std::int64_t>& keys, std::size_t rows, std::size_t k, const std::int64_t* cell)
{
    Index lo = 0, hi = static_cast<Index>(rows);
    while (lo < hi) {  // first row whose key is not less than cell
        const Index mid = lo + (hi - lo) / 2;
        const std::int64_t* km = keys.data() + std::size_t(mid) * k;
        if (std::lexicographical_compare(km, km + k, cell, cell + k))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < static_cast<Index>(rows) && std::equal(cell, cell + k, keys.data() + std::size_t(lo) * k)) return lo;
    return -1;
}

/// Offsets to a bin's neighbours for k <= 3, k per row: the 3^k box without its centre (a
/// boundary that clips a corner is caught too). Above, boundary_bins() visits the 2k faces
/// without a table: a table of 2k rows of k offsets was O(k²) memory (k = 20,000: 6.4 GB),
/// and 3^k lookups per bin would cost more than the ascent.
inline std::vector<std::int64_t> neighbour_offsets(int k)
{
    std::vector<std::int64_t> offsets;
    if (k > 3) return offsets;
    long total = 1;
    for (int d = 0; d < k; ++d) total *= 3;
    for (long t = 0; t < total; ++t) {
        long u = t;
        bool zero = true;
        for (int d = 0; d < k; ++d) {
            const std::int64_t o = u % 3 - 1;
            u /= 3;
            offsets.push_back(o);
            zero = zero && o == 0;
        }
        if (zero) offsets.resize(offsets.size() - static_cast<std::size_t>(k));
    }
    return offsets;
}

/// boundary[j] = 1 when bin j holds fewer than min_count points or a neighbouring bin (the 3^k box
/// for k <= 3, the 2k face neighbours above) has another label. keys: B × k cell coordinates
/// (distinct rows); find(cell) gives the row of `keys` equal to k cell coordinates, or -1.
///
/// Above k = 3 the faces are found through a linear hash h(c) = Σ_d r_d c_d (mod 2^64): a face
/// neighbour's hash is h ± r_d, so each of the 2k faces costs one lookup instead of a binary search
/// whose comparisons walk up to k coordinates (O(k²) per bin: 10 points of 1,500,000 dimensions
/// did not finish in minutes), and nothing of size k × k is allocated (the 2k × k offset table was
/// 6.4 GB at k = 20,000). A hash match is verified coordinate by coordinate.
/// Memory O(B + k) besides the keys and the output; time O(B·k + Σ_j (2k + k·faces found)).
template <class Counts, class Find>
std::vector<char> boundary_bins(const std::vector<std::int64_t>& keys, const std::vector<int>& label,
                                const Counts& count, long long min_count, int k, Find&& find)
{
    const std::size_t ks = static_cast<std::size_t>(k), B = label.size();
    std::vector<char> boundary(B, 0);
    if (k <= 3) {
        const std::vector<std::int64_t> offsets = neighbour_offsets(k);
        const std::size_t n_off = offsets.size() / ks;
        std::vector<std::int64_t> cell(ks);
        for (std::size_t j = 0; j < B; ++j) {
            bool bd = static_cast<long long>(count[j]) < min_count;
            const std::int64_t* key = keys.data() + j * ks;
            for (std::size_t o = 0; o < n_off && !bd; ++o) {
                for (std::size_t d = 0; d < ks; ++d) cell[d] = key[d] + offsets[o * ks + d];
                const auto nb = find(cell.data());
                bd = nb >= 0 && label[static_cast<std::size_t>(nb)] != label[j];
            }
            boundary[j] = bd;
        }
        return boundary;
    }
    // Odd multipliers from splitmix64 of the dimension: fixed, so runs are reproducible.
    std::vector<std::uint64_t> r(ks);
    for (std::size_t d = 0; d < ks; ++d) {
        std::uint64_t z = (d + 1) * 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        r[d] = (z ^ (z >> 31)) | 1u;
    }
    std::vector<std::pair<std::uint64_t, std::size_t>> hashed(B);
    for (std::size_t j = 0; j < B; ++j) {
        std::uint64_t h = 0;
        const std::int64_t* key = keys.data() + j * ks;
        for (std::size_t d = 0; d < ks; ++d) h += r[d] * static_cast<std::uint64_t>(key[d]);
        hashed[j] = {h, j};
    }
    std::vector<std::pair<std::uint64_t, std::size_t>> sorted = hashed;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t j = 0; j < B; ++j) {
        bool bd = static_cast<long long>(count[j]) < min_count;
        const std::int64_t* key = keys.data() + j * ks;
        for (std::size_t d = 0; d < ks && !bd; ++d)
            for (int sgn = -1; sgn <= 1 && !bd; sgn += 2) {
                const std::uint64_t h = hashed[j].first + (sgn > 0 ? r[d] : 0 - r[d]);
                auto it = std::lower_bound(sorted.begin(), sorted.end(), std::make_pair(h, std::size_t{0}));
                for (; it != sorted.end() && it->first == h && !bd; ++it) {
                    const std::int64_t* other = keys.data() + it->second * ks;
                    bool face = other[d] == key[d] + sgn;
                    for (std::size_t e = 0; e < ks && face; ++e) face = e == d || other[e] == key[e];
                    bd = face && label[it->second] != label[j];
                }
            }
        boundary[j] = bd;
    }
    return boundary;
}

}  // namespace meanshift::detail
