#pragma once
// Internal: step (a) of segment_image(), the mean-shift filtering of an image's pixels in the
// joint spatial-range domain, run band by band of rows so that its memory stays a few bytes per
// pixel on top of the modes it returns (docs/segmentation.md, "Memory").

#include <meanshift/meanshift.hpp>

#include <cstddef>

namespace meanshift::detail {

/// Images up to this many pixels run as one band: exactly the generic driver's computation, and
/// memory that does not matter (half a megapixel at ~300 bytes).
inline constexpr Index kFilterOneBandPixels = Index{1} << 19;
/// Larger ones run in bands of about this many pixels, and at least as many rows as the halo read
/// either side (so the halo's rows cost at most twice the band's own in preparation): 16 bytes per
/// pixel at 4 MP, 6 at 25 MP (docs/segmentation.md, "Memory").
inline constexpr Index kFilterBandPixels = Index{1} << 17;
/// The GPU backends: one band up to 8 MP (a photo's run is the driver's), bands of 4 MP beyond, so
/// that a launch still fills the device and the host holds one band's prepared rows, not the image's
/// (a 100 MP image in one band: 191 bytes per pixel on an H100's host).
inline constexpr Index kDeviceOneBandPixels = Index{1} << 23;
inline constexpr Index kDeviceBandPixels = Index{1} << 22;

/// The openmp backend (with default topology, pair form and isa) does not come here: filter_image()
/// hands it to filter_image_host() (segmentation_host_filter.hpp), whose kernel reads each mode's
/// window from the colour planes; the bands below serve the serial oracle and the GPU backends.
/// The ascent of every pixel of an H × W image with C channels (`pixels` H·W × C row-major,
/// finite, checked by the caller) with the shared diagonal bandwidth `options.bandwidth`
/// (hs, hs, hr, …), the truncated kernel of `options.cutoff` and the pixel lattice search, as
/// cluster() runs it with Seeding::AllPoints and GroupingMethod::None. It never holds the whole
/// image's prepared points: each band of rows is prepared, bound and iterated with the rows within
/// max_iterations · cutoff · hs of it (the farthest a mode can walk, plus its window), then
/// released. Fills r.modes (H·W × (2 + C), data units), iterations, converged, no_support,
/// timing, backend, topology, search, cutoff, seeding. Returns false, touching nothing, where it
/// does not apply (exact kernel, infinite cutoff, a search other than Auto or Lattice, a per-point
/// bandwidth, options cluster() would refuse, a backend without the truncated kernel, float32
/// overflow): the caller then runs cluster(). Options::max_memory is checked against this
/// path's own estimate (result, labels, filtered image, the largest band): OutOfMemory when over. `band_pixels` (0 = the defaults above; > 0 = bands of that many pixels at any image size)
/// is for tests.
/// Throws OutOfMemory naming the W × H image, the estimate `need` (bytes) and the limit when need
/// exceeds Options::max_memory (0 = the available physical memory; SIZE_MAX = no check): the
/// filtering paths' check before they allocate.
void check_filter_memory(const Options& o, Index width, Index height, double need);

/// The band size segment_image() passes to filter_image(): 0 (the default) unless a test sets it
/// (filter_band_pixels() = 4096) to run small images in many bands.
Index& filter_band_pixels() noexcept;

bool filter_image(const float* pixels, int height, int width, int channels, const Options& options, Result& r,
                  Index band_pixels = 0);

}  // namespace meanshift::detail
