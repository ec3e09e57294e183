// Steps (b) and (c) of the segmentation (Comaniciu & Meer 2002, Sec. 5; EDISON's Connect,
// TransitiveClosure and pruning). The pixel level runs in parallel over bands of rows: each band
// joins its own pixels (union-find over int32, every root the smallest pixel index of its tree), the
// seams between bands are joined afterwards, and the components, hence the regions, are those of
// the graph whatever the thread count. Everything after the pixel level works on regions (numbered
// in scan order of their first pixel), never on pixels.
#include "skeleton/src/clients/segmentation_regions.hpp"
#include "skeleton/src/core/stopwatch.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace meanshift::detail {
namespace {

// Union-find over pixels stored in the labels: parent[i] ≤ i, so a root is its tree's smallest
// pixel and finds walk towards the start of the image.
std::int32_t find_root(std::int32_t* parent, std::int32_t a)
{
    while (parent[a] != a) {
        parent[a] = parent[parent[a]];
        a = parent[a];
    }
    return a;
}

// Joins the trees of a and b; returns the root that lost its rootship (-1 if already joined).
std::int32_t join(std::int32_t* parent, std::int32_t a, std::int32_t b)
{
    a = find_root(parent, a);
    b = find_root(parent, b);
    if (a == b) return -1;
    if (a > b) std::swap(a, b);
    parent[b] = a;
    return b;
}

// Bits that hold the values 0 .. count − 1.
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
    void refresh_edges(int threads)
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
    // The refresh when few edges have an end that is no longer a root (the later passes): the
    // others keep their sorted places; the moved ones are mapped, sorted and merged in, in place
    // (no buffer of all the edges). Same result as the full refresh; false (nothing done) when
    // more than a quarter of the edges moved.
    bool refresh_moved_edges(int threads)
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
    Index roots() const
    {
        Index r = 0;
        for (std::size_t i = 0; i < parent.size(); ++i) r += parent[i] == std::int32_t(i) ? 1 : 0;
        return r;
    }
};

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

void segment_regions(const MatrixF& modes, const float* pixels, const SegmentOptions& options, int threads,
                     Segmentation& s)
{
    const auto t_connect = Clock::now();
    const Index H = s.height, W = s.width, n = H * W;
    const int C = s.channels, k = 2 + C;
    const double hs = options.spatial_bandwidth, hr = options.range_bandwidth;
    const double ds2 = options.mode_spatial_distance * hs * options.mode_spatial_distance * hs;
    const double dr2 = options.mode_distance * hr * options.mode_distance * hr;
    auto close_modes = [&](Index a, Index b) {
        const float* p = modes.data() + a * k;
        const float* q = modes.data() + b * k;
        const double dx = double(p[0]) - q[0], dy = double(p[1]) - q[1];
        if (dx * dx + dy * dy > ds2) return false;
        double d2 = 0;
        for (int ch = 0; ch < C; ++ch) {
            const double d = double(p[2 + ch]) - q[2 + ch];
            d2 += d * d;
        }
        return d2 <= dr2;
    };
#if defined(_OPENMP)
    int T = threads > 0 ? threads : omp_get_max_threads();
#else
    int T = 1;
    (void)threads;
#endif
    // Bands of at least 16 rows and 2^15 pixels: fewer seams, and small images stay serial.
    T = static_cast<int>(std::clamp<Index>(std::min(H / 16, n >> 15), 1, std::max(1, T)));
    std::vector<Index> band(static_cast<std::size_t>(T) + 1);
    for (int b = 0; b <= T; ++b) band[std::size_t(b)] = H * b / T;

    // (b) Pixel level: join 4-neighbours whose modes are within the bandwidths, band by band.
    s.labels.resize(static_cast<std::size_t>(n));
    std::int32_t* parent = s.labels.data();
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) num_threads(T)
#endif
    for (int b = 0; b < T; ++b) {
        const Index y0 = band[std::size_t(b)], y1 = band[std::size_t(b) + 1];
        for (Index i = y0 * W; i < y1 * W; ++i) parent[i] = static_cast<std::int32_t>(i);
        for (Index y = y0; y < y1; ++y)
            for (Index x = 0; x < W; ++x) {
                const Index i = y * W + x;
                if (x + 1 < W && close_modes(i, i + 1)) join(parent, std::int32_t(i), std::int32_t(i + 1));
                if (y + 1 < y1 && close_modes(i, i + W)) join(parent, std::int32_t(i), std::int32_t(i + W));
            }
    }
    // The seams, then the roots they re-linked (in increasing order: each points at a smaller
    // pixel whose root is final), then every pixel to its root in parallel (parent[i] < i).
    std::vector<std::int32_t> relinked;
    for (int b = 1; b < T; ++b) {
        const Index y = band[std::size_t(b)] - 1;
        for (Index x = 0; x < W; ++x) {
            const Index i = y * W + x;
            if (close_modes(i, i + W)) {
                const std::int32_t r = join(parent, std::int32_t(i), std::int32_t(i + W));
                if (r >= 0) relinked.push_back(r);
            }
        }
    }
    std::sort(relinked.begin(), relinked.end());
    for (std::int32_t r : relinked) parent[r] = find_root(parent, r);
    // Regions numbered in scan order of their first pixel (= their root).
    std::vector<std::int32_t> band_roots(static_cast<std::size_t>(T) + 1, 0);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) num_threads(T)
