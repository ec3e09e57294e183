// Mean-shift image segmentation (Comaniciu & Meer 2002, Sec. 4-5; the EDISON pipeline):
// filtering by the library's ascent, then union-find over pixels and regions, then pruning.
#include <meanshift/segmentation.hpp>

#include "skeleton/src/core/parallel.hpp"
#include "skeleton/src/core/stopwatch.hpp"
#include "skeleton/src/clients/segmentation_filter.hpp"
#include "skeleton/src/clients/segmentation_regions.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace meanshift {
namespace {

using detail::Clock;
using detail::since;

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
    // in 64 bits: window 100,000 overflowed (2w+1)² in int and reserved 320 GB.
    const long long reach = std::max(height, width);
    if (o.window > reach)
        throw InvalidArgument(std::string(who) + "window (--adaptive-window) = " + std::to_string(o.window) +
                              " pixels exceeds the limit of " + std::to_string(reach) +
                              ", the image's larger side (a wider window adds no pixel)");
    const long long w = o.window > 0
                            ? o.window
                            : std::clamp<long long>(static_cast<long long>(std::min(std::ceil(hs), 1e18)), 1, reach);
    const long long side = 2 * w + 1;
    const long long k = o.k > 0 ? o.k : std::max(1LL, (side * side - 1) / 4);
    std::vector<double> d(n), dist;
    dist.reserve(static_cast<std::size_t>(std::min<long long>(side * side, static_cast<long long>(n))));
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            const std::size_t i = static_cast<std::size_t>(y) * width + x;
            const float* p = pixels + i * channels;
            dist.clear();
            const int v0 = static_cast<int>(std::max<long long>(0, y - w)),
                      v1 = static_cast<int>(std::min<long long>(height - 1, y + w));
            const int u0 = static_cast<int>(std::max<long long>(0, x - w)),
                      u1 = static_cast<int>(std::min<long long>(width - 1, x + w));
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
            const std::size_t r =
                static_cast<std::size_t>(std::min<long long>(static_cast<long long>(dist.size()), k)) - 1;
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

namespace {

// The arguments checked: image size, channels, bandwidths and distances, every value finite.
void check_image(const float* pixels, int height, int width, int channels, const SegmentOptions& options)
{
    if (height <= 0 || width <= 0)
        throw InvalidArgument("segment_image: the image is " + std::to_string(width) + " x " + std::to_string(height) +
                              " pixels (empty)");
    if (channels < 1) throw InvalidArgument("segment_image: channels must be >= 1, got " + std::to_string(channels));
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
    if (n > std::numeric_limits<std::int32_t>::max())
        throw InvalidArgument("segment_image: " + std::to_string(n) + " pixels, more than 2^31 - 1 (int32 labels)");
    const int C = channels;
    {
        // The first non-finite value in scan order (found in parallel: a pass over 3·10^8 floats).
        const detail::HostThreads threads_scope(options.meanshift.backend_options.threads);
        const Index values = n * C;
        Index bad = values;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(min                                                                \
                                                    : bad)                                                             \
    num_threads(detail::host_threads()) if (values >= (Index(1) << 20))
#endif
        for (Index j = 0; j < values; ++j)
            if (!std::isfinite(pixels[static_cast<std::size_t>(j)]) && j < bad) bad = j;
        if (bad < values) {
            const Index i = bad / C;
            throw InvalidArgument("segment_image: pixel (" + std::to_string(i % width) + ", " +
                                  std::to_string(i / width) + "), channel " + std::to_string(bad % C) +
                                  " is not finite");
        }
    }
}

// (a)'s options: the joint-domain bandwidths (fixed, or per pixel with adaptive range bandwidths,
// their seconds in `seconds_bandwidths`), every pixel its own seed, no grouping, the pixel lattice.
Options filter_options(const float* pixels, int height, int width, int channels, const SegmentOptions& options,
                       std::vector<float>& adaptive_hr, double& seconds_bandwidths)
{
    const double hs = options.spatial_bandwidth, hr = options.range_bandwidth;
    const Index n = static_cast<Index>(height) * width;
    const int C = channels, k = 2 + channels;
    Options opt = options.meanshift;
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
    // Every pixel is its own seed, whatever the library's default seeding: the filtered image
    // needs each pixel's own mode.
    opt.seeding = Seeding::AllPoints;
    return opt;
}

// (a) Filtering: the ascent of every pixel in the joint domain (x, y, c_1 .. c_C) into s.ascent.
void filter_pixels(const float* pixels, int height, int width, int channels, const Options& opt, Segmentation& s)
{
    const Index n = static_cast<Index>(height) * width;
    const int C = channels, k = 2 + channels;
    // The banded ascent where it applies (fixed bandwidths, truncated kernel, lattice search): a few
    // bytes per pixel besides the modes; else cluster() over the joint-domain features.
    if (!detail::filter_image(pixels, height, width, channels, opt, s.ascent, detail::filter_band_pixels())) {
        MatrixF features(n, k);
        for (int y = 0; y < height; ++y)
            for (int x = 0; x < width; ++x) {
                const Index i = static_cast<Index>(y) * width + x;
                features(i, 0) = static_cast<float>(x);
                features(i, 1) = static_cast<float>(y);
                for (int ch = 0; ch < C; ++ch) features(i, 2 + ch) = pixels[static_cast<std::size_t>(i) * C + ch];
            }
        s.ascent = cluster(features, opt);
    }
}

}  // namespace

Segmentation segment_image(const float* pixels, int height, int width, int channels, const SegmentOptions& options)
{
    const auto t0 = Clock::now();
    check_image(pixels, height, width, channels, options);

    // (a) Filtering.
    std::vector<float> adaptive_hr;
    double seconds_bandwidths = 0;
    const Options opt = filter_options(pixels, height, width, channels, options, adaptive_hr, seconds_bandwidths);
    Segmentation s;
    s.height = height;
    s.width = width;
    s.channels = channels;
    filter_pixels(pixels, height, width, channels, opt, s);
    s.range_bandwidths = std::move(adaptive_hr);
    s.seconds_bandwidths = seconds_bandwidths;
    s.seconds_filter = since(t0);
    s.timing.seconds_prepare = s.ascent.timing.seconds_prepare;
    s.timing.seconds_iterate = s.ascent.timing.seconds_iterate;
    s.timing.seconds_group = s.ascent.timing.seconds_group;
    s.timing.seconds_bandwidths = seconds_bandwidths;

    // (b), (c) and the outputs.
    const auto t1 = Clock::now();
    detail::segment_regions(s.ascent.modes, pixels, options, options.meanshift.backend_options.threads, s);
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
