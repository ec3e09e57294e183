#pragma once
/// @file neighbours.hpp
/// Neighbour search for the truncated Gaussian kernel (Options::cutoff): which data points a mode
/// can reach. With a finite cutoff c a pair (mode y, point x_i) whose Mahalanobis distance
/// D² = Σ_d w_id (y_d − x_id)² exceeds c² gets weight 0, so a mode only has to visit the points
/// within c·σ_id of it in every dimension. The uniform cell grid below finds them: prepare() sorts
/// the points by cell, so the points of a row of cells along the last grid dimension are one
/// contiguous range of prepared rows, and a block of nearby modes runs over a few ranges instead
/// of [0, n) (block-sparse ranges, as KeOps does). For higher k, where a grid over a few dims no
/// longer prunes, a kd-tree (KdTree, built with nanoflann) sorts the rows by leaf instead, so each
/// leaf is a contiguous range of rows and a block of modes visits the leaves it can reach.
/// Backends see either only through the search contract, NeighbourRanges (end of this file).

#include <meanshift/export.hpp>
#include <meanshift/types.hpp>

#include <memory>
#include <string>
#include <vector>

namespace meanshift {

/// How the backends find the points a mode can reach (Options::search).
enum class NeighbourSearch {
    /// Grid when the cutoff is finite and the grid prunes enough (estimated candidate fraction
    /// below kGridMaxCandidateFraction, docs/truncated-kernel.md has the crossover), else Tree when
    /// it prunes (see Tree), else BruteForce.
    Auto,
    /// Every mode visits every point; pairs beyond the cutoff are still masked (weight 0).
    BruteForce,
    /// The uniform cell grid (CellGrid); falls back to BruteForce (and Result::search says why)
    /// when no dimension prunes or the cutoff is infinite.
    Grid,
    /// The pixel lattice of Options::lattice: a CellGrid over (row, column) with one cell per pixel.
    /// The data are already in cell order, so nothing is sorted (PreparedData::original stays
    /// empty) and a mode visits the pixels of its window, ⌈c·hs⌉ pixels either side of it.
    /// Auto takes it whenever Options::lattice is set. InvalidArgument without Options::lattice or
    /// when the data are not that lattice.
    Lattice,
    /// A kd-tree over all k prepared dims (KdTree): rows sorted by leaf, a block of modes visits the
    /// leaves whose reach box it touches. Auto takes it when the grid does not pay, estimates more
    /// pairs (above kGridTryTreeFraction) or spans many dims (kGridTryTreeDims), and the tree's
    /// estimated candidate fraction is at most kTreeMaxCandidateFraction. With an infinite cutoff: brute force. GPU backends get no
    /// grid with it and run brute force (masked by the cutoff) over the permuted rows.
    Tree,
};

/// The data are the pixels of an image (Options::lattice): row y·width + x is pixel (x, y), and
/// columns `x_dim` and `y_dim` hold its column x and row y in any equal spacing (segment_image:
/// pixels). The other columns (colours) are free. The lattice search needs nothing else: the rows
/// are already sorted by the cells of a one-pixel grid over (y, x).
struct PixelLattice {
    Index height = 0;  ///< rows of pixels, ≥ 1
    Index width = 0;  ///< columns of pixels, ≥ 1; height · width must equal the number of points
    int x_dim = 0;  ///< data column of the pixel's column x
    int y_dim = 1;  ///< data column of the pixel's row y (≠ x_dim)
};

/// Auto takes the grid when the expected fraction of candidate pairs (points in a mode's cell
/// neighbourhood / n) is at most this. Measured on 2 cores (docs/truncated-kernel.md): the grid's time
/// follows the pairs it visits, and it was faster than brute force up to an estimate of 0.80.
inline constexpr double kGridMaxCandidateFraction = 0.85;

/// Auto takes the kd-tree, where the grid does not pay or estimates more pairs than the tree, when
/// the tree's estimated fraction of candidate pairs is at most this (measured on 2 cores,
/// docs/truncated-kernel.md, "kd-tree neighbour search").
inline constexpr double kTreeMaxCandidateFraction = 0.5;

/// Auto builds the kd-tree as well when the grid's estimated candidate fraction is above this, and
/// takes the tree when it estimates fewer pairs. Below it the grid already visits few pairs and the tree's
/// build (O(n log n · k)) would not pay back.
inline constexpr double kGridTryTreeFraction = 0.4;

/// Auto also builds the kd-tree when the grid spans more dims than this (a block then walks
/// 3^(g−1) rows of cells), and takes it unless the grid estimates at least 10 % fewer pairs.
/// 6: at g = 6 (1e6 blobs) the grid beat the tree although the tree estimated fewer pairs per
/// point (12 % vs 16 %): a block of modes reaches 5× the grid's pairs through the tree's leaves,
/// H200 cuda 10.2 s vs 34.0 s, opencl 8.6 vs 24 s; at k = 8 (g = 8) the tree is still faster on
/// 2 cores (docs/truncated-kernel.md).
inline constexpr int kGridTryTreeDims = 6;

/// A uniform cell grid over g of the k prepared dimensions. Cells are numbered row-major over
/// `dims`, the LAST grid dimension fastest; prepared rows are sorted by cell, cell c holding rows
/// [start[c], start[c+1]). A position y's neighbourhood is the box of cells that [y − radius,
/// y + radius] touches in every grid dim: every point within the radius lies in it. With the
/// side ≥ the radius (the default grid, shared H) that is at most y's cell ±1; per-point H_i
/// take cells of a quarter of the radius (the largest reach), so a box fits the reach closer; the pixel lattice
/// (NeighbourSearch::Lattice) has dims {y_dim, x_dim}, cells {height, width}, a side of one pixel
/// (1/hs in prepared units for segment_image) and start[c] = c.
struct MEANSHIFT_API CellGrid {
    std::vector<int> dims;  ///< the g grid dimensions (indices into k), g ≥ 1
    std::vector<double> origin;  ///< per grid dim: lower edge of cell 0 (prepared units)
    std::vector<double> side;  ///< per grid dim: cell side (prepared units), > 0
    std::vector<double> radius;  ///< per grid dim: search radius (prepared units)
    std::vector<Index> cells;  ///< cells per grid dim (≥ 1)
    std::vector<Index> start;  ///< prod(cells) + 1 offsets into the prepared rows