#endif
    for (int b = 0; b < T; ++b) {
        std::int32_t roots = 0;
        for (Index i = band[std::size_t(b)] * W; i < band[std::size_t(b) + 1] * W; ++i) {
            if (parent[i] == i)
                ++roots;
            else
                parent[i] = parent[parent[i]];  // parent[i] < i is final already (scan order)
        }
        band_roots[std::size_t(b) + 1] = roots;
    }
    for (int b = 0; b < T; ++b) band_roots[std::size_t(b) + 1] += band_roots[std::size_t(b)];
    const std::int32_t R = band_roots[std::size_t(T)];
    // Roots take -(number + 1), then every other pixel its root's number, then the roots theirs.
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) num_threads(T)
#endif
    for (int b = 0; b < T; ++b) {
        std::int32_t id = band_roots[std::size_t(b)];
        for (Index i = band[std::size_t(b)] * W; i < band[std::size_t(b) + 1] * W; ++i)
            if (parent[i] == i) parent[i] = -(id++) - 1;
    }
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) num_threads(T)
#endif
    for (int b = 0; b < T; ++b)
        for (Index i = band[std::size_t(b)] * W; i < band[std::size_t(b) + 1] * W; ++i)
            if (parent[i] >= 0) parent[i] = -parent[parent[i]] - 1;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) num_threads(T)
