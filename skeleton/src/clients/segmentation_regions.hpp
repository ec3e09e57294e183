#pragma once
// Internal: steps (b) and (c) of segment_image() and its outputs, from the filtered modes.

#include <meanshift/segmentation.hpp>

namespace meanshift::detail {

/// Steps (b) (pixel-level joining, region fusion) and (c) (pruning) of segment_image() over the
/// modes of step (a) (`modes` H·W × (2 + C), data units; `pixels` the input image), and the
/// outputs: fills s.labels, sizes, colours, mode_colours, filtered, regions_connected,
/// regions_fused, fusion_passes and s.timing's connect, fusion, pruning and output seconds.
/// The pixel-level passes run on `threads` OpenMP threads (0 = all) over bands of rows; the result
/// does not depend on the thread count (test_segmentation.cpp checks it). The options are checked
/// by the caller. Memory: the labels (int32) serve as the union-find forest over the pixels; what
/// else it allocates is per region (count, mean mode colour, adjacency), not per pixel.
void segment_regions(const MatrixF& modes, const float* pixels, const SegmentOptions& options, int threads,
                     Segmentation& s);

}  // namespace meanshift::detail
