#pragma once
// Internal: turns user data + bandwidth model into the PreparedData a backend binds, and maps
// positions between data units and prepared units.

#include <meanshift/backend.hpp>
#include <meanshift/bandwidth.hpp>
#include <meanshift/meanshift.hpp>
#include <meanshift/neighbours.hpp>

#include <string>
#include <vector>

namespace meanshift::detail {

struct Prepared {
    PreparedData data;
    VectorD centre;  ///< k: subtracted from every coordinate (bounding-box centre of the data)
    VectorD scale;  ///< k: prepared = (x - centre) * scale
    /// Prepared units are whitened: for a shared H by 1/h_d, for per-point H_i by the geometric mean
    /// of sqrt(1/H_i,dd) over the points. Euclidean distance in prepared units is therefore the
    /// Mahalanobis distance in bandwidth units (exact for a shared H, the typical bandwidth otherwise).
};

/// Validates data (n × k row-major, finite, n ≥ 1, k ≥ 1) and bandwidth against it; throws InvalidArgument.
/// `weights` (n sample weights, ≥ 0, finite, not all 0; nullptr = all 1) become the per-point model's
/// log-weights: a shared H with weights is prepared as KernelModel::PerPoint with unit precisions.
Prepared prepare(const float* data, Index n, int k, const Bandwidth& bandwidth, const float* weights = nullptr);

/// Options::max_memory: throws OutOfMemory when estimate_memory(n, k, options, m, weighted) exceeds
/// the budget (0 = available_memory(); no check where that is unknown). Call before allocating.
void check_memory(Index n, int k, const Options& options, Index m, bool weighted);

/// Validates sample weights (throws InvalidArgument); returns false for nullptr.
bool check_weights(const float* weights, Index n);

/// Builds the neighbour search of D for D.cutoff2 (set first): a CellGrid with the rows sorted by
/// cell (D.original, D.grid), a KdTree with the rows sorted by leaf (D.original, D.tree), or none;
/// backends see it as D.search(). `description` receives the text of Result::search.
/// `lattice` (Options::lattice, may be null): the data are an image's pixels; Auto and Lattice
/// then build the one-pixel grid without sorting. Throws InvalidArgument for Lattice without a
/// lattice, or a lattice that does not match the data (size, columns, positions).
void build_search(PreparedData& D, NeighbourSearch search, std::string& description,
                  const PixelLattice* lattice = nullptr);

/// Permutation of the m positions Y (m × k row-major, prepared units) along the Morton curve of
/// their cells in `grid` (cell coordinates interleaved, the last grid dim in the lowest bit), by
/// an LSD radix sort: O(m). On the pixel lattice a block of 32 consecutive modes is an 8 x 4 tile.
std::vector<Index> cell_order(const CellGrid& grid, const double* Y, Index m, int k);

/// cell_order of an H × W pixel lattice's own pixels (row r = y·W + x, grid dims y then x), found
/// by walking the Morton quadrants instead of computing and sorting keys (a photo: 11 ms -> ~1 ms).
std::vector<Index> lattice_order(Index height, Index width);

/// Validates seeds (m × k, finite) and maps them to prepared units.
MatrixD to_prepared(const Prepared& p, const float* points, Index m, const char* what);

/// Maps prepared positions back to data units (float32).
MatrixF from_prepared(const Prepared& p, const MatrixD& y);

}  // namespace meanshift::detail
