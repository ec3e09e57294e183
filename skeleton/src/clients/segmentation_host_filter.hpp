#pragma once
// Internal: step (a) of segment_image() on the host CPU for the openmp backend, as a kernel of its
// own. Each pixel's ascent reads only the pixels of its window (a disc of radius cutoff · hs
// around the mode's spatial position) straight from the image's colour planes: no prepared
// points, no search structure, no binding, no reordering, and a few bytes per pixel besides the
// modes it returns.

#include <meanshift/meanshift.hpp>

#include <string>

namespace meanshift::detail {

/// The ascent of every pixel of an H × W image with C ≤ 4 channels (`pixels` H·W × C row-major,
/// finite, checked by the caller) with the shared diagonal bandwidth (hs, hs, hr, …, hr) of
/// `options.bandwidth` and the truncated Gaussian kernel of `options.cutoff` (weights
/// exp(−d²/2) for d < cutoff in bandwidths), as the openmp backend's lattice search computes it:
/// the same steps, stopping rules (shift² ≤ tolerance² in bandwidths, at most max_iterations,
/// or fixed_iterations) and statuses; float32 sums over each mode's window (the backend sums
/// float32 terms in float64: modes agree to ~1e-5 bandwidths). One pixel's ascent never depends on
/// another's, so the result does not depend on the thread count. `band_rows` > 0: report progress
/// (and name the bands in r.search) every that many rows. Returns false, touching nothing, where
/// it does not apply: a backend other than openmp (resolved by `backend_name`), a forced topology
/// or pair form, a per-point or non-uniform range bandwidth, C > 4, an exact kernel or infinite
/// cutoff, options cluster() would refuse. Throws OutOfMemory over Options::max_memory.
bool filter_image_host(const float* pixels, int height, int width, int channels, const Options& options,
                       const std::string& backend_name, Index band_rows, Result& r);

}  // namespace meanshift::detail
