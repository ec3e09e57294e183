#pragma once
// The bin tables' lookup and the basin-boundary rule of the boundary refinement
// (Options::refine_boundaries), shared by one process's bins (seeding.cpp) and the MPI layer's
// (mpi/bins.cpp, mpi/cluster.cpp), so both find and re-seed the same bins.

#include <meanshift/types.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace meanshift::detail {

/// The row of `cell` (k integer coordinates) in `keys` (rows × k, lexicographically increasing),
/// or -1 when it is not there. Binary search.
inline Index find_cell(const std::vector<std::int64_t>& keys, std::size_t rows, std::size_t k, const std::int64_t* cell)
{
    Index lo = 0, hi = static_cast<Index>(rows);
    while (lo < hi) {  // first row whose key is not less than cell
        const Index mid = lo + (hi - lo) / 2;
        const std::int64_t* km = keys.data() + std::size_t(mid) * k;
        if (std::lexicographical_compare(km, km + k, cell, cell + k)) lo = mid + 1;
        else hi = mid;
    }
    if (lo < static_cast<Index>(rows) && std::equal(cell, cell + k, keys.data() + std::size_t(lo) * k)) return lo;
    return -1;
}

/// Offsets to a bin's neighbours, k per row: the 3^k box without its centre for k <= 3 (a boundary
/// that clips a corner is caught too); above, the 2k faces (3^k lookups per bin would cost more than
/// the ascent).
inline std::vector<std::int64_t> neighbour_offsets(int k)
{
    std::vector<std::int64_t> offsets;
    if (k <= 3) {
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
    } else {
        for (int d = 0; d < k; ++d)
            for (int sgn = -1; sgn <= 1; sgn += 2)
                for (int e = 0; e < k; ++e) offsets.push_back(e == d ? sgn : 0);
    }
    return offsets;
}

/// boundary[j] = 1 when bin j holds fewer than min_count points or a neighbouring bin has another
/// label. keys: B × k cell coordinates; find(cell) gives the bin of k cell coordinates or -1.
template <class Counts, class Find>
std::vector<char> boundary_bins(const std::vector<std::int64_t>& keys, const std::vector<int>& label,
                                const Counts& count, long long min_count, int k, Find&& find)
{
    const std::size_t ks = static_cast<std::size_t>(k), B = label.size();
    const std::vector<std::int64_t> offsets = neighbour_offsets(k);
    const std::size_t n_off = offsets.size() / ks;
    std::vector<char> boundary(B, 0);
    std::vector<std::int64_t> cell(ks);
    for (std::size_t j = 0; j < B; ++j) {
        bool bd = static_cast<long long>(count[j]) < min_count;
        for (std::size_t o = 0; o < n_off && !bd; ++o) {
            for (std::size_t d = 0; d < ks; ++d) cell[d] = keys[j * ks + d] + offsets[o * ks + d];
            const auto nb = find(cell.data());
            bd = nb >= 0 && label[static_cast<std::size_t>(nb)] != label[j];
        }
        boundary[j] = bd;
    }
    return boundary;
}

}  // namespace meanshift::detail
