#pragma once
// Internal: a spatial ordering of points (k-d order), used twice: the GPU tile layout cuts the
// data points into spatially compact tiles (kd_order), and the driver hands the modes to the
// backends in Morton order, so that a PPU's block of modes is a compact region (its PUs then meet the same points).

#include <meanshift/types.hpp>

#include <vector>

namespace meanshift::detail {

/// Permutation of the rows of `points` (n × k) in k-d order: the range is split along its widest
/// dimension at a multiple of `leaf` rows near the median, recursively, down to ranges of ≤ leaf
/// rows; so every aligned run of `leaf` indices is one k-d cell. leaf ≥ 1.
std::vector<Index> kd_order(const MatrixD& points, int leaf);

/// Permutation of the rows of `points` (m × k) along a Morton (Z-order) curve over the bounding
/// box: each coordinate quantised to ⌊63 / k⌋ bits (at most 21; for k > 63 only the first 63
/// dimensions count), keys sorted. O(m log m) with sequential access: cheaper than kd_order for
/// the modes, whose order only needs to be compact per block of about a thousand.
std::vector<Index> morton_order(const MatrixD& points);

}  // namespace meanshift::detail
