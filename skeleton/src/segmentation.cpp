// Mean-shift image segmentation (Comaniciu & Meer 2002, Sec. 4-5; the EDISON pipeline):
// filtering by the library's ascent, then union-find over pixels and regions, then pruning.
#include <meanshift/segmentation.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace meanshift {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Union-find with path halving and union by size.
class DisjointSets {
public:
    explicit DisjointSets(std::size_t n) : parent_(n), size_(n, 1)
    {
        std::iota(parent_.begin(), parent_.end(), std::uint32_t{0});
    }
    std::uint32_t find(std::uint32_t a)
    {
        while (parent_[a] != a) {
            parent_[a] = parent_[parent_[a]];
            a = parent_[a];
        }
        return a;
    }
    // Returns the new root, or the common root if a and b were already joined.
    std::uint32_t unite(std::uint32_t a, std::uint32_t b)
    {
        a = find(a);
        b = find(b);
        if (a == b) return a;
        if (size_[a] < size_[b]) std::swap(a, b);
        parent_[b] = a;
        size_[a] += size_[b];
        return a;
    }

private:
    std::vector<std::uint32_t> parent_;
    std::vector<std::uint32_t> size_;
};

void check_positive(double v, const char* what)
{
    if (!(v > 0) || !std::isfinite(v))
        throw InvalidArgument(std::string("segment_image: ") + what + " must be > 0 and finite, got " +
                              std::to_string(v));
}

void check_non_negative(double v, const char* what)
{
    if (!(v >= 0) || !std::isfinite(v))
        throw InvalidArgument(std::string("segment_image: ") + what + " must be >= 0 and finite, got " +
                              std::to_string(v));
}

// Regions over the pixels: a root per pixel (union-find) and, per root, the pixel count and the
// sum of the pixels' mode colours. Adjacency comes from the unique pairs of 4-neighbouring
// pixels that lie in different regions.
struct Regions {
    int channels = 0;
    DisjointSets sets;
    std::vector<double> count;  // by root
    std::vector<double> sum;    // by root, channels each
    std::vector<std::uint64_t> edges;  // (a << 32 | b) of neighbouring pixels' roots, a < b

    Regions(std::size_t n, int c) : channels(c), sets(n), count(n, 1.0), sum(n * static_cast<std::size_t>(c), 0.0) {}

    std::uint32_t unite(std::uint32_t a, std::uint32_t b)
    {
        a = sets.find(a);
        b = sets.find(b);
        if (a == b) return a;
        const std::uint32_t r = sets.unite(a, b);
        const std::uint32_t o = r == a ? b : a;
        count[r] += count[o];
        for (int ch = 0; ch < channels; ++ch) sum[std::size_t(r) * channels + ch] += sum[std::size_t(o) * channels + ch];
        return r;
    }

    // Squared distance of the mean mode colours of roots a and b.
    double distance2(std::uint32_t a, std::uint32_t b) const
    {
        double d2 = 0;
        for (int ch = 0; ch < channels; ++ch) {
            const double d = sum[std::size_t(a) * channels + ch] / count[a] - sum[std::size_t(b) * channels + ch] / count[b];
            d2 += d * d;
        }
        return d2;
    }

    // Maps the edges to the current roots, drops those inside one region and duplicates.
    void refresh_edges()
    {
        std::size_t out = 0;
        for (std::uint64_t e : edges) {
            std::uint32_t a = sets.find(static_cast<std::uint32_t>(e >> 32));
            std::uint32_t b = sets.find(static_cast<std::uint32_t>(e & 0xffffffffu));
            if (a == b) continue;
            if (a > b) std::swap(a, b);
            edges[out++] = (std::uint64_t(a) << 32) | b;
        }
        edges.resize(out);
        std::sort(edges.begin(), edges.end());
        edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    }
};

}  // namespace

