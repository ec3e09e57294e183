#pragma once
// Internal: the Binding of the host backends (serial, openmp). Their "device" is host memory, so
// the modes stay in a float64 matrix here and the active set is compacted in place; a backend
// only implements advance() (Alg. 3 for a contiguous block of modes).

#include "backends/common/finish_mode.hpp"

#include <meanshift/backend.hpp>

#include <memory>
#include <vector>

namespace meanshift::detail {

class HostBinding : public Binding {
public:
    HostBinding(std::shared_ptr<const PreparedData> data, const Topology& topology);

    const PreparedData& data() const noexcept override { return *data_; }
    const Topology& topology() const noexcept override { return topology_; }
    void set_modes(const double* positions, Index m, const double* metric) override;
    Index mode_count() const noexcept override { return modes_.rows(); }
    Index active_count() const noexcept override { return static_cast<Index>(active_.size()); }
    void step(double tol2, bool retire, StepReport& report) override;
    void read_modes(double* out) const override;
    /// Binding::accumulate in float64 over the prepared points (the oracle's sums), the positions
    /// shared among topology().ppus threads.
    double accumulate(const double* positions, Index count, double* sums) override;

protected:
    /// Advances `count` modes by one iteration: in and out are count × k (prepared units,
    /// row-major); supported[j] = 0 when mode j had no support (it then keeps its position).
    virtual void advance(const double* in, double* out, unsigned char* supported, Index count) = 0;
    /// Candidate pairs the last advance() visited (Σ modes × rows of their ranges); advance() may
    /// leave it < 0, and step() then reports count × n.
    double pairs_ = -1;

    /// The [begin, end) ranges of prepared rows (appended to `ranges` as begin, end, …) that
    /// `count` modes at `modes` (count × k, prepared units) must visit: the search contract's
    /// NeighbourRanges::block_ranges (neighbours.hpp). Returns the number of rows. Thread-safe.
    Index block_ranges(const double* modes, Index count, std::vector<Index>& ranges) const
    {
        return search_->block_ranges(modes, count, ranges);
    }
    /// Alg. 3's float64 sums of one position y (k values, prepared units) over its candidate rows
    /// (block_ranges; `ranges` is scratch): s0_d = Σ e (w_d), s1_d = Σ e (w_d) x_d per dimension
    /// (for Shared every s0_d is Σ e). Returns the rows visited. The one host copy of the sums
    /// (the serial oracle's step and accumulate()).
    Index mode_sums(const double* y, std::vector<Index>& ranges, double* s0, double* s1) const;
    /// Whether block_ranges() can give fewer rows than [0, n) (a grid or a kd-tree).
    bool sparse_search() const noexcept { return search_->prunes(); }
    /// The search contract of the bound data (PreparedData::search()).
    const NeighbourRanges& search() const noexcept { return *search_; }

    std::shared_ptr<const PreparedData> data_;
    Topology topology_;

private:
    std::unique_ptr<const NeighbourRanges> search_;  ///< over data_'s grid or tree (set in the constructor)
    MatrixD modes_, metric_, in_, out_;
    std::vector<Index> active_;
    std::vector<unsigned char> supported_;
};

}  // namespace meanshift::detail
