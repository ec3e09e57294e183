#pragma once
// Internal: GroupingMethod::ScikitLearn, the post-processing of sklearn.cluster.MeanShift
// (cluster_all=True) on the modes cluster() found. It needs the data points as well as the modes
// (intensities and labels are counted over the data), so cluster() calls it instead of
// group_modes().

#include "skeleton/src/core/prepare.hpp"

#include <meanshift/grouping.hpp>
#include <meanshift/types.hpp>

#include <vector>

namespace meanshift::detail {

/// scikit-learn's MeanShift post-processing, in prepared units (Euclidean distance = bandwidths):
///  1. intensity of mode j = the data points within distance 1 (inclusive, as radius_neighbors);
///     modes with none, or flagged in `no_support` (m flags or empty), are dropped;
///  2. the rest are ranked by intensity, descending, ties by their coordinates, lexicographically
///     descending (scikit-learn sorts (intensity, centre) with reverse=True; prepared units keep the
///     order of data units, the map being increasing per dimension);
///  3. in that order a mode is kept unless it lies within `eps` (inclusive) of a mode kept before it;
///  4. every data point is labelled with its nearest kept mode (cluster_all=True).
/// modes: m × k; points: n × k (the caller's order). Returns labels (n, of the data points),
/// centres (c × k: the kept modes in rank order) and sizes (c: points labelled with each).
/// Cost: kd-tree radius counts O(m log n + m · points within) and nearest-centre queries
/// O(n log c) on the host threads; step 3 is Alg. 6's sequential grouping of the ranked modes
/// (grid / GEMM tiles, grouping.cpp): its groups' first modes are exactly the modes kept.
/// Throws InvalidArgument when no mode has a data point within one bandwidth (scikit-learn's
/// ValueError "No point was within bandwidth ...").
Grouping group_like_sklearn(const MatrixD& modes, const std::vector<bool>& no_support, const MatrixD& points,
                            double eps);

/// The same on the caller's data (n × k row-major float, data units), mapped to prepared units by
/// prep's centre and scale (prep.data may have been moved away: only those two are read).
Grouping group_like_sklearn(const MatrixD& modes, const std::vector<bool>& no_support, const Prepared& prep,
                            const float* data, Index n, double eps);

/// The intensities of step 1 alone: for each row of `queries`, the rows of `points` within
/// Euclidean distance `radius` (inclusive). kd-tree over `points`, queries on the host threads.
std::vector<Index> count_within(const MatrixD& points, const MatrixD& queries, double radius);

/// For each row of `queries`, the index of its nearest row of `centres` (Euclidean; the lowest
/// index among exact ties is not guaranteed). kd-tree over the centres, queries on the threads.
std::vector<int> nearest_rows(const MatrixD& centres, const MatrixD& queries);

}  // namespace meanshift::detail