    int g() const noexcept { return static_cast<int>(dims.size()); }
    Index cell_count() const noexcept { return start.empty() ? 0 : static_cast<Index>(start.size()) - 1; }
    /// Cell coordinate of value v in grid dim j, clamped to [0, cells[j]) (positions outside the
    /// grid map to the nearest border cell, which is still correct: see neighbours.cpp).
    Index coord(int j, double v) const noexcept;
    /// Cell index of a position y (k coordinates, prepared units).
    Index cell_of(const double* y) const noexcept;
    /// Widens the inclusive box [lo, hi] (g cell coordinates each) to contain y's neighbourhood,
    /// the cells from coord(y − radius) to coord(y + radius) in every grid dim. Start with lo = +max, hi = −1 (see empty_box()).
    void add_neighbourhood(const double* y, Index* lo, Index* hi) const noexcept;
    /// lo, hi set to an empty box (lo > hi).
    void empty_box(Index* lo, Index* hi) const noexcept;
    /// Appends the non-empty [begin, end) ranges of prepared rows of the cells in the inclusive box
    /// [lo, hi] to `ranges` (begin, end, begin, end, …): one range per row of the box along the last
    /// grid dim, adjacent ranges merged. Returns the number of rows covered.
    Index box_ranges(const Index* lo, const Index* hi, std::vector<Index>& ranges) const;
    /// Text for Result::search, e.g. "grid over dims {0,1}, 40 x 38 cells".
    std::string describe() const;
};

/// A kd-tree over the prepared rows, sorted so that every node's points are the contiguous rows
/// [begin, end) (preorder: node 0 is the root, a node's children follow it). Each node keeps its
/// *reach box*: per dim d the hull of [x_id − r_id, x_id + r_id] over its points, r_id = c (shared H,
/// whitened) or c·σ_id (per-point H_i, σ_id = 1/√precision_id), c = √cutoff2. A mode y can only give
/// point i a non-zero weight if y lies in [x_i − r_i, x_i + r_i] in every dim, so the points a block
/// of modes can reach lie in the leaves whose reach box meets the block's bounding box. The boxes are
/// stored as float32 rounded outwards (conservative), node_count × k each.
struct MEANSHIFT_API KdTree {
    int k = 0;  ///< dims of the prepared points
    Index leaf_size = 0;  ///< most points per leaf (nanoflann's leaf_max_size; grows with k, kdtree.cpp)
    Index leaves = 0;  ///< number of leaves
    std::vector<float> reach_lo;  ///< node_count × k, lower edges of the reach boxes (prepared units)
    std::vector<float> reach_hi;  ///< node_count × k, upper edges
    std::vector<float> common_lo;  ///< node_count × k, max over the node's leaves of reach_lo
    std::vector<float> common_hi;  ///< node_count × k, min over the node's leaves of reach_hi
    std::vector<Index> begin, end;  ///< per node: its rows [begin, end) of the prepared rows
    std::vector<Index> child;  ///< 2 per node: children's node indices, −1 −1 for a leaf
    std::vector<int> split_dim;  ///< per inner node: the dim it splits (leaves: −1)
    std::vector<double> split;  ///< per inner node: points below go to child 0 (leaf_start())

