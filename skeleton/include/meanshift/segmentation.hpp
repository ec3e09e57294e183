#pragma once
/// @file segmentation.hpp
/// Image segmentation by mean shift, the pipeline of Comaniciu & Meer, "Mean shift: a robust
/// approach toward feature space analysis", IEEE PAMI 24(5), 2002, Sec. 4 (discontinuity
/// preserving filtering) and Sec. 5 (segmentation), as their EDISON system implements it:
///
///  (a) **filtering**: every pixel is a point (x, y, c_1 .. c_C) of the joint spatial-range domain
///      and makes the mean-shift ascent through meanshift::cluster() with the diagonal bandwidth
///      (hs, hs, hr, …, hr). The range part of its mode is the pixel's filtered colour.
///  (b) **fusion**: 4-connected neighbouring pixels whose modes lie within the bandwidths of
///      each other (‖Δxy‖ ≤ `mode_spatial_distance` · hs and ‖Δc‖ ≤ `mode_distance` · hr) are
///      joined (union-find; EDISON's Connect, which tests the range part at 0.5 hr). Then adjacent regions whose mean mode colours lie
///      within `fusion_distance` × hr are fused, repeated until a fixed point (no adjacent pair
///      left within the threshold; EDISON's TransitiveClosure, which stops after a few passes).
///      A region's mean mode colour is the mean over its pixels of their modes' range parts.
///  (c) **pruning**: every region with fewer than `min_region` pixels is merged into the adjacent
///      region whose mean mode colour is closest (Euclidean in channel units); the merged region's
///      mean is updated and passes repeat until no region is smaller than `min_region` or a small
///      region has no neighbour (a whole image smaller than min_region stays one segment).
///
/// @code
///   meanshift::SegmentOptions so;               // hs = 3 px, hr = 6 channel units, min 40 px
///   so.meanshift.backend = "openmp";
///   meanshift::Segmentation s = meanshift::segment_image(lab.data(), h, w, 3, so);
///   // s.labels[y * w + x] in [0, s.segments()), s.colours.row(s), s.filtered.row(y * w + x)
/// @endcode

#include <meanshift/meanshift.hpp>

#include <cstddef>
#include <utility>
#include <vector>

namespace meanshift {

struct SegmentOptions {
    /// hs: spatial bandwidth in pixels, the Gaussian kernel's standard deviation over x and y.
    /// With the truncated kernel (Options::cutoff c) a pixel's window has radius c · hs pixels.
    double spatial_bandwidth = 3.0;
    /// hr: range bandwidth in the units of the caller's channels (e.g. CIELAB units), the
    /// Gaussian kernel's standard deviation over every channel.
    double range_bandwidth = 6.0;
    /// Regions with fewer pixels than this are merged into their most similar neighbour (c).
    /// 0 or 1 = no pruning.
    Index min_region = 40;
    /// (b), pixel level: neighbouring pixels are joined when their modes differ by at most
    /// `mode_distance` range bandwidths in the range part (‖Δc‖ / hr; EDISON: 0.5) and at most
    /// `mode_spatial_distance` spatial bandwidths in the spatial part (‖Δxy‖ / hs).
    double mode_distance = 0.5;
    double mode_spatial_distance = 1.0;
    /// (b), region level: adjacent regions are fused while their mean mode colours differ by at
    /// most this many range bandwidths (‖Δc‖ / hr; EDISON: 0.5). 0 = no region fusion. The
    /// default 1.0 ("within the range bandwidth") gives segment counts in the hundreds on photos
    /// (docs/segmentation.md).
    double fusion_distance = 1.0;
    /// Adaptive range bandwidths (docs/segmentation.md, "Adaptive range bandwidths"):
    /// off by default. When on, pixel i's kernel has its own range bandwidth hr_i (the
    /// sample-point estimator of Comaniciu, Ramesh & Meer 2001: the bandwidth belongs to the pixel
    /// that is summed over), the spatial bandwidth stays hs for every pixel:
    ///   d_i  = the k-th smallest colour distance ‖c_i − c_j‖ from pixel i to the other pixels j of
    ///          its (2w+1) × (2w+1) window (clipped at the image border; k clamped to the window's
    ///          pixels − 1), raised to at least floor_fraction × the median of the positive d_i;
    ///   hr_i = hr · clamp(d_i / G, min_ratio, max_ratio),  G = the geometric mean of the d_i,
    /// so hr stays the typical (geometric-mean) range bandwidth: pixels in texture or on busy
    /// edges (large d_i) get wider colour kernels and are smoothed more, pixels of flat regions
    /// narrower ones. The pixel lattice search still applies unchanged: its window depends on the
    /// spatial bandwidth only, which is fixed; the range cutoff is tested per pair with hr_j. The
    /// fusion steps (b) and (c) keep the global hr. See adaptive_range_bandwidths().
    struct AdaptiveRange {
        bool enabled = false;
        /// Neighbour rank k >= 1; 0 = default: a quarter of the window's other pixels (12 for w = 3).
        int k = 0;
        /// Window radius w in pixels (>= 1); 0 = default: ceil(hs), clamped to max(height, width).
        /// At most max(height, width), the image's larger side (a wider window adds no pixel):
        /// larger values throw InvalidArgument naming window, the value and that limit.
        int window = 0;
        /// Floor for flat areas (d_i = 0 where k or more window pixels have the same colour), in [0, 1].
        double floor_fraction = 0.1;
        /// Bounds of hr_i / hr (0 < min_ratio <= 1 <= max_ratio).
        double min_ratio = 0.25;
        double max_ratio = 4.0;
    };
    AdaptiveRange adaptive;
    /// Ascent options: backend, topology, tolerance, max_iterations, cutoff, search, progress.
    /// `bandwidth` is ignored (set from hs and hr), and so are `grouping` (GroupingMethod::None:
    /// the pipeline groups the pixels itself) and `lattice` (the image's pixel lattice, which
    /// search = Auto uses: each mode visits the pixels of its window of radius cutoff · hs).
    /// Defaults (filtering_defaults()): cutoff 4, tolerance 0.3 bandwidths, at most 5 iterations.
    Options meanshift = filtering_defaults();