std::vector<float> adaptive_range_bandwidths(const float* pixels, int height, int width, int channels, double hs,
                                             double hr, const SegmentOptions::AdaptiveRange& o)
{
    const char* who = "segment_image: adaptive range bandwidths: ";
    if (height <= 0 || width <= 0)
        throw InvalidArgument("segment_image: the image is " + std::to_string(width) + " x " + std::to_string(height) +
                              " pixels (empty)");
    if (channels < 1) throw InvalidArgument("segment_image: channels must be >= 1, got " + std::to_string(channels));
    if (pixels == nullptr) throw InvalidArgument("segment_image: pixels is null");
    check_positive(hs, "spatial_bandwidth (hs)");
    check_positive(hr, "range_bandwidth (hr)");
    if (o.k < 0) throw InvalidArgument(std::string(who) + "k must be >= 0 (0 = default), got " + std::to_string(o.k));
    if (o.window < 0)
        throw InvalidArgument(std::string(who) + "window must be >= 0 (0 = ceil(hs)), got " + std::to_string(o.window));
    if (!(o.floor_fraction >= 0 && o.floor_fraction <= 1))
        throw InvalidArgument(std::string(who) + "floor_fraction must be in [0, 1], got " +
                              std::to_string(o.floor_fraction));
    if (!(o.min_ratio > 0 && o.min_ratio <= 1) || !(o.max_ratio >= 1) || !std::isfinite(o.max_ratio))
        throw InvalidArgument(std::string(who) + "need 0 < min_ratio <= 1 <= max_ratio < inf, got " +
                              std::to_string(o.min_ratio) + " and " + std::to_string(o.max_ratio));
    const std::size_t n = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
    for (std::size_t i = 0; i < n * static_cast<std::size_t>(channels); ++i)
        if (!std::isfinite(pixels[i]))
            throw InvalidArgument("segment_image: pixel (" + std::to_string((i / channels) % width) + ", " +
                                  std::to_string((i / channels) / width) + "), channel " +
                                  std::to_string(i % channels) + " is not finite");
    // A window reaching past the image's larger side adds no pixel (the window is clipped at the
    // border): an explicit one is refused, the default ceil(hs) clamped. The default k of the
    // clamped window, (side² − 1) / 4 ≥ H·W − 1, still takes the farthest pixel, as before. All
    // in 64 bits: window 100,000 overflowed (2w+1)² in int and reserved 320 GB (issue 26, item 6).
    const long long reach = std::max(height, width);
    if (o.window > reach)
        throw InvalidArgument(std::string(who) + "window (--adaptive-window) = " + std::to_string(o.window) +
                              " pixels exceeds the limit of " + std::to_string(reach) +
                              ", the image's larger side (a wider window adds no pixel)");
    const long long w = o.window > 0 ? o.window : std::clamp<long long>(static_cast<long long>(std::min(std::ceil(hs), 1e18)), 1, reach);
    const long long side = 2 * w + 1;
    const long long k = o.k > 0 ? o.k : std::max(1LL, (side * side - 1) / 4);
    std::vector<double> d(n), dist;
    dist.reserve(static_cast<std::size_t>(std::min<long long>(side * side, static_cast<long long>(n))));
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            const std::size_t i = static_cast<std::size_t>(y) * width + x;
            const float* p = pixels + i * channels;
            dist.clear();
            const int v0 = static_cast<int>(std::max<long long>(0, y - w)), v1 = static_cast<int>(std::min<long long>(height - 1, y + w));
            const int u0 = static_cast<int>(std::max<long long>(0, x - w)), u1 = static_cast<int>(std::min<long long>(width - 1, x + w));
            for (int v = v0; v <= v1; ++v)
                for (int u = u0; u <= u1; ++u) {
                    if (u == x && v == y) continue;
                    const float* q = pixels + (static_cast<std::size_t>(v) * width + u) * channels;
                    double s = 0;
                    for (int ch = 0; ch < channels; ++ch) {
                        const double t = double(p[ch]) - q[ch];
                        s += t * t;
                    }
                    dist.push_back(s);
                }
            if (dist.empty()) {  // a 1 x 1 image
                d[i] = 0;
                continue;
            }
            const std::size_t r = static_cast<std::size_t>(std::min<long long>(static_cast<long long>(dist.size()), k)) - 1;
            std::nth_element(dist.begin(), dist.begin() + static_cast<std::ptrdiff_t>(r), dist.end());
            d[i] = std::sqrt(dist[r]);
        }
    std::vector<double> pos;
    for (double v : d)
        if (v > 0) pos.push_back(v);
    if (pos.empty())
        throw InvalidArgument(std::string(who) +
                              "every pixel's window has k or more pixels of its own colour (a flat image): no "
                              "colour scale to adapt to; use the fixed range bandwidth");
    std::nth_element(pos.begin(), pos.begin() + static_cast<std::ptrdiff_t>(pos.size() / 2), pos.end());
    const double floor = std::max(o.floor_fraction * pos[pos.size() / 2], 1e-12 * pos[pos.size() / 2]);
    double mean_log = 0;
    for (double& v : d) {
        v = std::max(v, floor);
        mean_log += std::log(v);
    }
    const double G = std::exp(mean_log / static_cast<double>(n));
    std::vector<float> out(n);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<float>(hr * std::clamp(d[i] / G, o.min_ratio, o.max_ratio));
    return out;
}

