#pragma once
// Internal: a hashed uniform grid over rows of a matrix (cell side = the grouping radius), for
// the neighbour queries of groupModes at small k. A query visits the 3^k cells around a row.
// Cells are keyed by a 64-bit hash of their integer coordinates: a collision only adds
// candidates, which the caller's distance test rejects, so it never changes a result.

#include <meanshift/types.hpp>

#include <cmath>
#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace meanshift::detail {

class ModeGrid {
public:
    /// 3^5 = 243 cells per query; beyond that the GEMM scan of grouping.cpp is cheaper.
    static constexpr int kMaxDims = 5;

    /// `side` > 0. Usable when k ≤ kMaxDims and every coordinate / side stays far inside the
    /// range where floor() gives exact integers (2^50), so no cell index can overflow.
    ModeGrid(const MatrixD& rows, double side) : rows_(rows), inv_(1.0 / side)
    {
        const int k = static_cast<int>(rows.cols());
        usable_ = k >= 1 && k <= kMaxDims && std::isfinite(inv_);
        if (usable_ && rows.size() > 0) usable_ = rows.cwiseAbs().maxCoeff() * inv_ < 0x1p50;
    }
    bool usable() const { return usable_; }

    void insert(Index row, int id) { cells_[key_of(cell_of(row))].push_back(id); }

    /// Calls f(id) for every id stored in the 3^k cells around `row` (and rarely a few more: hash
    /// collisions). Read-only: safe from several threads while nobody inserts.
    template <class F>
    void for_neighbours(Index row, F&& f) const
    {
        const Cell base = cell_of(row);
        const int k = static_cast<int>(rows_.cols());
        int off[kMaxDims] = {-1, -1, -1, -1, -1};
        while (true) {
            Cell c{};
            for (int d = 0; d < k; ++d) c[std::size_t(d)] = base[std::size_t(d)] + off[d];
            const auto it = cells_.find(key_of(c));
            if (it != cells_.end())
                for (int id : it->second) f(id);
            int d = 0;
            while (d < k && off[d] == 1) off[d++] = -1;
            if (d == k) break;
            ++off[d];
        }
    }

private:
    using Cell = std::array<std::int64_t, kMaxDims>;
    Cell cell_of(Index row) const
    {
        Cell c{};
        for (Index d = 0; d < rows_.cols(); ++d)
            c[std::size_t(d)] = static_cast<std::int64_t>(std::floor(rows_(row, d) * inv_));
        return c;
    }
    std::uint64_t key_of(const Cell& c) const
    {
        std::uint64_t h = 0x9e3779b97f4a7c15ull;
        for (Index d = 0; d < rows_.cols(); ++d) {
            h ^= static_cast<std::uint64_t>(c[std::size_t(d)]) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
            h *= 0xff51afd7ed558ccdull;
        }
        return h ^ (h >> 33);
    }

    const MatrixD& rows_;
    double inv_;
    bool usable_ = false;
    std::unordered_map<std::uint64_t, std::vector<int>> cells_;
};

}  // namespace meanshift::detail