#endif
    for (int b = 0; b < T; ++b)
        for (Index i = band[std::size_t(b)] * W; i < band[std::size_t(b) + 1] * W; ++i)
            if (parent[i] < 0) parent[i] = -parent[i] - 1;
    std::int32_t* region = parent;  // now the region number of every pixel
    s.regions_connected = R;

    // Per region: pixel count and Σ mode colour, in scan order (serial: the sums, and so every
    // later decision, are the same for any thread count).
    Regions G;
    G.channels = C;
    G.parent.resize(std::size_t(R));
    std::iota(G.parent.begin(), G.parent.end(), std::int32_t{0});
    G.count.assign(std::size_t(R), 0.0);
    G.sum.assign(std::size_t(R) * std::size_t(C), 0.0);
    {
        // In parallel over the bands, in fixed point (int64: exact, so the sums do not depend on
        // the order, hence on the thread count). A band adds its pixels to the regions that start in
        // it directly and lists, run by run, what it adds to regions started in earlier bands.
        float top = 0;
        const float* M = modes.data();
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(T) reduction(max : top) if (n >= (Index(1) << 16))
#endif
        for (Index i = 0; i < n; ++i)
            for (int ch = 0; ch < C; ++ch) top = std::max(top, std::fabs(M[i * k + 2 + ch]));
        // 2^62 / (n · max |colour|): no sum can overflow.
        const double scale = std::ldexp(1.0, 62 - std::max(0, std::ilogb(std::max(1.0, double(top) * double(n))) + 1));
        const std::size_t uC = std::size_t(C), stride = uC + 2;
        std::vector<std::int64_t> count(std::size_t(R), 0), sum(std::size_t(R) * uC, 0);
        std::vector<std::vector<std::int64_t>> foreign(static_cast<std::size_t>(T));
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) num_threads(T)
#endif
        for (int b = 0; b < T; ++b) {
            const std::int32_t own = band_roots[std::size_t(b)];
            std::vector<std::int64_t>& out = foreign[std::size_t(b)];
            std::int64_t* run = nullptr;  // the open record of a run of one earlier region
            for (Index i = band[std::size_t(b)] * W; i < band[std::size_t(b) + 1] * W; ++i) {
                const std::int32_t r = region[i];
                const float* m = M + i * k + 2;
                std::int64_t *c, *sm;
                if (r >= own) {
                    c = &count[std::size_t(r)];
                    sm = &sum[std::size_t(r) * uC];
                    run = nullptr;
                } else {
                    if (!run || run[0] != r) {
                        out.resize(out.size() + stride, 0);
                        run = out.data() + out.size() - stride;
                        run[0] = r;
                    }
                    c = run + 1;
                    sm = run + 2;
                }
                *c += 1;
                for (std::size_t ch = 0; ch < uC; ++ch) sm[ch] += static_cast<std::int64_t>(double(m[ch]) * scale);
            }
        }
        for (const auto& out : foreign)
            for (std::size_t j = 0; j < out.size(); j += stride) {
                const std::size_t r = std::size_t(out[j]);
                count[r] += out[j + 1];
                for (std::size_t ch = 0; ch < uC; ++ch) sum[r * uC + ch] += out[j + 2 + ch];
            }
        for (std::size_t r = 0; r < std::size_t(R); ++r) {
            G.count[r] = static_cast<double>(count[r]);
            for (std::size_t ch = 0; ch < uC; ++ch) G.sum[r * uC + ch] = static_cast<double>(sum[r * uC + ch]) / scale;
        }
    }
    // Adjacent regions: per band, the distinct pairs of 4-neighbours in different regions.
    {
        std::vector<std::vector<std::uint64_t>> local(static_cast<std::size_t>(T));
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) num_threads(T)
#endif
        for (int b = 0; b < T; ++b) {
            std::vector<std::uint64_t>& out = local[std::size_t(b)];
            auto add = [&](std::int32_t a, std::int32_t c) {
                if (a == c) return;
                if (a > c) std::swap(a, c);
                const std::uint64_t e = (std::uint64_t(a) << 32) | std::uint64_t(c);
                if (out.empty() || out.back() != e) out.push_back(e);
            };
            for (Index y = band[std::size_t(b)]; y < band[std::size_t(b) + 1]; ++y)
                for (Index x = 0; x < W; ++x) {
                    const Index i = y * W + x;
                    if (x + 1 < W) add(region[i], region[i + 1]);
                    if (y + 1 < H) add(region[i], region[i + W]);
                }
            std::vector<std::uint64_t> buffer;
            sort_edges(out.data(), out.data() + out.size(), bits_for(std::size_t(R)), buffer);
            out.erase(std::unique(out.begin(), out.end()), out.end());
        }
        // The bands' sorted lists side by side, merged level by level in parallel (a serial sort of
        // all the edges took seconds at 10^8 pixels).
        std::vector<std::size_t> chunk(static_cast<std::size_t>(T) + 1, 0);
        for (int b = 0; b < T; ++b) chunk[std::size_t(b) + 1] = chunk[std::size_t(b)] + local[std::size_t(b)].size();
        G.edges.resize(chunk[std::size_t(T)]);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) num_threads(T)
