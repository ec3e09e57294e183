#pragma once
/// @file mpi.hpp
/// Distributed mean shift over MPI (docs/mpi.md). Built only with
/// -DMEANSHIFT_MPI=ON/AUTO (Open MPI found), in the separate library meanshift_mpi
/// (CMake target meanshift::mpi), which links meanshift and MPI::MPI_CXX.
///
/// Two strategies (Strategy below); both take every seeding below and give every point a label.
///
/// Strategy "replicated points, modes split": every rank passes its share of the rows; the ranks
/// allgather the points, each rank runs the library's ascent (any backend, its own device) with its
/// own rows as explicit seeds against all n points, rank 0 gathers the modes, groups them with
/// group_modes() (grouping.hpp) and broadcasts the centres; every rank gets the labels of its rows.
///
/// Communication per run (R ranks, n points, k dimensions, c clusters):
///   allgather of the points   n·k floats (every rank receives all of them),
///   gather of the modes       n·k floats to rank 0,
///   broadcast of the centres  c·k doubles + c sizes, scatter of the labels n ints;
/// plus a few small collectives (option check, error agreement after every phase).
/// The ascent itself needs no communication: it is embarrassingly parallel over the modes.
///
/// Strategy "domain decomposition" (truncated kernel only: finite Options::cutoff c, not exact):
/// the ranks cut the data into R slabs along the dimension of largest extent in bandwidth units
/// (boundaries at quantiles of a sample of that coordinate), send every point to the rank owning
/// its slab and, as a halo, to every rank whose slab lies within c bandwidths (c times the largest
/// σ of any point in that dimension for per-point H_i); a rank then holds
/// n/R + halo points instead of n. Each rank advances the modes that lie in its slab one
/// iteration at a time on its own binding (Clusterer::binding(): the library's step, neighbour
/// search included); a step moves a mode at most c bandwidths (the new mode is a mean of points
/// within c), and every point within c of a mode in the slab is local, so each step is the one
/// process's step. After each iteration the modes that left a slab are handed to its owner.
/// Communication: once n·k floats (+ halo; + weights and H_i rows when given) in an all-to-all, then
/// per iteration one MPI_Allreduce and an all-to-all of the migrating modes (k doubles each); the
/// modes back to their rows' ranks (n·k doubles), then to rank 0 (n·k floats) for the grouping, as
/// above. Results equal one process's within float32 rounding (each rank's prepared units are
/// centred on its own points; shifts are measured in one process's units).
///
/// Strategy "ring" (points too large for one rank): each rank binds only its own n_r points, once;
/// each iteration every rank's active modes (a_r of them) travel around the ring of R ranks
/// (R passes to the next rank), collecting at each stop the partial sums [S0 | S1] over that
/// rank's points (Binding::accumulate); home again, the owner moves them (y' = S1/S0) and tests
/// convergence, as one process does. Each pass is pipelined, as all-pairs N-body codes pass their
/// particles: the block goes in chunks (at least 2,048 modes each, at most 8 per block), sent on
/// with MPI_Isend as soon as a rank has added its sums while the next chunks arrive (MPI_Irecv
/// posted a pass ahead), so a pass costs max(sums, transfer) instead of their sum. Communication
/// per iteration: R · a_r · (2k + 1) doubles (3k for per-point H_i or weights) sent per rank, and one
/// allgather of the block sizes; no point, weight or H_i ever moves. Every bandwidth model but the
/// exponential-last one, with or without sample weights (each rank's sums are scaled to one
/// process's log-weight shift); backends with partial sums: serial, openmp, opencl, cuda. Every mode
/// gets its sums in the same (pass) order however its block is chunked, and chunks start at
/// multiples of 64 modes, so the backends' blocks of modes are those of one call: results bit for
/// bit those of one chunk per pass (tested on serial, openmp and opencl). They equal one process's
/// labels, and its modes within float64 rounding on serial (the sums are added in another order). A rank whose sums throw ends every rank at the end
/// of that iteration (the chunks keep travelling, so no rank waits for one that never comes).
///
/// Sample weights and per-point H_i travel with the points in the first two strategies (strategy 1
/// allgathers n more floats / n·k more doubles).
///
/// Seeding: Seeding::AllPoints (and the exact kernel) makes every point the seed of its own ascent.
/// Seeding::Bins (the default) bins every rank's rows in one process's units, merges the bins on
/// rank 0 and ascends their seeds (split over the ranks); every point takes its bin's seed's label
/// and mode. With refine_boundaries (the default) the points of bins on a basin boundary are binned
/// again at bin_size/4 across the ranks and those fine seeds ascend to their modes (one process stops
/// each as soon as its trajectory enters a bin off the boundaries, so a label may rarely differ).
/// Data binning (data_bin_size, automatic by default) as in one process: the ascents run on the
/// merged cells' weighted means (bin_data -> InvalidArgument). Options::cutoff / search apply as in
/// one process.
///
/// Failures: after every phase the ranks agree on success (MPI_Allreduce of an error flag); if any
/// rank failed, every rank throws DistributedError with the message of the lowest failing rank
/// ("rank 1: ..."), so no rank waits for a collective the others never reach.