    /// The filtering defaults, those of the `meanshift segment` command and the Python
    /// meanshift.segment(): the ascent stops as OpenCV's pyrMeanShiftFiltering does (at most 5
    /// iterations, or a shift under 0.3 bandwidths: 0.9 px and 1.8 CIELAB units at hs 3, hr 6), and
    /// the truncated kernel's cutoff is 4 bandwidths (labels ARI 1.0 against the exact kernel on
    /// china.jpg and flower.jpg at 20,000 pixels with these stopping rules; docs/segmentation.md).
    static Options filtering_defaults()
    {
        Options o;
        o.cutoff = 4.0;
        o.tolerance = 0.3;
        o.max_iterations = 5;
        return o;
    }
};

/// Wall-clock seconds (steady clock) of each stage of segment_image(), in the order they run, and
/// the process's peak memory. The filtering stages (a) sum over the image's bands of rows where the
/// ascent runs band by band (docs/segmentation.md, "Memory"); each is also in Segmentation::ascent.timing.
struct SegmentTiming {
    /// (a) checks, the joint-domain features in prepared units, the pixel lattice search, binding
    /// (host backends: the kernels' float32 layout; GPU backends: uploads, context creation) and the
    /// first modes. Result::timing.seconds_prepare of the ascent.
    double seconds_prepare = 0;
    /// (a) the mean-shift iterations and the read-back of the modes (Result::timing.seconds_iterate).
    double seconds_iterate = 0;
    /// (a) the modes back to data units and the per-pixel iteration counts and flags
    /// (Result::timing.seconds_group; no grouping of modes runs: GroupingMethod::None).
    double seconds_group = 0;
    /// (a) adaptive range bandwidths (SegmentOptions::AdaptiveRange; 0 when off).
    double seconds_bandwidths = 0;
    /// (b) pixel level: union-find of 4-neighbouring pixels whose modes are close.
    double seconds_connect = 0;
    /// (b) region level: fusion of adjacent regions of close mean mode colour, to its fixed point.
    double seconds_fusion = 0;
    /// (c) pruning of regions under SegmentOptions::min_region pixels.
    double seconds_pruning = 0;
    /// Labels numbered by size, sizes, colours, mode colours and the filtered image.
    double seconds_output = 0;
    /// Peak resident memory of the process when segment_image() returned (bytes; getrusage's
    /// ru_maxrss via meanshift::peak_memory_bytes(); 0 where the platform does not report it). A
    /// whole-process figure: it includes the caller's image and whatever ran before.
    std::size_t peak_memory_bytes = 0;
    /// Every stage with its seconds in run order, for reports and JSON:
    /// prepare, iterate, group, bandwidths, connect, fusion, pruning, output.
    std::vector<std::pair<const char*, double>> stages() const
    {
        return {{"prepare", seconds_prepare},       {"iterate", seconds_iterate}, {"group", seconds_group},
                {"bandwidths", seconds_bandwidths}, {"connect", seconds_connect}, {"fusion", seconds_fusion},
                {"pruning", seconds_pruning},       {"output", seconds_output}};
    }
};

struct Segmentation {
    int height = 0, width = 0, channels = 0;
    /// H·W segment labels, row-major (pixel (x, y) at y·W + x), in [0, S). Segments are numbered
    /// largest first (ties: the one whose first pixel comes first in scan order).
    std::vector<int> labels;
    /// S × C: mean input colour of each segment's pixels (the caller's channel units).
    MatrixF colours;
    /// S × C: mean filtered colour (mode colour) of each segment's pixels: what (b) and (c) compare.
    MatrixF mode_colours;
    std::vector<Index> sizes;  ///< S pixel counts, decreasing
    /// H·W × C: the filtered image, each pixel replaced by the range part of its mode.
    MatrixF filtered;
    /// The ascent of step (a): modes (H·W × (2 + C), data units: x, y in pixels, then channels),
    /// iterations, convergence flags, timing, backend, search. Its labels/centres are empty
    /// (GroupingMethod::None): the segmentation is `labels`.
    Result ascent;
    /// H·W per-pixel range bandwidths hr_i when SegmentOptions::adaptive is on; empty otherwise.
    std::vector<float> range_bandwidths;
    Index regions_connected = 0;  ///< regions after the pixel-level joining of (b)
    Index regions_fused = 0;  ///< regions after the region fusion of (b)
    int fusion_passes = 0;  ///< passes of the region fusion until its fixed point
    double seconds_filter = 0;  ///< (a), including the ascent's preparation and grouping
    double seconds_bandwidths = 0;  ///< the adaptive range bandwidths (part of seconds_filter; 0 when off)
    double seconds_regions = 0;  ///< (b) + (c) + the outputs
    /// Per-stage seconds of (a), (b), (c) and the outputs, and the peak memory (SegmentTiming).
    SegmentTiming timing;
    int segments() const noexcept { return static_cast<int>(sizes.size()); }
};

/// The per-pixel range bandwidths of SegmentOptions::AdaptiveRange for an H × W image with C
/// channels (`pixels` as for segment_image()), `hs` and `hr` as there: H·W values hr_i in the
/// channels' units, with geometric mean hr before the clamp. O(H·W·(2w+1)²·C) time. Throws
/// InvalidArgument for an empty image, a non-finite pixel, hs or hr <= 0 or not finite, k < 0,
/// window < 0 or > max(H, W), floor_fraction outside [0, 1], min_ratio outside (0, 1] or max_ratio < 1, and an
/// image whose every d_i is 0 (a single colour everywhere: no scale to adapt to).
MEANSHIFT_API std::vector<float> adaptive_range_bandwidths(const float* pixels, int height, int width, int channels,
                                                           double hs, double hr,
                                                           const SegmentOptions::AdaptiveRange& options);

/// Segments an H × W image with C channels: `pixels` is H·W × C row-major float32 (pixel (x, y)
/// at row y·W + x), finite. The caller chooses the colour space (C & M recommend CIELUV or
/// CIELAB, where Euclidean distance follows perceived difference). Throws InvalidArgument for
/// height or width ≤ 0, channels < 1, a non-finite pixel, hs or hr ≤ 0 or not finite,
/// min_region < 0, mode_distance, mode_spatial_distance or fusion_distance < 0 or not finite, bad
/// adaptive options (adaptive_range_bandwidths()); otherwise what
/// meanshift::cluster() throws (InvalidArgument, BackendUnavailable, DeviceError).
MEANSHIFT_API Segmentation segment_image(const float* pixels, int height, int width, int channels,
                                         const SegmentOptions& options);

/// The same for an H·W × C matrix; its column count is C. Throws InvalidArgument when
/// pixels.rows() != height · width (wrong image size or channel layout).
MEANSHIFT_API Segmentation segment_image(const Eigen::Ref<const MatrixF>& pixels, int height, int width,
                                         const SegmentOptions& options);

}  // namespace meanshift