    Index node_count() const noexcept { return static_cast<Index>(begin.size()); }
    /// Appends to `ranges` (begin, end, …, ascending, adjacent ranges merged) the rows of the
    /// leaves whose reach box meets the box [lo, hi] (k coordinates each, prepared units; the
    /// bounding box of a block of modes). Returns the number of rows.
    Index box_ranges(const double* lo, const double* hi, std::vector<Index>& ranges) const;
    /// First row of the leaf a position y (k coordinates) descends to: sorting modes by it puts
    /// modes of one leaf next to each other, in the leaves' spatial order.
    Index leaf_start(const double* y) const noexcept;
    /// Text for Result::search, e.g. "kd-tree, 3125 leaves of <= 32 points".
    std::string describe() const;
};

/// The search contract: all a backend needs to know about the neighbour search chosen for a
/// PreparedData (PreparedData::search()). The backend asks two things:
///  - block_ranges(): for a block of b modes, the [begin, end) ranges of prepared rows holding
///    every point any of them can reach (a superset: pairs beyond the cutoff are still masked by
///    the backend), as KeOps' block-sparse ranges;
///  - order(): an order of m modes that keeps consecutive modes close, so that a block of them
///    reaches few rows.
/// Implemented for the cell grid (CellGrid; also the pixel lattice), the kd-tree (KdTree) and
/// brute force (one range [0, n), any order). A backend that only visits ranges never looks at
/// the structure behind them. One declared specialisation: cell_grid() exposes the grid to the
/// backends whose device kernels walk its cells themselves (the CUDA and OpenCL range kernels
/// copy CellGrid::start and the grid geometry to the device); nullptr for any other search.
/// All methods are const and thread-safe (the openmp backend calls block_ranges from every thread).
class MEANSHIFT_API NeighbourRanges {
public:
    virtual ~NeighbourRanges();
    /// Appends to `ranges` (begin, end, begin, end, …; rows of the prepared points, ascending,
    /// adjacent ranges merged, none empty) the rows that the b ≥ 1 modes at `modes` (b × k
    /// row-major, prepared units) can reach, and returns the number of rows covered (Σ end −
    /// begin). `ranges` is not cleared. Grid: the rows of the box of cells that is the union of
    /// the modes' neighbourhoods, one range per row of the box along the last grid dim; kd-tree:
    /// the rows of the leaves whose reach box meets the modes' bounding box; brute force: [0, n).
    virtual Index block_ranges(const double* modes, Index b, std::vector<Index>& ranges) const = 0;
    /// A permutation of the m ≥ 0 modes at `modes` (m × k row-major, prepared units): the
    /// returned vector lists mode indices in [0, m), consecutive ones close in the search's sense
    /// (grid: the Morton curve of their cells; kd-tree: the leaves' row order; brute force: the
    /// identity, since every block visits [0, n) anyway).
    virtual std::vector<Index> order(const double* modes, Index m) const = 0;
    /// Whether block_ranges() can return fewer than n rows (false for brute force only).
    virtual bool prunes() const noexcept = 0;
    /// The declared specialisation for device kernels that walk cells: the grid, or nullptr.
    virtual const CellGrid* cell_grid() const noexcept { return nullptr; }
};

/// The search contract over a cell grid (rows sorted by cell), a kd-tree (rows sorted by leaf), or
/// neither (brute force over n rows); k: dims of the prepared points. The result refers to `grid`
/// or `tree` (at most one non-null), which must outlive it and stay unchanged. Throws
/// InvalidArgument when both are given.
MEANSHIFT_API std::unique_ptr<const NeighbourRanges> make_neighbour_ranges(const CellGrid* grid, const KdTree* tree,
                                                                           Index n, int k);

}  // namespace meanshift