#endif
        for (int b = 0; b < T; ++b) {
            std::copy(local[std::size_t(b)].begin(), local[std::size_t(b)].end(),
                      G.edges.begin() + std::ptrdiff_t(chunk[std::size_t(b)]));
            std::vector<std::uint64_t>().swap(local[std::size_t(b)]);
        }
        merge_chunks(G.edges.data(), chunk, T);
        G.edges.erase(std::unique(G.edges.begin(), G.edges.end()), G.edges.end());
    }
    s.timing.seconds_connect = since(t_connect);

    // (b) Region level: fuse adjacent regions whose mean mode colours lie within fusion_distance · hr,
    // every qualifying pair of a pass at once (transitive closure), means recomputed, until no pair
    // qualifies.
    const auto t_fusion = Clock::now();
    if (options.fusion_distance > 0) {
        const double df2 = options.fusion_distance * hr * options.fusion_distance * hr;
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
            ++s.fusion_passes;
            G.refresh_edges(T);
        }
    }
    s.regions_fused = G.roots();
    s.timing.seconds_fusion = since(t_fusion);

    // (c) Pruning: a region smaller than min_region joins the adjacent region with the closest mean
    // mode colour; passes repeat until no small region with a neighbour is left.
    const auto t_pruning = Clock::now();
    if (options.min_region > 1) {
        const double minr = static_cast<double>(options.min_region);
        const std::size_t uR = std::size_t(R);
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
    s.timing.seconds_pruning = since(t_pruning);

    // Segments by decreasing size, ties by first pixel in scan order: a segment's first pixel is
    // that of its lowest-numbered region.
    const auto t_output = Clock::now();
    std::vector<std::int32_t> segment(std::size_t(R), -1), order;
    for (std::int32_t r = 0; r < R; ++r) {
        const std::int32_t root = G.find(r);
        if (segment[std::size_t(root)] < 0) {
            segment[std::size_t(root)] = 0;
            order.push_back(root);
        }
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](std::int32_t a, std::int32_t b) { return G.count[std::size_t(a)] > G.count[std::size_t(b)]; });
    const std::size_t S = order.size();
    for (std::size_t l = 0; l < S; ++l) segment[std::size_t(order[l])] = static_cast<std::int32_t>(l);
    for (std::int32_t r = 0; r < R; ++r) segment[std::size_t(r)] = segment[std::size_t(G.find(r))];
    std::vector<Index> sizes(S, 0);
    for (std::size_t l = 0; l < S; ++l) sizes[l] = static_cast<Index>(G.count[std::size_t(order[l])]);
    G = Regions{};
    s.filtered.resize(n, C);
    const std::int32_t* seg = segment.data();
    float* filtered = s.filtered.data();
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(T)
#endif
    for (Index i = 0; i < n; ++i) {
        region[i] = seg[region[i]];
        for (int ch = 0; ch < C; ++ch) filtered[i * C + ch] = modes(i, 2 + ch);
    }
    // Mean colours: per thread in fixed point (int64, exact: the same for any thread count), then
    // added up.
    std::vector<double> colour_sum(S * std::size_t(C), 0.0), mode_sum(S * std::size_t(C), 0.0);
    {
        const std::size_t uC = std::size_t(C), nC = std::size_t(n) * uC;
        float top_mode = 0, top_colour = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(T) reduction(max                                                 \
                                                                   : top_mode, top_colour) if (n >= (Index(1) << 16))
#endif
        for (std::size_t j = 0; j < nC; ++j) {
            top_mode = std::max(top_mode, std::fabs(filtered[j]));
            top_colour = std::max(top_colour, std::fabs(pixels[j]));
        }
        auto scale_for = [&](float top) {  // 2^62 / (n · max |value|): no sum can overflow
            return std::ldexp(1.0, 62 - std::max(0, std::ilogb(std::max(1.0, double(top) * double(n))) + 1));
        };
        const double sm = scale_for(top_mode), sc = scale_for(top_colour);
        std::vector<std::int64_t> total(S * 2 * uC, 0);
#if defined(_OPENMP)
#pragma omp parallel num_threads(T)
#endif
        {
            std::vector<std::int64_t> mine(S * 2 * uC, 0);
#if defined(_OPENMP)
#pragma omp for schedule(static) nowait
#endif
            for (Index i = 0; i < n; ++i) {
                std::int64_t* t = mine.data() + std::size_t(region[i]) * 2 * uC;
                for (std::size_t ch = 0; ch < uC; ++ch) {
                    t[ch] += static_cast<std::int64_t>(double(filtered[std::size_t(i) * uC + ch]) * sm);
                    t[uC + ch] += static_cast<std::int64_t>(double(pixels[std::size_t(i) * uC + ch]) * sc);
                }
            }
#if defined(_OPENMP)
#pragma omp critical(meanshift_segment_colour_sums)
#endif
            for (std::size_t j = 0; j < total.size(); ++j) total[j] += mine[j];
        }
        for (std::size_t l = 0; l < S; ++l)
            for (std::size_t ch = 0; ch < uC; ++ch) {
                mode_sum[l * uC + ch] = static_cast<double>(total[l * 2 * uC + ch]) / sm;
                colour_sum[l * uC + ch] = static_cast<double>(total[l * 2 * uC + uC + ch]) / sc;
            }
    }
    s.sizes = std::move(sizes);
    s.colours.resize(static_cast<Index>(S), C);
    s.mode_colours.resize(static_cast<Index>(S), C);
    for (std::size_t l = 0; l < S; ++l)
        for (int ch = 0; ch < C; ++ch) {
            const double c = static_cast<double>(s.sizes[l]);
            s.colours(static_cast<Index>(l), ch) =
                static_cast<float>(colour_sum[l * std::size_t(C) + std::size_t(ch)] / c);
            s.mode_colours(static_cast<Index>(l), ch) =
                static_cast<float>(mode_sum[l * std::size_t(C) + std::size_t(ch)] / c);
        }
    s.timing.seconds_output = since(t_output);
}

}  // namespace meanshift::detail
