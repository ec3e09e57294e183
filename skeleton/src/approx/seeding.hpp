#pragma once
// Internal: where the ascents of Alg. 4 start when cluster() gets no explicit seeds (every point,
// scikit-learn's bin seeding, or binned data), and how every data point is then labelled from the
// seeds' ascents (docs/truncated-kernel.md).

#include "skeleton/src/approx/boundary_bins.hpp"
#include "skeleton/src/core/prepare.hpp"

#include <meanshift/meanshift.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace meanshift::detail {

/// std::allocator whose value-initialisation is default-initialisation: resize(n) of an n-long
/// index array leaves its pages untouched, so the threads that write it first touch them (a
/// sequential zero-fill of 10^7 Index values took 0.14 s of page faults on one core).
template <class T>
struct NoInitAllocator : std::allocator<T> {
    template <class U>
    struct rebind {
        using other = NoInitAllocator<U>;
    };
    NoInitAllocator() = default;
    template <class U>
    NoInitAllocator(const NoInitAllocator<U>&) noexcept
    {
    }
    template <class U>
    void construct(U* p) noexcept
    {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... A>
    void construct(U* p, A&&... a)
    {
        ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
    }
};

/// Points binned on a grid of side `side` (prepared units): bin of each row, bins in lexicographic
/// order of their integer cell coordinates.
struct Bins {
    std::vector<Index, NoInitAllocator<Index>> of;  ///< n: bin of each row (every entry written by make_bins)
    std::vector<Index> count;  ///< B: rows per bin
    MatrixD mean;  ///< B × k: mean of the rows of each bin (weighted by `weights` if given)
    VectorD weight;  ///< B: Σ weights (or counts)
    std::vector<std::int64_t> key;  ///< B × k: integer cell coordinates ⌊x/side⌋, lexicographically increasing
    double side = 0;

    /// The bin of integer cell coordinates `cell` (k values), or -1 when no row lies in it.
    Index find(const std::int64_t* cell) const;
};

/// Whether every row of P (prepared units) has bin keys within kMaxBinCell (boundary_bins.hpp) at bins of `side`
/// (false for side ≤ 0, NaN or a quotient that overflows).
bool bins_fit(const MatrixD& P, double side);

/// bins_fit for data whose largest |coordinate| is `extent` (bins_extent), to test several sides
/// with one pass over the data.
bool bins_fit(double extent, double side);

/// max |P(i, d)| (0 for empty P), on the host threads: what bins_fit compares with side · 2^53.
double bins_extent(const MatrixD& P);

/// Why bins of `side` (bandwidth units) do not fit P (bins_fit false), for Result::seeding.
std::string bins_overflow_reason(const MatrixD& P, double side);

/// Bins the rows of P (n × k, prepared units) on cells of side `side` > 0; `weights` (n or nullptr).
/// A bin whose weights are all 0 gets the plain mean of its rows. Requires bins_fit(P, side)
/// (InvalidArgument otherwise: the callers fall back to unbinned paths first).
Bins make_bins(const MatrixD& P, double side, const float* weights);

/// The number of occupied bins of side `side` over the rows of P, from a 64-bit hash of each row's
/// cell: O(n · k) on the host threads plus a radix sort of n hashes, without make_bins' keys, sort
/// by cell and means. A hash collision can only lower the count. Requires bins_fit(P, side).
Index count_bins(const MatrixD& P, double side);

/// The starting points of the ascents.
struct SeedPlan {
    MatrixD seeds;  ///< m × k, prepared units; empty when seeds_are_points
    /// Every point is a seed (Seeding::AllPoints, the exact kernel): the seeds are the prepared
    /// points in caller order, not copied here (an n × k copy cost a photo 4-7 ms of page faults).
    bool seeds_are_points = false;
    /// Per caller row: the seed whose ascent labels it (bin seeding, binned data); empty when the
    /// seeds themselves are the queries (all points, explicit seeds).
    std::vector<Index> point_seed;
    bool own_metric = false;  ///< Alg. 5 with the seed's own H_i (seeds = the data, per-point model)
    std::string description;  ///< Result::seeding
    /// Seeding::Bins only (refine = true): the bins and the seed of each bin, kept for
    /// refine_boundaries().
    bool refine = false;
    Bins bins;
    std::vector<Index> seed_of_bin;
};

/// Chooses the seeds for `options` (exact, bin_data, seeding, bin_size, min_bin_count). With
/// bin_data it replaces `prep` by the binned data. `seeds` (m × k, data units) or nullptr.
/// Throws InvalidArgument when min_bin_count leaves no seed or the explicit seeds are invalid.
SeedPlan plan_seeds(Prepared& prep, Index n, int k, const Options& options, const float* weights, const float* seeds,
                    Index m);

/// Options::data_bin_size: when it applies (Seeding::Bins plan, shared bandwidth, not exact/bin_data,
/// no lattice) and, in automatic mode, leaves at most n/4 cells, replaces prep.data by the weighted
/// cell means (same prepared frame: the seeds stay valid) and appends what it did to
/// plan.description. Returns the caller's prepared points (caller order) when it replaced them,
/// else an empty matrix.
MatrixD bin_data_for_ascent(Prepared& prep, SeedPlan& plan, const Options& options, const float* weights);

/// Per seed, in the caller's seed order: what its ascent gave.
struct SeedAscents {
    MatrixD modes;  ///< m × k, prepared units
    std::vector<int> iterations;  ///< m
    std::vector<bool> converged;  ///< m
    std::vector<bool> no_support;  ///< m
};

/// Boundary refinement of bin seeding (Options::refine_boundaries; plan.refine). A bin is on a
/// boundary when its seed's group differs from the group of a neighbouring occupied bin (the 3^k
/// bins around it for k ≤ 3, the 2k face neighbours above), or when it holds fewer than
/// min_bin_count points. The points of boundary bins are re-binned on cells of side bin_size/4
/// whose means ascend on `binding` (the same prepared data), in rounds of a few iterations; a fine
/// seed whose trajectory enters a bin that is not on a boundary takes that bin's group (the rest of
/// its trajectory is the same as from there), one that converges elsewhere takes the group of the
/// nearest centre of `g`. Appends the fine seeds to `a` and points plan.point_seed at them; returns
/// `g` with their labels appended. Adds its steps to `timing`, and a note to `description`.
/// `points` (caller order, prepared units): the caller's points when D holds binned data
/// (bin_data_for_ascent), nullptr when D's points are the caller's (in D.original's order).
Grouping refine_boundaries(SeedPlan& plan, const PreparedData& D, const MatrixD* points, Binding& binding,
                           const Grouping& g, SeedAscents& a, const Options& options, Timing& timing,
                           std::string& description);

/// Fills r.labels, modes, iterations, converged, no_support (n rows), cluster_sizes and centres
/// from the seeds' grouping `g`: every data row i takes the label and mode of seed point_seed[i];
/// clusters are renumbered by point count and clusters of no point are dropped. An empty `g`
/// (GroupingMethod::None) leaves labels, centres and cluster_sizes empty.
void label_points_by_seed(Result& r, const Prepared& prep, const Grouping& g, const SeedAscents& a,
                          const std::vector<Index>& point_seed);

}  // namespace meanshift::detail
