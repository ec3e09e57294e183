// The segmentation's region-level merging (Comaniciu & Meer 2002, Sec. 5; EDISON's
// TransitiveClosure and pruning): fusion passes over the adjacent pairs and pruning passes over the
// small regions, the same unions in the same order for any thread count.
#include "skeleton/src/clients/segmentation_region_graph.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace meanshift::detail {
namespace {

// Joins the regions of every adjacent pair marked in `close` (edges of G.edges, between roots) with
// the result of G.unite() called on them one by one in edge order: the unions of two different
// components of the marked pairs never touch the same entries, and within a component they keep
// their edge order. So the components are found first (lock-free union-find, compare-and-swap,
// a root the smallest region of its tree), and each thread replays in edge order the pairs of the
// components it owns (component mod threads): same roots, counts and sums as the serial loop for
// any thread count. Returns whether any pair was marked.
bool unite_close_pairs(Regions& G, const std::vector<unsigned char>& close, int threads)
{
    const std::size_t E = G.edges.size(), R = G.parent.size();
    const std::uint64_t* ed = G.edges.data();
    const unsigned char* cl = close.data();
    std::size_t marked = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(std::max(1, threads)) reduction(+ : marked) if (E >= (std::size_t(1) << 15))
#endif
    for (std::size_t j = 0; j < E; ++j) marked += cl[j];
    if (marked == 0) return false;
#if defined(_OPENMP)
    // Few pairs (the later passes): the per-region arrays below would cost more than the unions.
    const int T = static_cast<int>(std::clamp<std::size_t>(marked >> 14, 1, std::size_t(std::max(1, threads))));
#else
    const int T = 1;
#endif
    if (T == 1) {
        for (std::size_t j = 0; j < E; ++j)
            if (cl[j]) G.unite(std::int32_t(ed[j] >> 32), std::int32_t(ed[j] & 0xffffffffu));
        return true;
    }
#if defined(_OPENMP)
    std::vector<std::int32_t> comp(R);
    std::int32_t* c = comp.data();
#pragma omp parallel for schedule(static) num_threads(T)
    for (std::size_t i = 0; i < R; ++i) c[i] = std::int32_t(i);
    // Path halving: a non-root's parent only ever moves to one of its ancestors, so a stale store
    // is still an ancestor (the links are in edge order, without it paths grow along a chain).
    auto find = [c](std::int32_t a) {
        for (;;) {
            const std::int32_t p = __atomic_load_n(&c[a], __ATOMIC_RELAXED);
            if (p == a) return a;
            const std::int32_t g = __atomic_load_n(&c[p], __ATOMIC_RELAXED);
            if (g != p) __atomic_store_n(&c[a], g, __ATOMIC_RELAXED);
            a = g;
        }
    };
#pragma omp parallel for schedule(static) num_threads(T)
    for (std::size_t j = 0; j < E; ++j) {
        if (!cl[j]) continue;
        std::int32_t a = std::int32_t(ed[j] >> 32), b = std::int32_t(ed[j] & 0xffffffffu);
        for (;;) {
            a = find(a);
            b = find(b);
            if (a == b) break;
            if (a < b) std::swap(a, b);  // the larger root goes under the smaller
            std::int32_t expected = a;
            if (__atomic_compare_exchange_n(&c[a], &expected, b, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) break;
        }
    }
    // Every region to its component's root: the replay reads one entry per pair.
#pragma omp parallel for schedule(static) num_threads(T)
    for (std::size_t i = 0; i < R; ++i) __atomic_store_n(&c[i], find(std::int32_t(i)), __ATOMIC_RELAXED);
#pragma omp parallel num_threads(T)
    {
        const auto t = static_cast<std::int32_t>(omp_get_thread_num());
        for (std::size_t j = 0; j < E; ++j) {
            if (!cl[j]) continue;
            const std::int32_t a = std::int32_t(ed[j] >> 32);
            if (c[a] % T != t) continue;
            G.unite(a, std::int32_t(ed[j] & 0xffffffffu));
        }
    }
#endif
    return true;
}

// Adjacency lists (CSR: first[r] .. first[r + 1] in adj) of the regions 0 .. R - 1 from the edge set,
// in parallel: degrees and slots taken with atomic increments, so a list's order varies from run to
// run; its use (the closest neighbour, ties to the lower region) does not depend on it.
void build_adjacency(const std::vector<std::uint64_t>& edges, std::size_t R, int threads,
                     std::vector<std::uint32_t>& first, std::vector<std::uint32_t>& adj,
                     std::vector<std::uint32_t>& fill)
{
    const std::size_t E = edges.size();
    const std::uint64_t* ed = edges.data();
    first.assign(R + 1, 0);
    adj.resize(E * 2);
    std::uint32_t* f = first.data() + 1;
    const int T = std::max(1, threads);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(T) if (E >= (std::size_t(1) << 16))
#endif
    for (std::size_t j = 0; j < E; ++j) {
        __atomic_fetch_add(&f[ed[j] >> 32], 1u, __ATOMIC_RELAXED);
        __atomic_fetch_add(&f[ed[j] & 0xffffffffu], 1u, __ATOMIC_RELAXED);
    }
    for (std::size_t i = 0; i < R; ++i) first[i + 1] += first[i];
    fill.assign(first.begin(), first.end() - 1);
    std::uint32_t* fl = fill.data();
    std::uint32_t* ad = adj.data();
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(T) if (E >= (std::size_t(1) << 16))
#endif
    for (std::size_t j = 0; j < E; ++j) {
        const auto a = std::uint32_t(ed[j] >> 32), b = std::uint32_t(ed[j] & 0xffffffffu);
        ad[__atomic_fetch_add(&fl[a], 1u, __ATOMIC_RELAXED)] = b;
        ad[__atomic_fetch_add(&fl[b], 1u, __ATOMIC_RELAXED)] = a;
    }
}

// The roots smaller than minr pixels with a neighbour, by increasing pixel count, ties in region
// order (a stable counting sort over the counts when minr is small, the counts being whole pixels).
void small_regions(const Regions& G, const std::vector<std::uint32_t>& first, double minr, int threads,
                   std::vector<std::int32_t>& small)
{
    const std::size_t R = G.parent.size();
    const int T = static_cast<int>(std::clamp<std::size_t>(R >> 16, 1, std::size_t(std::max(1, threads))));
    std::vector<std::vector<std::int32_t>> part(static_cast<std::size_t>(T));
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) num_threads(T)
#endif
    for (int t = 0; t < T; ++t)
        for (std::size_t i = R * std::size_t(t) / std::size_t(T); i < R * std::size_t(t + 1) / std::size_t(T); ++i)
            if (G.parent[i] == std::int32_t(i) && G.count[i] < minr && first[i + 1] > first[i])
                part[std::size_t(t)].push_back(std::int32_t(i));
    small.clear();
    for (const auto& p : part) small.insert(small.end(), p.begin(), p.end());
    if (minr > double(1 << 20)) {
        std::stable_sort(small.begin(), small.end(), [&](std::int32_t a, std::int32_t b) {
            return G.count[std::size_t(a)] < G.count[std::size_t(b)];
        });
        return;
    }
    const auto buckets = static_cast<std::size_t>(std::ceil(minr)) + 1;
    std::vector<std::size_t> at(buckets + 1, 0);
    for (std::int32_t r : small) ++at[static_cast<std::size_t>(G.count[std::size_t(r)]) + 1];
    for (std::size_t c = 0; c < buckets; ++c) at[c + 1] += at[c];
    std::vector<std::int32_t> sorted(small.size());
    for (std::int32_t r : small) sorted[at[static_cast<std::size_t>(G.count[std::size_t(r)])]++] = r;
    small.swap(sorted);
}

}  // namespace