#include <meanshift/meanshift.hpp>

#include <mpi.h>

#include <exception>
#include <string>

namespace meanshift::mpi {

/// Thrown on every rank when some rank failed. what() = "rank R: <message of that rank>";
/// rank() = R (the lowest failing rank), kind() = the class of the original exception
/// ("InvalidArgument", "BackendUnavailable", "DeviceError", "NotSupported", "IoError", "Error",
/// "std::exception").
class DistributedError : public Error {
public:
    DistributedError(int rank, std::string kind, const std::string& what)
        : Error(what), rank_(rank), kind_(std::move(kind))
    {
    }
    int rank() const noexcept { return rank_; }
    const std::string& kind() const noexcept { return kind_; }

private:
    int rank_;
    std::string kind_;
};

/// Collective: every rank passes its local outcome (nullptr = success). If any rank failed, every
/// rank throws DistributedError carrying the lowest failing rank's message. Use it after local work
/// that may throw and before the next collective.
void agree(MPI_Comm comm, std::exception_ptr local_error);

/// How the work is distributed (docs/mpi.md).
enum class Strategy {
    /// DomainDecomposition for the truncated kernel with R > 1 ranks when the largest rank would
    /// hold at most 75 % of the points (slab + halo, estimated from the sample), else ReplicatedPoints.
    Auto,
    ReplicatedPoints,  ///< every rank holds all points, the modes are split
    DomainDecomposition,  ///< slabs + halos of the cutoff's width; InvalidArgument with the exact kernel
    /// Points stay on their rank; every iteration the active modes pass once around the ring of
    /// ranks with their partial sums (Binding::accumulate), each pass pipelined in chunks. Exact or
    /// truncated kernel; every bandwidth model but exponential-last, sample weights; a backend with
    /// partial sums (serial, openmp, opencl, cuda); never chosen by Auto. InvalidArgument /
    /// NotSupported on every rank otherwise.
    Ring,
};

/// Times of the distributed run (seconds, this rank's wall clock).
struct DistributedTiming {
    double seconds_check = 0;  ///< option check (broadcast + agreement)
    double seconds_allgather =
        0;  ///< MPI_Allgatherv of the points (replicated) / the decomposition's exchange (domain)
    /// domain: the per-iteration hand-over of modes (and the active-count reduction); ring: the time
    /// blocked waiting for the passes' chunks (transfers the sums did not hide, and a slower
    /// previous rank's sums)
    double seconds_migrate = 0;
    double seconds_ascent = 0;  ///< this rank's cluster() call for its seeds
    double seconds_wait = 0;  ///< agreement after the ascent (= waiting for the slowest rank)
    double seconds_gather = 0;  ///< MPI_Gatherv of the modes to rank 0
    double seconds_group = 0;  ///< grouping on rank 0 (others wait)
    double seconds_broadcast = 0;  ///< centres, sizes, labels
    double seconds_binning =
        0;  ///< bin seeding: this rank's bins, their merge on rank 0 and broadcast (coarse, data and boundary bins)
    double seconds_label =
        0;  ///< bin seeding: each of this rank's points given its bin's (or fine bin's) mode and label
    double seconds_total = 0;
};

struct DistributedResult : Result {
    /// In Result: labels, modes, iterations, converged, no_support are those of this rank's rows
    /// (local_points order); centres and cluster_sizes are global (identical on every rank);
    /// timing is this rank's ascent; seed_count = local rows (every point a seed) or all ranks' bin
    /// seeds (bin seeding, counted as one process counts them); backend = this rank's backend.
    Index global_points = 0;  ///< n, all ranks together
    Index first_row = 0;  ///< global index of this rank's first row (ranks in comm order)
    int ranks = 1;
    Strategy strategy = Strategy::ReplicatedPoints;  ///< the strategy that ran (Auto resolved)
    Index local_points_held = 0;  ///< points this rank's ascent ran against (n replicated; slab + halo for domain)
    Index modes_migrated = 0;  ///< domain: hand-overs of modes between ranks, all ranks together
    int local_rank = 0;  ///< this rank among the ranks of its node (MPI_COMM_TYPE_SHARED)
    int local_ranks = 1;  ///< ranks on this rank's node
    DistributedTiming distributed;
};

/// Collective over `comm`. `local_points`: this rank's rows (n_r × k, may be 0 × k); the global data
/// are the ranks' rows concatenated in rank order. Every rank must pass the same k and the same
/// options except backend / backend_options / topology / progress (checked: a mismatch throws
/// DistributedError on every rank). Every bandwidth model: shared (isotropic, diagonal); per-point
/// diagonal H_i with `options.bandwidth = Bandwidth::per_point(H_r)`, H_r this rank's rows'
/// standard deviations (n_r × k; another shape -> InvalidArgument on every rank; n_r ≥ 1, since an
/// empty per-point matrix cannot be built); the exponential-last model (replicated only). Sample
/// weights: the overload below.
/// Placement: with several ranks on a node, what the caller leaves open is shared out: threads = 0
/// becomes the CPUs this rank may use divided by the node's ranks (at least 1), and the cuda backend
/// (named, or chosen by "auto") with no devices given gets devices = {local rank mod device count},
/// one GPU per rank; the opencl backend without device_spec gets, on a node with two or more GPUs,
/// GPU (local rank mod their count) as device_spec. Explicit BackendOptions::threads / devices /
/// device_spec are kept.
/// Results equal one process's (same grouping order): cluster(all_points, options, &all_points)
/// with Seeding::AllPoints, cluster(all_points, options) with Seeding::Bins (refined boundary
/// points: see Seeding); with DomainDecomposition within float32 rounding. `strategy` must be the same on every rank.
/// Throws DistributedError on every rank (InvalidArgument kind: DomainDecomposition asked for with
/// the exact kernel or a backend without the truncated kernel).
DistributedResult cluster(MPI_Comm comm, const Eigen::Ref<const MatrixF>& local_points, const Options& options,
                          Strategy strategy = Strategy::Auto);

/// cluster() with sample weights (eq. 1 with a weight per point, as meanshift::cluster's weights):
/// `local_weights` holds n_r values ≥ 0 for this rank's rows (nullptr = all 1; every rank must pass
/// weights or none, checked). They travel with the points in both strategies. Results equal
/// cluster(all_points, options, all_weights, &all_points) of one process.
DistributedResult cluster(MPI_Comm comm, const Eigen::Ref<const MatrixF>& local_points, const float* local_weights,
                          const Options& options, Strategy strategy = Strategy::Auto);

/// "auto", "replicated", "domain", "ring".
const char* to_string(Strategy s) noexcept;

}  // namespace meanshift::mpi
