#pragma once
// Internal to the segmentation's steps (b) and (c) (segmentation_regions.cpp): the region graph,
// a union-find over regions with their pixel counts, mean mode colours and adjacent pairs, and the
// sorting of its edge keys.

#include <meanshift/types.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace meanshift::detail {

/// Bits that hold the values 0 .. count − 1.
int bits_for(std::size_t count);

/// Sorts [first, last) of edge keys (a << 32 | b, a < b < 2^bits); `buffer` is scratch space.
void sort_edges(std::uint64_t* first, std::uint64_t* last, int bits, std::vector<std::uint64_t>& buffer);

/// Merges the T sorted chunks [chunk[t], chunk[t + 1]) of `ed` into one sorted run, in parallel.
void merge_chunks(std::uint64_t* ed, const std::vector<std::size_t>& chunk, int T);

// Union-find over regions with union by pixel count (ties: the smaller region number stays root),
// and per root the pixel count and the sum of the mode colours.
struct Regions {
    int channels = 0;
    std::vector<std::int32_t> parent;
    std::vector<double> count;  // pixels, by root
    std::vector<double> sum;  // Σ mode colour, by root, channels each
    std::vector<std::uint64_t> edges;  // (a << 32 | b) of adjacent regions' roots, a < b, sorted, unique

    std::int32_t find(std::int32_t a)
    {
        while (parent[std::size_t(a)] != a) {
            parent[std::size_t(a)] = parent[std::size_t(parent[std::size_t(a)])];
            a = parent[std::size_t(a)];
        }
        return a;
    }
    std::int32_t unite(std::int32_t a, std::int32_t b)
    {
        a = find(a);
        b = find(b);
        if (a == b) return a;
        const auto ua = std::size_t(a), ub = std::size_t(b);
        if (count[ua] < count[ub] || (count[ua] == count[ub] && b < a)) return unite_into(b, a);
        return unite_into(a, b);
    }
    std::int32_t unite_into(std::int32_t r, std::int32_t o)
    {
        const auto ur = std::size_t(r), uo = std::size_t(o), C = std::size_t(channels);
        parent[uo] = r;
        count[ur] += count[uo];
        for (std::size_t ch = 0; ch < C; ++ch) sum[ur * C + ch] += sum[uo * C + ch];
        return r;
    }
    double distance2(std::int32_t a, std::int32_t b) const
    {
        const auto ua = std::size_t(a), ub = std::size_t(b), C = std::size_t(channels);
        double d2 = 0;
        for (std::size_t ch = 0; ch < C; ++ch) {
            const double d = sum[ua * C + ch] / count[ua] - sum[ub * C + ch] / count[ub];
            d2 += d * d;
        }
        return d2;
    }
    // Maps the edges to the current roots, drops those inside one region and duplicates: the forest
    // flattened first (serial, per region), then the edges mapped and sorted in parallel chunks,
    // merged. The result is the sorted set, whatever the thread count.
    void refresh_edges(int threads);
    // The refresh when few edges have an end that is no longer a root (the later passes): the
    // others keep their sorted places; the moved ones are mapped, sorted and merged in, in place
    // (no buffer of all the edges). Same result as the full refresh; false (nothing done) when
    // more than a quarter of the edges moved.
    bool refresh_moved_edges(int threads);
    Index roots() const
    {
        Index r = 0;
        for (std::size_t i = 0; i < parent.size(); ++i) r += parent[i] == std::int32_t(i) ? 1 : 0;
        return r;
    }
};

/// (b) Region level: fuses adjacent regions whose mean mode colours lie within fusion_distance · hr
/// (data units), every qualifying pair of a pass at once (transitive closure), means recomputed, until no
/// pair qualifies; returns the passes that fused. `threads` ≥ 1.
int fuse_regions(Regions& G, double fusion_distance, double hr, int threads);

/// (c) Pruning: a region smaller than `min_region` pixels joins the adjacent region with the
/// closest mean mode colour; passes repeat until no small region with a neighbour is left. `R`:
/// the regions numbered at the pixel level. `threads` ≥ 1.
void prune_regions(Regions& G, std::size_t R, double min_region, int threads);

}  // namespace meanshift::detail
