// The region graph of the segmentation's steps (b) and (c): edge keys sorted by radix and merged
// in parallel, and the refresh of the edges after unions (mapped to the roots, deduplicated).
#include "skeleton/src/clients/segmentation_region_graph.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace meanshift::detail {

int bits_for(std::size_t count)
{
    int b = 1;
    while (b < 32 && (std::size_t(1) << b) < count) ++b;
    return b;
}

// Sorts [first, last) of edge keys (a << 32 | b, a < b < 2^bits): LSD radix sort on 11-bit digits
// of the significant bits only (std::sort's comparisons were most of the regions' sorting time;
// the result is the same sorted sequence).
void sort_edges(std::uint64_t* first, std::uint64_t* last, int bits, std::vector<std::uint64_t>& buffer)
{
    const std::size_t m = static_cast<std::size_t>(last - first);
    if (m < 256) {
        std::sort(first, last);
        return;
    }
    buffer.resize(m);
    std::uint64_t* src = first;
    std::uint64_t* dst = buffer.data();
    constexpr int kDigit = 11;
    constexpr std::size_t kBuckets = std::size_t(1) << kDigit;
    std::vector<std::size_t> count(kBuckets);
    // The low word holds b (< 2^bits), the high word a (< 2^bits): digits over both.
    std::vector<int> shifts;
    for (int sh = 0; sh < bits; sh += kDigit) shifts.push_back(sh);
    for (int sh = 0; sh < bits; sh += kDigit) shifts.push_back(32 + sh);
    for (int sh : shifts) {
        std::fill(count.begin(), count.end(), 0);
        for (std::size_t i = 0; i < m; ++i) ++count[(src[i] >> sh) & (kBuckets - 1)];
        std::size_t sum = 0;
        for (std::size_t& c : count) {
            const std::size_t t = c;
            c = sum;
            sum += t;
        }
        for (std::size_t i = 0; i < m; ++i) dst[count[(src[i] >> sh) & (kBuckets - 1)]++] = src[i];
        std::swap(src, dst);
    }
    if (src != first) std::copy(src, src + m, first);
}

// Merges the sorted chunks [chunk[t], chunk[t + 1]) of `ed` into one sorted run: pairs of neighbouring
// chunks at each level, the pairs of a level in parallel (the top level is one merge).
void merge_chunks(std::uint64_t* ed, const std::vector<std::size_t>& chunk, int T)
{
    for (int width = 1; width < T; width *= 2) {
        const int pairs = (T + 2 * width - 1) / (2 * width);
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 1) num_threads(std::max(1, std::min(pairs, T)))
#endif
        for (int p = 0; p < pairs; ++p) {
            const int t = p * 2 * width;
            if (t + width < T)
                std::inplace_merge(ed + chunk[std::size_t(t)], ed + chunk[std::size_t(t + width)],
                                   ed + chunk[std::size_t(std::min(T, t + 2 * width))]);
        }
    }
}

