// The stages of meanshift::mpi::cluster (cluster.cpp runs them in order) and the state they hand
// on. Every stage is collective: every rank calls it, in the same order, with the same arguments
// where they must agree. A stage fills in its part of Run and its timings in Run::out.
#pragma once

#include "common.hpp"

#include <functional>
#include <memory>
#include <vector>

namespace meanshift::mpi::detail {

/// Strategy::Auto takes the domain decomposition when no rank would hold more than this share of
/// the points (slab + halo): beyond it the replicated strategy does the same work with less traffic.
constexpr double kDomainMaxShare = 0.75;

/// One call's arguments, the global frame of the data and what the ascents need on every rank.
struct Run {
    Run(MPI_Comm comm, const Eigen::Ref<const MatrixF>& local_points, const float* local_weights,
        const Options& options, Strategy strategy, DistributedResult& out);

    // The caller's arguments.
    MPI_Comm comm;
    const Eigen::Ref<const MatrixF>& local_points;
    const float* local_weights;  ///< this rank's n_local sample weights, or nullptr
    const Options& options;
    Strategy strategy;
    DistributedResult& out;
    int rank = 0, size = 1, k = 0;
    Index n_local = 0;

    // check_options(): the options with this rank's device and share of the node's cores.
    Options run_options;

    // plan_frame(): the rows of every rank, the global bounding box and one process's units.
    std::unique_ptr<RowType> row_f;  ///< a row of k floats
    std::vector<int> counts, displs;  ///< rows per rank and their offsets (MPI counts)
    std::vector<long long> first_rows;  ///< each rank's first global row, R + 1 values
    long long total = 0;  ///< rows over all ranks
    bool truncated = false;  ///< a finite cutoff, not exact
    std::vector<double> lo, hi;  ///< global bounding box, data units
    std::vector<double> scale, reach;  ///< prepared units per dimension; largest σ_id per dimension
    std::vector<double> mid;  ///< centre of the bounding box, data units
    detail::Slabs slabs;
    Strategy chosen = Strategy::ReplicatedPoints;
    MatrixF mine_rows;  ///< contiguous row-major copy of local_points
    double extent = 0;  ///< the largest |prepared coordinate|
    double finest = 0;  ///< the finest bin side bin seeding would use
    bool wants_bins = false, seeded = false;

    // Data binning (Options::data_bin_size): the ascents run on the merged cells' means, weighted by
    // their counts (× sample weights), instead of the points.
    detail::BinSeeds cells;
    bool binned = false;
    MatrixF my_cells;  ///< this rank's share of the cells (domain decomposition, ring)
    std::vector<float> my_cell_weights;
    std::vector<long long> cell_first;  ///< each rank's first cell, R + 1 values
    float no_cells = 0;  ///< a weight pointer for a rank without cells: every rank passes weights or none

    // The replicated strategy's copy of every point (weights, H_i), gathered once for all ascents.
    MatrixF all;
    std::vector<float> all_weights;
    Options replica_options;
    bool replicated = false;

    /// Prepared units of one process, (x − mid) · scale (prepare.cpp), for the grouping and the bins.
    MatrixD prepared(const MatrixF& y) const;
    /// Whether int64 bin keys of this side (bandwidth units) hold every prepared coordinate exactly.
    bool bins_fit(double side) const;
};

/// Seeds split evenly over the ranks and ascended: every seed's mode and outcome on every rank.
struct SeedAscent {
    MatrixF modes;  ///< S × k, data units, every rank
    std::vector<int> state;  ///< S × 3: iterations, converged, no support
    Result local;  ///< this rank's share (backend, timing)
};

/// The ascents, bin seeding and grouping (one process's answer before the labelling).
struct Ascents {
    Result local;  ///< this rank's ascents (timing, backend); its modes when not seeded
    detail::BinSeeds bins;  ///< the seeding bins (seeded)
    SeedAscent coarse;  ///< the bins' seeds' ascents (seeded)
    MatrixF modes_all;  ///< not seeded: every point's mode, on rank 0
    bool grouped = false;
    Grouping g;  ///< rank 0, grouped: the modes' (seeds') clusters in prepared units
};

/// Boundary refinement (Options::refine_boundaries): the fine seeds of the boundary bins.
struct Refinement {
    std::vector<char> boundary;  ///< per coarse bin: on a basin boundary
    long long n_boundary = 0;
    detail::BinSeeds fine;
    SeedAscent refined;
    std::vector<int> fine_labels;  ///< per fine seed (rank 0 until broadcast)
    std::vector<Index> settled_bin;  ///< per fine seed: the bin off the boundaries it stopped in, or -1
    bool active() const { return n_boundary > 0; }
};

/// The clusters in one process's numbering (largest first), on every rank after broadcast_clusters.
struct Numbering {
    std::vector<int> seed_labels;  ///< per seed (seeded) or per point (rank 0)
    MatrixD centres;  ///< data units
    std::vector<long long> sizes;
};

/// Local validity of the arguments, the same options on every rank, the rank's place on its node.
void check_options(Run& r);
/// Row counts, the global bounding box, one process's prepared units, the strategy, the seeding.
void plan_frame(Run& r);
/// Collective: the ascents of this rank's queries (nullptr: its own rows, the first_rows split) by
/// the chosen strategy; query_first: each rank's first query (R + 1 values).
Result ascend(Run& r, const MatrixF* queries, const std::vector<long long>& query_first,
              const std::function<bool(const double*)>& settled);
/// Collective: the seeds split evenly over the ranks, their ascents, every outcome to every rank.
SeedAscent ascend_seeds(Run& r, const MatrixF& seeds, const std::function<bool(const double*)>& settled);
/// The bins' seeds (with data binning where asked) or every point ascended, then grouped on rank 0.
Ascents ascend_and_group(Run& r);
/// The boundary bins re-seeded at bin_size/4 and their fine seeds ascended and labelled.
Refinement refine_boundaries(Run& r, Ascents& a);
/// Clusters renumbered by their points on rank 0, then centres, sizes and labels to every rank.
Numbering number_clusters(Run& r, Ascents& a, Refinement& f);
/// Every local point's mode, label and outcome; the seeding's description.
void label_points(Run& r, Ascents& a, const Refinement& ref, const Numbering& c);

}  // namespace meanshift::mpi::detail