int fuse_regions(Regions& G, double fusion_distance, double hr, int threads)
{
    const int T = threads;
    const double df2 = fusion_distance * hr * fusion_distance * hr;
    int passes = 0;
    std::vector<unsigned char> close;
    for (;;) {
        // Which adjacent pairs qualify: read-only, in parallel; then joined in edge order.
        const std::size_t E = G.edges.size();
        close.assign(E, 0);
        const Regions& cG = G;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(T) if (E >= (std::size_t(1) << 15))
#endif
        for (std::size_t j = 0; j < E; ++j) {
            const std::uint64_t e = cG.edges[j];
            close[j] = cG.distance2(std::int32_t(e >> 32), std::int32_t(e & 0xffffffffu)) <= df2;
        }
        if (!unite_close_pairs(G, close, T)) break;
        ++passes;
        G.refresh_edges(T);
    }
    return passes;
}

void prune_regions(Regions& G, std::size_t R, double min_region, int threads)
{
    const int T = threads;
    const double minr = min_region;
    const std::size_t uR = R;
    std::vector<std::uint32_t> first, adj, fill;
    std::vector<std::int32_t> small;
    for (;;) {
        build_adjacency(G.edges, uR, T, first, adj, fill);
        small_regions(G, first, minr, T, small);
        if (small.empty()) break;
        bool merged = false;
        for (std::int32_t r : small) {
            if (G.find(r) != r || G.count[std::size_t(r)] >= minr) continue;  // changed in this pass
            std::int32_t best = r;
            double best_d2 = 0;
            for (std::uint32_t j = first[std::size_t(r)]; j < first[std::size_t(r) + 1]; ++j) {
                const std::int32_t q = G.find(std::int32_t(adj[j]));
                if (q == r) continue;
                const double d2 = G.distance2(r, q);
                if (best == r || d2 < best_d2 || (d2 == best_d2 && q < best)) {
                    best = q;
                    best_d2 = d2;
                }
            }
            if (best == r) continue;
            G.unite(r, best);
            merged = true;
        }
        G.refresh_edges(T);
        if (!merged) break;
    }
}

}  // namespace meanshift::detail
