// meanshift::mpi::cluster (include/meanshift/mpi.hpp, docs/mpi.md) as a pipeline of collective
// stages (cluster_run.hpp): option checks (cluster_options.cpp); the global frame and the strategy
// ("replicated points, modes split": cluster() with explicit seeds and GroupingMethod::None on
// every rank, or domain.cpp's loop where the refinement must stop seeds early; "domain
// decomposition" in domain.cpp; the ring in ring.cpp) (cluster_frame.cpp); bin seeding, data
// binning, the ascents and the grouping on rank 0 (cluster_ascent.cpp); the boundary refinement,
// the clusters' numbering and the labels of every rank's rows (cluster_labels.cpp). Only the public
// API of the library is used, and the header-only boundary rule of the bin seeding's refinement
// (boundary_bins.hpp), so both re-seed the same bins.
#include "cluster_run.hpp"

namespace meanshift::mpi {

const char* to_string(Strategy s) noexcept
{
    switch (s) {
    case Strategy::Auto: return "auto";
    case Strategy::ReplicatedPoints: return "replicated";
    case Strategy::DomainDecomposition: return "domain";
    case Strategy::Ring: return "ring";
    }
    return "?";
}

DistributedResult cluster(MPI_Comm comm, const Eigen::Ref<const MatrixF>& local_points, const Options& options,
                          Strategy strategy)
{
    return cluster(comm, local_points, nullptr, options, strategy);
}

DistributedResult cluster(MPI_Comm comm, const Eigen::Ref<const MatrixF>& local_points, const float* local_weights,
                          const Options& options, Strategy strategy)
{
    const auto t_start = detail::Clock::now();
    DistributedResult out;
    detail::Run run(comm, local_points, local_weights, options, strategy, out);
    out.ranks = run.size;
    detail::check_options(run);
    detail::plan_frame(run);
    detail::Ascents ascents = detail::ascend_and_group(run);
    detail::Refinement refinement = detail::refine_boundaries(run, ascents);
    const detail::Numbering clusters = detail::number_clusters(run, ascents, refinement);
    detail::label_points(run, ascents, refinement, clusters);
    out.distributed.seconds_total = detail::since(t_start);
    return out;
}

}  // namespace meanshift::mpi
