#pragma once
/// @file grouping.hpp
/// Mode grouping on the host (Alg. 4 line 10).

#include <meanshift/export.hpp>
#include <meanshift/types.hpp>

#include <vector>

namespace meanshift {

enum class GroupingMethod {
    /// Alg. 6 (groupModes) as intended: visit modes in order; a mode joins the first existing
    /// group whose representative (its first mode) lies within ε, otherwise it opens a new group.
    Sequential,
    /// Connected components (Panconi, 003): modes closer than δ are linked; groups are the
    /// components of that graph (transitive, order-independent).
    ConnectedComponents,
    /// No grouping: cluster() returns the modes (and per-mode iterations, flags) only; Result::labels,
    /// Result::centres and Result::cluster_sizes stay empty. For callers that group the modes
    /// themselves (segment_image groups pixels by adjacency) and would pay for a grouping nobody reads.
    None,
    /// scikit-learn's MeanShift post-processing (sklearn.cluster.MeanShift, cluster_all=True): the
    /// modes are ranked by intensity (the number of data points within one bandwidth of the mode;
    /// modes with none are dropped), then, in that order, a mode is kept unless it lies within ε
    /// (merge_eps; scikit-learn uses one bandwidth) of a mode already kept; each data point is
    /// labelled with its nearest kept mode, which is also its cluster's centre. With the flat
    /// profile, all points as seeds and tolerance 1e-3 it reproduces scikit-learn's result.
    /// Details (sklearn_grouping.hpp): "within" is inclusive (d ≤ r, as radius_neighbors); ties of
    /// intensity go to the lexicographically larger mode (scikit-learn's reverse sort of
    /// (intensity, centre)); the intensity is counted at the final mode (scikit-learn counts it at
    /// the position before its last step, at most `tolerance` away). Result::labels then has one
    /// label per data point whatever the seeding, Result::centres are the kept modes in rank order
    /// (not a mean of modes), Result::cluster_sizes the points labelled with each. Distances are in
    /// prepared units (bandwidth units for a shared H; the typical bandwidth for per-point H_i).
    /// Only cluster() runs it: group_modes() has no data points and throws InvalidArgument for it.
    ScikitLearn,
};

struct Grouping {
    std::vector<int> labels;  ///< m labels in [0, c); groups numbered by decreasing size
    MatrixD centres;  ///< c × k: mean of the modes of each group
    std::vector<Index> sizes;  ///< c group sizes
};

/// Groups m modes (m × k row-major, in a space where the metric is Euclidean) with radius eps
/// (> 0; eps == 0 groups only identical modes). Throws InvalidArgument for eps < 0 or non-finite.
/// GroupingMethod::None returns an empty Grouping (no labels, 0 × k centres, no sizes);
/// GroupingMethod::ScikitLearn throws InvalidArgument (it needs the data: cluster() runs it).
/// Uses a uniform grid of cell eps for k ≤ 8, so typical cost is O(m · groups in the
/// neighbourhood) rather than O(m · c).
MEANSHIFT_API Grouping group_modes(const MatrixD& modes, double eps, GroupingMethod method);

}  // namespace meanshift
