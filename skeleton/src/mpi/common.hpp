// Helpers shared by the MPI strategies (cluster.cpp, domain.cpp): MPI error checks, a committed
// row datatype, exception capture for meanshift::mpi::agree, wall-clock timing.
#pragma once

#include <meanshift/mpi.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace meanshift::mpi::detail {

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t)
{
    return std::chrono::duration<double>(Clock::now() - t).count();
}

inline void check_mpi(int rc, const char* what)
{
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        throw Error(std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(len)));
    }
}

/// Runs f, returning its exception (if any) instead of throwing (for agree()).
template <class F>
std::exception_ptr attempt(F&& f)
{
    try {
        f();
        return nullptr;
    } catch (...) {
        return std::current_exception();
    }
}

/// A row of k elements as one MPI datatype (row counts, not element counts, stay below 2^31).
struct RowType {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    RowType(int k, MPI_Datatype element)
    {
        check_mpi(MPI_Type_contiguous(k, element, &type), "MPI_Type_contiguous");
        check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
    }
    ~RowType()
    {
        if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
    }
    RowType(const RowType&) = delete;
    RowType& operator=(const RowType&) = delete;
};

/// The ascents of this rank's own rows (origin order), as the strategies hand them to cluster().
struct LocalAscent {
    MatrixF modes;  ///< n_local × k, data units
    std::vector<int> iterations;
    std::vector<bool> converged, no_support;
    Result bind_info;  ///< backend, topology, search, cutoff, timing of the ascent
    Index points_held = 0;
    Index migrated = 0;  ///< all ranks together
    double seconds_exchange = 0, seconds_migrate = 0;
};

/// Result of the sample that places the slab boundaries (domain.cpp).
struct Slabs {
    int dim = 0;  ///< the cut dimension
    double scale = 1;  ///< 1 / h of that dimension (bandwidth units per data unit)
    std::vector<double> bounds;  ///< R − 1 boundaries in bandwidth units, ascending
    double halo = 0;  ///< halo width, bandwidth units (the cutoff, with a float32 margin)
    double largest_share = 1;  ///< estimated largest (slab + halo) share of the points
    /// No slabs: every rank holds every point and keeps its own modes (domain_ascent then runs the
    /// replicated strategy's ascents, one iteration at a time, so that `settled` can stop them).
    bool everywhere = false;
};

/// Bin seeding across ranks (bins.cpp): the merged bins of all ranks, in one process's order.
struct BinSeeds {
    double side = 0;  ///< bin side, bandwidth units (Options::bin_size)
    std::vector<std::int64_t> keys;  ///< B × k cell coordinates, lexicographically increasing
    std::vector<long long> count;  ///< B: points per bin, all ranks together
    std::vector<double> weight;  ///< B: Σ sample weights per bin (= count without weights)
    std::vector<Index> seed_of_bin;  ///< B: the seed labelling each bin (nearest seed below min_bin_count)
    /// S × k, data units: the means (weighted by the sample weights, if given) of the bins with
    /// ≥ min_bin_count points.
    MatrixF seeds;
    /// The bin of k integer cell coordinates, or -1 when no point lies in it.
    Index find(const std::int64_t* cell) const;
    /// The bin of position y (k values, data units), or -1 when no point lies in it.
    Index bin_at(const double* y, const std::vector<double>& centre, const std::vector<double>& scale) const;
    /// The bin of point x (k values, data units). Throws Error if its bin is unknown.
    Index bin_of(const float* x, const std::vector<double>& centre, const std::vector<double>& scale) const;
    /// The seed labelling the bin of point x.
    Index seed_of(const float* x, const std::vector<double>& centre, const std::vector<double>& scale) const
    {
        return seed_of_bin[static_cast<std::size_t>(bin_of(x, centre, scale))];
    }
};

/// Collective: bins every rank's rows in one process's prepared units ((x − centre) · scale) on
/// cells of side options.bin_size, merges them on rank 0 and gives every rank the bin table and the
/// seeds; `weights` (this rank's n_r sample weights, or nullptr) weigh the means and the bin
/// weights. InvalidArgument on every rank when min_bin_count leaves no seed.
BinSeeds plan_bin_seeds(MPI_Comm comm, const Eigen::Ref<const MatrixF>& local, const Options& options,
                        const std::vector<double>& centre, const std::vector<double>& scale,
                        const float* weights = nullptr);

/// This rank's occupied cells of side `side` (the same units), without communication.
Index count_cells(const Eigen::Ref<const MatrixF>& local, double side, const std::vector<double>& centre,
                  const std::vector<double>& scale);

/// Where this rank runs on its node (placement.cpp).
struct NodePlacement {
    int local_rank = 0, local_size = 1;  ///< among the ranks of this node (MPI_COMM_TYPE_SHARED)
    bool threads_set = false;  ///< BackendOptions::threads was 0 and is now this rank's share
    int device = -1;  ///< the device (Backend::devices() index) given to this rank, −1 = not set here
};

