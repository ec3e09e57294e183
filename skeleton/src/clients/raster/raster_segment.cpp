// segment_raster() (include/meanshift/raster.hpp): segment_image() over a raster's B bands in the
// data's units, with its invalid pixels kept out of every valid pixel's kernel, and the per-segment
// band statistics.
#include <meanshift/errors.hpp>
#include <meanshift/raster.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace meanshift {

RasterSegmentation segment_raster(const Raster& raster, const RasterSegmentOptions& options)
{
    const int H = raster.height, W = raster.width, B = raster.bands;
    if (H < 1 || W < 1 || B < 1)
        throw InvalidArgument("segment_raster: empty raster (" + std::to_string(W) + " x " + std::to_string(H) +
                              " pixels, " + std::to_string(B) + " bands)");
    const std::size_t n = static_cast<std::size_t>(H) * static_cast<std::size_t>(W), nb = n * std::size_t(B);
    if (raster.values.size() != nb)
        throw InvalidArgument("segment_raster: " + std::to_string(raster.values.size()) + " values for " +
                              std::to_string(W) + " x " + std::to_string(H) + " pixels x " + std::to_string(B) +
                              " bands");
    if (!raster.valid.empty() && raster.valid.size() != n)
        throw InvalidArgument("segment_raster: the validity mask has " + std::to_string(raster.valid.size()) +
                              " flags for " + std::to_string(n) + " pixels");
    std::vector<double> scale(static_cast<std::size_t>(B), 1.0);
    if (!options.band_scales.empty()) {
        if (options.band_scales.size() != scale.size())
            throw InvalidArgument("segment_raster: " + std::to_string(options.band_scales.size()) +
                                  " band scales for " + std::to_string(B) + " bands");
        for (std::size_t b = 0; b < scale.size(); ++b) {
            scale[b] = options.band_scales[b];
            if (!(scale[b] > 0) || !std::isfinite(scale[b]))
                throw InvalidArgument("segment_raster: band scale " + std::to_string(b + 1) + " is " +
                                      std::to_string(scale[b]) + "; it must be positive and finite");
        }
    }
    auto valid = [&](std::size_t q) { return raster.valid.empty() || raster.valid[q] != 0; };

    // The features: each band divided by its scale; invalid pixels set beyond the reach of every
    // valid pixel's truncated kernel. A valid pixel's mode stays within the valid values' range in
    // each band (a weighted mean of valid pixels), so a gap of (cutoff + 2) · hr above the largest
    // valid value puts the invalid pixels outside every window; (b) and (c) never join them either
    // (their modes and mean mode colours lie more than hr away).
    std::vector<float> features(nb);
    std::vector<double> top(static_cast<std::size_t>(B), -std::numeric_limits<double>::infinity());
    std::size_t valid_count = 0;
    for (std::size_t q = 0; q < n; ++q) {
        if (!valid(q)) continue;
        ++valid_count;
        for (std::size_t b = 0; b < std::size_t(B); ++b) {
            const double v = double(raster.values[q * std::size_t(B) + b]) / scale[b];
            features[q * std::size_t(B) + b] = static_cast<float>(v);
            top[b] = std::max(top[b], v);
        }
    }
    if (valid_count == 0) throw InvalidArgument("segment_raster: the raster has no valid pixel (all nodata)");
    const SegmentOptions& so = options.segment;
    const double cutoff = std::isfinite(so.meanshift.cutoff) && !so.meanshift.exact ? so.meanshift.cutoff : 8.0;
    for (std::size_t q = 0; q < n; ++q)
        if (!valid(q))
            for (std::size_t b = 0; b < std::size_t(B); ++b)
                features[q * std::size_t(B) + b] = static_cast<float>(top[b] + (cutoff + 2.0) * so.range_bandwidth);

    RasterSegmentation out;
    out.segmentation = segment_image(features.data(), H, W, B, so);
    const Segmentation& s = out.segmentation;

    // Labels over valid pixels only, renumbered largest first (ties: first pixel in scan order).
    const int S = s.segments();
    std::vector<std::int64_t> count(static_cast<std::size_t>(S), 0);
    std::vector<std::size_t> first(static_cast<std::size_t>(S), n);
    for (std::size_t q = 0; q < n; ++q)
        if (valid(q)) {
            const auto l = static_cast<std::size_t>(s.labels[q]);
            ++count[l];
            first[l] = std::min(first[l], q);
        }
    std::vector<int> order;
    for (int l = 0; l < S; ++l)
        if (count[std::size_t(l)] > 0) order.push_back(l);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        if (count[std::size_t(a)] != count[std::size_t(b)]) return count[std::size_t(a)] > count[std::size_t(b)];
        return first[std::size_t(a)] < first[std::size_t(b)];
    });
    std::vector<int> relabel(static_cast<std::size_t>(S), -1);
    for (std::size_t i = 0; i < order.size(); ++i) relabel[std::size_t(order[i])] = static_cast<int>(i);
    const std::size_t segs = order.size();
    out.labels.assign(n, -1);
    out.sizes.resize(segs);
    for (std::size_t i = 0; i < segs; ++i) out.sizes[i] = count[std::size_t(order[i])];

    // Per-segment band statistics of the input values (two-pass: mean, then squared deviations).
    out.means.assign(segs * std::size_t(B), 0.0);
    out.stddevs.assign(segs * std::size_t(B), 0.0);
    out.filtered = raster.values;
    for (std::size_t q = 0; q < n; ++q) {
        if (!valid(q)) continue;
        const int l = relabel[static_cast<std::size_t>(s.labels[q])];
        out.labels[q] = l;
        for (std::size_t b = 0; b < std::size_t(B); ++b) {
            out.means[std::size_t(l) * std::size_t(B) + b] += raster.values[q * std::size_t(B) + b];
            out.filtered[q * std::size_t(B) + b] =
                static_cast<float>(double(s.filtered(Index(q), Index(b))) * scale[b]);
        }
    }
    for (std::size_t l = 0; l < segs; ++l)
        for (std::size_t b = 0; b < std::size_t(B); ++b) out.means[l * std::size_t(B) + b] /= double(out.sizes[l]);
    for (std::size_t q = 0; q < n; ++q) {
        if (out.labels[q] < 0) continue;
        const std::size_t l = static_cast<std::size_t>(out.labels[q]);
        for (std::size_t b = 0; b < std::size_t(B); ++b) {
            const double d = raster.values[q * std::size_t(B) + b] - out.means[l * std::size_t(B) + b];
            out.stddevs[l * std::size_t(B) + b] += d * d;
        }
    }
    for (std::size_t l = 0; l < segs; ++l)
        for (std::size_t b = 0; b < std::size_t(B); ++b)
            out.stddevs[l * std::size_t(B) + b] = std::sqrt(out.stddevs[l * std::size_t(B) + b] / double(out.sizes[l]));
    return out;
}

}  // namespace meanshift