void Regions::refresh_edges(int threads)
{
    {
        // Roots found read-only in parallel (union by count keeps the trees O(log R) deep), then stored.
        const std::size_t R = parent.size();
        std::vector<std::int32_t> root(R);
        const std::int32_t* P0 = parent.data();
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(std::max(1, threads)) if (R >= (std::size_t(1) << 16))
#endif
        for (std::size_t i = 0; i < R; ++i) {
            std::int32_t a = std::int32_t(i);
            while (P0[std::size_t(a)] != a) a = P0[std::size_t(a)];
            root[i] = a;
        }
        parent.swap(root);
    }
    const std::int32_t* P = parent.data();
    const std::size_t E = edges.size();
    if (refresh_moved_edges(threads)) return;
    const int key_bits = bits_for(parent.size());
    // Edges inside one region become `dropped`, above every edge (a < b < 2^key_bits) and
    // within the sort's bits, so they sort last.
    const std::uint64_t top = (std::uint64_t(1) << key_bits) - 1, dropped = (top << 32) | top;
    const int T = static_cast<int>(std::clamp<std::size_t>(E >> 16, 1, std::size_t(std::max(1, threads))));
    std::vector<std::size_t> chunk(std::size_t(T) + 1);
    for (int t = 0; t <= T; ++t) chunk[std::size_t(t)] = E * std::size_t(t) / std::size_t(T);
    std::uint64_t* ed = edges.data();
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) num_threads(T)
#endif
    for (int t = 0; t < T; ++t) {
        for (std::size_t j = chunk[std::size_t(t)]; j < chunk[std::size_t(t) + 1]; ++j) {
            std::int32_t a = P[ed[j] >> 32], b = P[ed[j] & 0xffffffffu];
            if (a > b) std::swap(a, b);
            ed[j] = a == b ? dropped : (std::uint64_t(a) << 32) | std::uint64_t(b);
        }
        std::vector<std::uint64_t> buffer;
        sort_edges(ed + chunk[std::size_t(t)], ed + chunk[std::size_t(t) + 1], key_bits, buffer);
    }
    merge_chunks(ed, chunk, T);
    edges.erase(std::lower_bound(edges.begin(), edges.end(), dropped), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
}
bool Regions::refresh_moved_edges(int threads)
{
    const std::int32_t* P = parent.data();
    const std::size_t E = edges.size();
    std::uint64_t* ed = edges.data();
    std::size_t moved = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(std::max(1, threads)) reduction(+ : moved) if (E >= (std::size_t(1) << 16))
#endif
    for (std::size_t j = 0; j < E; ++j) {
        const auto a = std::size_t(ed[j] >> 32), b = std::size_t(ed[j] & 0xffffffffu);
        moved += P[a] != std::int32_t(a) || P[b] != std::int32_t(b) ? 1 : 0;
    }
    if (moved * 4 > E) return false;
    const int T = static_cast<int>(std::clamp<std::size_t>(E >> 16, 1, std::size_t(std::max(1, threads))));
    std::vector<std::size_t> chunk(std::size_t(T) + 1), kept(static_cast<std::size_t>(T));
    for (int t = 0; t <= T; ++t) chunk[std::size_t(t)] = E * std::size_t(t) / std::size_t(T);
    std::vector<std::vector<std::uint64_t>> out(static_cast<std::size_t>(T));
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) num_threads(T)
#endif
    for (int t = 0; t < T; ++t) {
        std::size_t w = chunk[std::size_t(t)];
        for (std::size_t j = chunk[std::size_t(t)]; j < chunk[std::size_t(t) + 1]; ++j) {
            const std::uint64_t e = ed[j];
            const auto a = std::int32_t(e >> 32), b = std::int32_t(e & 0xffffffffu);
            std::int32_t pa = P[std::size_t(a)], pb = P[std::size_t(b)];
            if (pa == a && pb == b) {
                ed[w++] = e;
            } else if (pa != pb) {
                if (pa > pb) std::swap(pa, pb);
                out[std::size_t(t)].push_back((std::uint64_t(pa) << 32) | std::uint64_t(pb));
            }
        }
        kept[std::size_t(t)] = w - chunk[std::size_t(t)];
    }
    std::size_t w = kept[0];
    for (int t = 1; t < T; ++t) {
        std::copy(ed + chunk[std::size_t(t)], ed + chunk[std::size_t(t)] + kept[std::size_t(t)], ed + w);
        w += kept[std::size_t(t)];
    }
    std::vector<std::uint64_t> mv;
    mv.reserve(moved);
    for (const auto& o : out) mv.insert(mv.end(), o.begin(), o.end());
    std::sort(mv.begin(), mv.end());
    mv.erase(std::unique(mv.begin(), mv.end()), mv.end());
    // Merged from the back into the same storage: w + |mv| ≤ E.
    std::size_t i = w, k = mv.size(), o = w + mv.size();
    while (k > 0) {
        if (i > 0 && ed[i - 1] > mv[k - 1])
            ed[--o] = ed[--i];
        else
            ed[--o] = mv[--k];
    }
    edges.resize(w + mv.size());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    return true;
}

}  // namespace meanshift::detail
