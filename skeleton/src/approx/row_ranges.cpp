// The search contract (NeighbourRanges, neighbours.hpp) for the cell grid, the kd-tree and brute
// force: the row ranges a block of modes visits and the order that keeps a block's modes close.
#include "skeleton/src/core/prepare.hpp"

#include <meanshift/backend.hpp>
#include <meanshift/errors.hpp>
#include <meanshift/neighbours.hpp>

#include <algorithm>
#include <utility>
#include <vector>

namespace meanshift {

NeighbourRanges::~NeighbourRanges() = default;

namespace {

/// Scratch of `count` values on the stack up to 64, else on the heap: block_ranges runs per block
/// of modes on every thread, so it neither allocates in the common case nor shares storage.
template <class T>
class Scratch {
public:
    explicit Scratch(std::size_t count)
    {
        if (count > 64) heap_.resize(count);
        data_ = count > 64 ? heap_.data() : local_;
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    T* get() noexcept { return data_; }

private:
    T local_[64];
    std::vector<T> heap_;
    T* data_;
};

/// Brute force: every block visits every row, so no order is better than another.
class BruteForceRanges final : public NeighbourRanges {
public:
    explicit BruteForceRanges(Index n) : n_(n) {}
    Index block_ranges(const double*, Index, std::vector<Index>& ranges) const override
    {
        ranges.push_back(0);
        ranges.push_back(n_);
        return n_;
    }
    std::vector<Index> order(const double*, Index m) const override
    {
        std::vector<Index> o(static_cast<std::size_t>(m));
        for (Index q = 0; q < m; ++q) o[std::size_t(q)] = q;
        return o;
    }
    bool prunes() const noexcept override { return false; }

private:
    Index n_;
};

/// The cell grid: a block visits the box of cells that is the union of its modes' neighbourhoods.
class GridRanges final : public NeighbourRanges {
public:
    GridRanges(const CellGrid& grid, int k) : grid_(grid), k_(k) {}
    Index block_ranges(const double* modes, Index b, std::vector<Index>& ranges) const override
    {
        const std::size_t g = static_cast<std::size_t>(grid_.g());
        Scratch<Index> lo(g), hi(g);
        grid_.empty_box(lo.get(), hi.get());
        for (Index q = 0; q < b; ++q) grid_.add_neighbourhood(modes + q * k_, lo.get(), hi.get());
        return grid_.box_ranges(lo.get(), hi.get(), ranges);
    }
    std::vector<Index> order(const double* modes, Index m) const override
    {
        // The driver's Morton order over all k dims does not keep blocks compact in the grid dims
        // (an image's colour dims interleave with x and y: a block of 32 pixels spanned ~100 x 56
        // pixels, 7x the pairs); the Morton curve of the cells makes such a block an 8 x 4 tile.
        return detail::cell_order(grid_, modes, m, k_);
    }
    bool prunes() const noexcept override { return true; }
    const CellGrid* cell_grid() const noexcept override { return &grid_; }

private:
    const CellGrid& grid_;
    int k_;
};

/// The kd-tree: a block visits the leaves whose reach box meets the modes' bounding box (the
/// reach boxes already hold the search radius).
class TreeRanges final : public NeighbourRanges {
public:
    TreeRanges(const KdTree& tree, int k) : tree_(tree), k_(k) {}
    Index block_ranges(const double* modes, Index b, std::vector<Index>& ranges) const override
    {
        Scratch<double> lo_s(static_cast<std::size_t>(k_)), hi_s(static_cast<std::size_t>(k_));
        double* lo = lo_s.get();
        double* hi = hi_s.get();
        std::copy_n(modes, k_, lo);
        std::copy_n(modes, k_, hi);
        for (Index q = 1; q < b; ++q)
            for (int d = 0; d < k_; ++d) {
                const double v = modes[q * k_ + d];
                lo[d] = std::min(lo[d], v);
                hi[d] = std::max(hi[d], v);
            }
        return tree_.box_ranges(lo, hi, ranges);
    }
    std::vector<Index> order(const double* modes, Index m) const override
    {
        // The leaves' row order is a spatial order: modes that descend to one leaf, or to
        // neighbouring leaves, end up in one block.
        std::vector<std::pair<Index, Index>> keyed(static_cast<std::size_t>(m));
        for (Index q = 0; q < m; ++q) keyed[std::size_t(q)] = {tree_.leaf_start(modes + q * k_), q};
        std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        std::vector<Index> o(static_cast<std::size_t>(m));
        for (Index q = 0; q < m; ++q) o[std::size_t(q)] = keyed[std::size_t(q)].second;
        return o;
    }
    bool prunes() const noexcept override { return true; }

private:
    const KdTree& tree_;
    int k_;
};

}  // namespace

std::unique_ptr<const NeighbourRanges> make_neighbour_ranges(const CellGrid* grid, const KdTree* tree, Index n, int k)
{
    if (grid && tree) throw InvalidArgument("neighbour ranges: a grid and a kd-tree at once");
    if (grid) return std::make_unique<GridRanges>(*grid, k);
    if (tree) return std::make_unique<TreeRanges>(*tree, k);
    return std::make_unique<BruteForceRanges>(n);
}

std::unique_ptr<const NeighbourRanges> PreparedData::search() const
{
    return make_neighbour_ranges(grid ? &*grid : nullptr, tree ? &*tree : nullptr, n(), k());
}

}  // namespace meanshift