/// The OpenCL device a rank takes by default: with two or more GPUs, GPU (local_rank mod their
/// count) in `devices` order (its index there); −1 otherwise (one GPU or none: the backend's default).
int gpu_of_rank(const std::vector<DeviceInfo>& devices, int local_rank);

/// Collective: with several ranks on a node, fills in what the caller left open in `options`:
/// threads = the CPUs this rank may use / the node's ranks (at least 1), and for the cuda backend
/// (named or chosen by auto) devices = {local rank mod device count}, for opencl device_spec = the
/// GPU gpu_of_rank() gives. May throw (probing).
NodePlacement place_on_node(MPI_Comm comm, Options& options);

/// Collective: chooses the cut dimension from the global bounding box (lo, hi: data units) and
/// places the boundaries at weighted quantiles of a sample of that coordinate. `reach`: per
/// dimension, the largest standard deviation of any point's H_i (h_d for a shared bandwidth), so
/// that a pair within the cutoff is within cutoff · reach_d in every dimension.
Slabs plan_slabs(MPI_Comm comm, const Eigen::Ref<const MatrixF>& local, const std::vector<double>& reach,
                 const std::vector<double>& lo, const std::vector<double>& hi, double cutoff);

/// A rank's prepared units, (x − centre) · unit per dimension (backend.hpp, PreparedData: whitened
/// by h, or by the rows' geometric-mean precision for per-point H_i), read back from the bound data
/// D of `rows` (data units, D.original maps D's rows to them) at the two rows farthest apart in
/// each dimension; `fallback` is the unit of a dimension where all rows coincide.
void prepared_frame(const PreparedData& D, const MatrixF& rows, const std::vector<double>& fallback,
                    std::vector<double>& centre, std::vector<double>& unit);

/// Collective: the domain-decomposition ascent of every point (docs/mpi.md); returns this rank's
/// rows' results. `first_rows`: each rank's first global row (rank order), size R + 1 with n last.
/// `scale`: the prepared units one process would use for all the data ((x − centre) · scale_d),
/// in which the shifts are measured against the tolerance. `queries` (this rank's q_r × k, data
/// units; nullptr = every point is its own query) with `query_first` (each rank's first query,
/// size R + 1): explicit starting points (bin seeds); the results are then those of the queries.
/// `settled` (may be empty): a test of a mode's position (k values, data units) after every step;
/// a mode it accepts stops there, reported converged (the boundary refinement's early stop).
LocalAscent domain_ascent(MPI_Comm comm, const MatrixF& local, const float* weights, const Options& options,
                          const std::vector<double>& scale, const Slabs& slabs,
                          const std::vector<long long>& first_rows, const MatrixF* queries = nullptr,
                          const std::vector<long long>& query_first = {},
                          const std::function<bool(const double*)>& settled = {});

/// How the ring splits a travelling block of modes into chunks (ring.cpp): a block of a modes goes
/// as ceil(a / rows) chunks of `rows` modes (the last one shorter), rows = ceil(a / c) rounded up to
/// a multiple of `granule`, c = a / min_rows clamped to [1, max_chunks]; a chunk never exceeds
/// 2^31 − 1 doubles (one MPI message). The owner of a block chooses its layout and the ranks learn it
/// with the block sizes, so ranks with other settings still agree on every message.
struct RingChunks {
    Index min_rows = 2048;  ///< a chunk carries at least this many modes (unless the block is smaller)
    int max_chunks = 8;  ///< chunks per block at most: the pipeline's depth
    /// Chunk boundaries at multiples of it: the host kernels' blocks of modes (openmp: up to 32) then
    /// fall as in one call for the whole block, so a mode's sums do not depend on the chunking.
    Index granule = 64;
    int fail_rank = -1;  ///< tests only: this rank throws in its sums at hop min(1, R − 1) of the first iteration
};

/// The ring's chunking (internal; tests force small chunks and an injected failure with it). Not
/// thread-safe: set it before the collective call.
RingChunks& ring_chunks();

/// Modes per chunk for a block of `count` modes of `row` doubles each (0 for an empty block).
Index ring_chunk_rows(Index count, std::size_t row, const RingChunks& c);

/// Collective: the ring strategy's ascent (ring.cpp, docs/mpi.md) of this rank's queries (nullptr:
/// its own rows) over all ranks' points, each rank's points bound on its own backend. `scale`:
/// one process's prepared units, in which the shifts meet the tolerance; `weights` this rank's
/// sample weights or nullptr; `settled` as in domain_ascent. Every bandwidth model but the
/// exponential-last one (checked by the caller); a backend without Binding::accumulate throws
/// NotSupported on every rank. Each hop is pipelined: the block travels in chunks (RingChunks), a
/// chunk sent on (MPI_Isend) as soon as its sums are added while the next chunks arrive (MPI_Irecv
/// posted a hop ahead); a rank whose sums throw keeps passing the chunks on and every rank throws
/// DistributedError at the end of that iteration.
LocalAscent ring_ascent(MPI_Comm comm, const MatrixF& local, const float* weights, const Options& options,
                        const std::vector<double>& scale, const MatrixF* queries,
                        const std::function<bool(const double*)>& settled);

}  // namespace meanshift::mpi::detail
