#pragma once
// Internal: construction of the kd-tree neighbour search (KdTree in <meanshift/neighbours.hpp>)
// with nanoflann, and its Auto estimate.

#include <meanshift/backend.hpp>
#include <meanshift/neighbours.hpp>

#include <vector>

namespace meanshift::detail {

/// Most points per leaf for k dims. A block of modes visits whole leaves, so small leaves prune more
/// but cost more nodes to walk (each node test reads 2k floats).
Index tree_leaf_size(int k);

/// Builds the kd-tree over the rows of D.points (D unchanged; D.cutoff2 finite) with leaves of at
/// most `leaf_size` points. order[r] = the row of D that becomes prepared row r (leaf order); the
/// tree's node ranges and reach boxes already refer to that sorted numbering. Throws
/// InvalidArgument when n does not fit nanoflann's 32-bit indices.
KdTree build_kdtree(const PreparedData& D, Index leaf_size, std::vector<Index>& order);

/// Estimated fraction of candidate pairs with the tree (rows of the leaves a mode sitting on a data
/// point reaches, / n), from up to 512 sampled rows of `points` (any row order).
double tree_candidate_fraction(const KdTree& tree, const MatrixD& points);

}  // namespace meanshift::detail