Segmentation segment_image(const float* pixels, int height, int width, int channels, const SegmentOptions& options)
{
    const auto t0 = Clock::now();
    if (height <= 0 || width <= 0)
        throw InvalidArgument("segment_image: the image is " + std::to_string(width) + " x " + std::to_string(height) +
                              " pixels (empty)");
    if (channels < 1)
        throw InvalidArgument("segment_image: channels must be >= 1, got " + std::to_string(channels));
    if (pixels == nullptr) throw InvalidArgument("segment_image: pixels is null");
    const double hs = options.spatial_bandwidth, hr = options.range_bandwidth;
    check_positive(hs, "spatial_bandwidth (hs)");
    check_positive(hr, "range_bandwidth (hr)");
    if (options.min_region < 0)
        throw InvalidArgument("segment_image: min_region must be >= 0, got " + std::to_string(options.min_region));
    check_non_negative(options.mode_distance, "mode_distance");
    check_non_negative(options.mode_spatial_distance, "mode_spatial_distance");
    check_non_negative(options.fusion_distance, "fusion_distance");
    const Index n = static_cast<Index>(height) * width;
    if (n >= (Index{1} << 32) - 1)
        throw InvalidArgument("segment_image: " + std::to_string(n) + " pixels, more than 2^32 - 2");
    const int C = channels, k = 2 + channels;
    const std::size_t un = static_cast<std::size_t>(n);

    // (a) Filtering: the ascent of every pixel in the joint domain (x, y, c_1 .. c_C).
    MatrixF features(n, k);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            const Index i = static_cast<Index>(y) * width + x;
            features(i, 0) = static_cast<float>(x);
            features(i, 1) = static_cast<float>(y);
            for (int ch = 0; ch < C; ++ch) {
                const float v = pixels[static_cast<std::size_t>(i) * C + ch];
                if (!std::isfinite(v))
                    throw InvalidArgument("segment_image: pixel (" + std::to_string(x) + ", " + std::to_string(y) +
                                          "), channel " + std::to_string(ch) + " is not finite");
                features(i, 2 + ch) = v;
            }
        }
    Options opt = options.meanshift;
    std::vector<float> adaptive_hr;
    double seconds_bandwidths = 0;
    if (options.adaptive.enabled) {
        // Per-pixel range bandwidths (the sample-point estimator), spatial fixed: the lattice
        // window (radius cutoff · max_i hs = cutoff · hs) is the same as with the fixed bandwidths.
        const auto tb = Clock::now();
        adaptive_hr = adaptive_range_bandwidths(pixels, height, width, channels, hs, hr, options.adaptive);
        seconds_bandwidths = since(tb);
        MatrixD H(n, k);
        for (Index i = 0; i < n; ++i) {
            H(i, 0) = H(i, 1) = hs;
            for (int ch = 0; ch < C; ++ch) H(i, 2 + ch) = adaptive_hr[static_cast<std::size_t>(i)];
        }
        opt.bandwidth = Bandwidth::per_point(std::move(H));
    } else {
        std::vector<double> h(static_cast<std::size_t>(k), hr);
        h[0] = h[1] = hs;
        opt.bandwidth = Bandwidth::diagonal(h);
    }
    // The pipeline groups pixels itself (b, c): the library's grouping of H·W nearly distinct
    // modes would cost seconds on a photo for labels nobody reads.
    opt.grouping = GroupingMethod::None;
    // The pixels are a row-major lattice: a mode's neighbours are the pixels of its window, found
    // without a sort (NeighbourSearch::Lattice; Auto picks it, Grid/BruteForce stay available).
    opt.lattice = PixelLattice{height, width, 0, 1};

    Segmentation s;
    s.height = height;
    s.width = width;
    s.channels = C;
    // Every pixel is its own seed, whatever the library's default seeding: the filtered image
    // needs each pixel's own mode (all points, not explicit seeds: those would be validated and
    // copied again).
    opt.seeding = Seeding::AllPoints;
    s.ascent = cluster(features, opt);
    s.range_bandwidths = std::move(adaptive_hr);
    s.seconds_bandwidths = seconds_bandwidths;
    s.seconds_filter = since(t0);
    s.timing.seconds_prepare = s.ascent.timing.seconds_prepare;
    s.timing.seconds_iterate = s.ascent.timing.seconds_iterate;
    s.timing.seconds_group = s.ascent.timing.seconds_group;
    s.timing.seconds_bandwidths = seconds_bandwidths;
    const auto t1 = Clock::now();
    const MatrixF& modes = s.ascent.modes;

    // (b) Pixel level: join 4-neighbours whose modes are within the bandwidths.
    Regions R(un, C);
    for (std::size_t i = 0; i < un; ++i)
        for (int ch = 0; ch < C; ++ch) R.sum[i * C + ch] = modes(static_cast<Index>(i), 2 + ch);
    const double ds2 = options.mode_spatial_distance * hs * options.mode_spatial_distance * hs;
    const double dr2 = options.mode_distance * hr * options.mode_distance * hr;
    auto close_modes = [&](Index a, Index b) {
        const float* p = &modes(a, 0);
        const float* q = &modes(b, 0);
        const double dx = double(p[0]) - q[0], dy = double(p[1]) - q[1];
        if (dx * dx + dy * dy > ds2) return false;
        double d2 = 0;
        for (int ch = 0; ch < C; ++ch) {
            const double d = double(p[2 + ch]) - q[2 + ch];
            d2 += d * d;
        }
        return d2 <= dr2;
    };
    std::vector<std::uint64_t> pixel_edges;  // neighbouring pixels left apart
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            const Index i = static_cast<Index>(y) * width + x;
            if (x + 1 < width) {
                if (close_modes(i, i + 1)) R.unite(std::uint32_t(i), std::uint32_t(i + 1));
                else pixel_edges.push_back((std::uint64_t(i) << 32) | std::uint64_t(i + 1));
            }
            if (y + 1 < height) {
                if (close_modes(i, i + width)) R.unite(std::uint32_t(i), std::uint32_t(i + width));
                else pixel_edges.push_back((std::uint64_t(i) << 32) | std::uint64_t(i + width));
            }
        }
    R.edges = std::move(pixel_edges);
    R.refresh_edges();
    {
        Index roots = 0;
        for (std::size_t i = 0; i < un; ++i) roots += R.sets.find(std::uint32_t(i)) == i ? 1 : 0;
        s.regions_connected = roots;
    }

    s.timing.seconds_connect = since(t1);
    const auto t_fusion = Clock::now();

    // (b) Region level: fuse adjacent regions whose mean mode colours lie within fusion_distance · hr,
    // every qualifying pair of a pass at once (transitive closure), means recomputed, until no pair
    // qualifies.
    if (options.fusion_distance > 0) {
        const double df2 = options.fusion_distance * hr * options.fusion_distance * hr;
        for (;;) {
            std::vector<std::pair<std::uint32_t, std::uint32_t>> joins;
            for (std::uint64_t e : R.edges) {
                const std::uint32_t a = std::uint32_t(e >> 32), b = std::uint32_t(e & 0xffffffffu);
                if (R.distance2(a, b) <= df2) joins.emplace_back(a, b);
            }
            if (joins.empty()) break;
            ++s.fusion_passes;
            for (const auto& j : joins) R.unite(j.first, j.second);
            R.refresh_edges();
        }
    }
    {
        Index roots = 0;
        for (std::size_t i = 0; i < un; ++i) roots += R.sets.find(std::uint32_t(i)) == i ? 1 : 0;
        s.regions_fused = roots;
    }

    s.timing.seconds_fusion = since(t_fusion);
    const auto t_pruning = Clock::now();

    // (c) Pruning: a region smaller than min_region joins the adjacent region with the closest mean
    // mode colour; passes repeat until no small region with a neighbour is left.
    if (options.min_region > 1) {
        const double minr = static_cast<double>(options.min_region);
        for (;;) {
            // Adjacency lists (CSR) of the current regions.
            std::vector<std::uint32_t> first(un + 1, 0), adj(R.edges.size() * 2);
            for (std::uint64_t e : R.edges) {
                ++first[(e >> 32) + 1];
                ++first[(e & 0xffffffffu) + 1];
            }
            for (std::size_t i = 0; i < un; ++i) first[i + 1] += first[i];
            {
                std::vector<std::uint32_t> fill(first.begin(), first.end() - 1);
                for (std::uint64_t e : R.edges) {
                    const std::uint32_t a = std::uint32_t(e >> 32), b = std::uint32_t(e & 0xffffffffu);
                    adj[fill[a]++] = b;
                    adj[fill[b]++] = a;
                }
            }
            std::vector<std::uint32_t> small;
            for (std::size_t i = 0; i < un; ++i)
                if (R.sets.find(std::uint32_t(i)) == i && R.count[i] < minr && first[i + 1] > first[i])
                    small.push_back(std::uint32_t(i));
            if (small.empty()) break;
            std::stable_sort(small.begin(), small.end(),
                             [&](std::uint32_t a, std::uint32_t b) { return R.count[a] < R.count[b]; });
            bool merged = false;
            for (std::uint32_t r : small) {
                if (R.sets.find(r) != r || R.count[r] >= minr) continue;  // changed in this pass
                std::uint32_t best = r;
                double best_d2 = 0;
                for (std::uint32_t j = first[r]; j < first[r + 1]; ++j) {
                    const std::uint32_t q = R.sets.find(adj[j]);
                    if (q == r) continue;
                    const double d2 = R.distance2(r, q);
                    if (best == r || d2 < best_d2 || (d2 == best_d2 && q < best)) {
                        best = q;
                        best_d2 = d2;
                    }
                }
                if (best == r) continue;
                R.unite(r, best);
                merged = true;
            }
            R.refresh_edges();
            if (!merged) break;
        }
    }

    s.timing.seconds_pruning = since(t_pruning);
    const auto t_output = Clock::now();

    // Labels: segments by decreasing size, ties by first pixel in scan order.
    std::vector<std::uint32_t> root(un);
    std::vector<int> id_of_root(un, -1);
    std::vector<std::uint32_t> order;  // roots in scan order of their first pixel
    for (std::size_t i = 0; i < un; ++i) {
        root[i] = R.sets.find(std::uint32_t(i));
        if (id_of_root[root[i]] < 0) {
            id_of_root[root[i]] = 0;
            order.push_back(root[i]);
        }
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return R.count[a] > R.count[b]; });
    const std::size_t S = order.size();
    for (std::size_t l = 0; l < S; ++l) id_of_root[order[l]] = static_cast<int>(l);
    s.labels.resize(un);
    s.sizes.assign(S, 0);
    MatrixD colour_sum = MatrixD::Zero(static_cast<Index>(S), C);
    MatrixD mode_sum = MatrixD::Zero(static_cast<Index>(S), C);
    s.filtered.resize(n, C);
    for (std::size_t i = 0; i < un; ++i) {
        const int l = id_of_root[root[i]];
        s.labels[i] = l;
        ++s.sizes[static_cast<std::size_t>(l)];
        for (int ch = 0; ch < C; ++ch) {
            const float m = modes(static_cast<Index>(i), 2 + ch);
            s.filtered(static_cast<Index>(i), ch) = m;
            mode_sum(l, ch) += m;
            colour_sum(l, ch) += pixels[i * C + ch];
        }
    }
    s.colours.resize(static_cast<Index>(S), C);
    s.mode_colours.resize(static_cast<Index>(S), C);
    for (std::size_t l = 0; l < S; ++l)
        for (int ch = 0; ch < C; ++ch) {
            const double c = static_cast<double>(s.sizes[l]);
            s.colours(static_cast<Index>(l), ch) = static_cast<float>(colour_sum(static_cast<Index>(l), ch) / c);
            s.mode_colours(static_cast<Index>(l), ch) = static_cast<float>(mode_sum(static_cast<Index>(l), ch) / c);
        }
    s.timing.seconds_output = since(t_output);
    s.seconds_regions = since(t1);
    s.timing.peak_memory_bytes = peak_memory_bytes();
    return s;
}

Segmentation segment_image(const Eigen::Ref<const MatrixF>& pixels, int height, int width,
                           const SegmentOptions& options)
{
    if (height <= 0 || width <= 0)
        throw InvalidArgument("segment_image: the image is " + std::to_string(width) + " x " + std::to_string(height) +
                              " pixels (empty)");
    if (pixels.rows() != static_cast<Index>(height) * width)
        throw InvalidArgument("segment_image: " + std::to_string(pixels.rows()) + " rows of pixels for a " +
                              std::to_string(width) + " x " + std::to_string(height) + " image (want " +
                              std::to_string(static_cast<Index>(height) * width) + ")");
    if (pixels.cols() < 1) throw InvalidArgument("segment_image: the pixels have no channel");
    const MatrixF copy = pixels;  // contiguous row-major
    return segment_image(copy.data(), height, width, static_cast<int>(copy.cols()), options);
}

}  // namespace meanshift
