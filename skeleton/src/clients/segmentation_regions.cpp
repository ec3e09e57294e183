// Steps (b) and (c) of the segmentation (Comaniciu & Meer 2002, Sec. 5; EDISON's Connect,
// TransitiveClosure and pruning). The pixel level runs in parallel over bands of rows: each band
// joins its own pixels (union-find over int32, every root the smallest pixel index of its tree), the
// seams between bands are joined afterwards, and the components, hence the regions, are those of
// the graph whatever the thread count. Everything after the pixel level works on regions (numbered
// in scan order of their first pixel), never on pixels.
#include "skeleton/src/clients/segmentation_regions.hpp"
#include "skeleton/src/clients/segmentation_region_graph.hpp"
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

// The image in bands of rows, one per thread of the pixel-level passes.
struct Bands {
    Index H = 0, W = 0, n = 0;  ///< rows, columns, pixels
    int C = 0, k = 0;  ///< colour channels; columns of a mode (2 + C)
    int T = 1;  ///< bands (= threads of the pixel level)
    std::vector<Index> band;  ///< T + 1 row boundaries
    std::vector<std::int32_t> band_roots;  ///< T + 1: the regions that start before each band
};

Bands plan_bands(const Segmentation& s, int threads)
{
    Bands B;
    B.H = s.height;
    B.W = s.width;
    B.n = B.H * B.W;
    B.C = s.channels;
    B.k = 2 + B.C;
    const Index H = B.H, n = B.n;
#if defined(_OPENMP)
    int T = threads > 0 ? threads : omp_get_max_threads();
#else
    int T = 1;
    (void)threads;
#endif
    // Bands of at least 16 rows and 2^15 pixels: fewer seams, and small images stay serial.
    T = static_cast<int>(std::clamp<Index>(std::min(H / 16, n >> 15), 1, std::max(1, T)));
    B.T = T;
    B.band.resize(static_cast<std::size_t>(T) + 1);
    for (int b = 0; b <= T; ++b) B.band[std::size_t(b)] = H * b / T;
    return B;
}

// (b) Pixel level: joins 4-neighbours whose modes are within the bandwidths, band by band; leaves
// in s.labels the region of every pixel (numbered in scan order of their first pixel) and returns
// the number of regions.
std::int32_t connect_pixels(const MatrixF& modes, const SegmentOptions& options, Bands& B, Segmentation& s)
{
    const Index W = B.W, n = B.n;
    const int C = B.C, k = B.k, T = B.T;
    const std::vector<Index>& band = B.band;
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
    std::vector<std::int32_t>& band_roots = B.band_roots;
    band_roots.assign(static_cast<std::size_t>(T) + 1, 0);
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
    s.regions_connected = R;
    return R;
}

// Per region: pixel count and Σ mode colour, in scan order (serial: the sums, and so every later
// decision, are the same for any thread count).
void region_sums(const MatrixF& modes, const std::int32_t* region, std::int32_t R, const Bands& B, Regions& G)
{
    const Index W = B.W, n = B.n;
    const int C = B.C, k = B.k, T = B.T;
    const std::vector<Index>& band = B.band;
    const std::vector<std::int32_t>& band_roots = B.band_roots;
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
}

// Adjacent regions: per band, the distinct pairs of 4-neighbours in different regions.
void region_edges(const std::int32_t* region, std::int32_t R, const Bands& B, Regions& G)
{
    const Index H = B.H, W = B.W;
    const int T = B.T;
    const std::vector<Index>& band = B.band;
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

// Mean colours of the S segments (input pixels and filtered modes): per thread in fixed point
// (int64, exact: the same for any thread count), then added up.
void mean_colours(const float* pixels, const float* filtered, const std::int32_t* region, std::size_t S, const Bands& B,
                  std::vector<double>& colour_sum, std::vector<double>& mode_sum)
{
    const Index n = B.n;
    const int C = B.C, T = B.T;
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

// Segments by decreasing size, ties by first pixel in scan order: a segment's first pixel is that
// of its lowest-numbered region. Fills s.labels (from the regions in `region`), sizes, colours,
// mode_colours and filtered; releases G.
void write_segments(Regions& G, std::int32_t R, const MatrixF& modes, const float* pixels, std::int32_t* region,
                    const Bands& B, Segmentation& s)
{
    const Index n = B.n;
    const int C = B.C, T = B.T;
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
    std::vector<double> colour_sum(S * std::size_t(C), 0.0), mode_sum(S * std::size_t(C), 0.0);
    mean_colours(pixels, filtered, region, S, B, colour_sum, mode_sum);
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
}

}  // namespace

void segment_regions(const MatrixF& modes, const float* pixels, const SegmentOptions& options, int threads,
                     Segmentation& s)
{
    const auto t_connect = Clock::now();
    Bands B = plan_bands(s, threads);
    const std::int32_t R = connect_pixels(modes, options, B, s);
    std::int32_t* region = s.labels.data();  // now the region number of every pixel
    Regions G;
    region_sums(modes, region, R, B, G);
    region_edges(region, R, B, G);
    s.timing.seconds_connect = since(t_connect);

    const auto t_fusion = Clock::now();
    if (options.fusion_distance > 0)
        s.fusion_passes += fuse_regions(G, options.fusion_distance, options.range_bandwidth, B.T);
    s.regions_fused = G.roots();
    s.timing.seconds_fusion = since(t_fusion);

    const auto t_pruning = Clock::now();
    if (options.min_region > 1) prune_regions(G, std::size_t(R), static_cast<double>(options.min_region), B.T);
    s.timing.seconds_pruning = since(t_pruning);

    const auto t_output = Clock::now();
    write_segments(G, R, modes, pixels, region, B, s);
    s.timing.seconds_output = since(t_output);
}

}  // namespace meanshift::detail
