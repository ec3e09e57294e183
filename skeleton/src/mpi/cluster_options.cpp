// Stage 1 of meanshift::mpi::cluster: each rank's arguments checked, the options that change the
// answer compared with rank 0's, and the rank placed on its node (device, share of the cores).
#include "cluster_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace meanshift::mpi::detail {
namespace {

// The options that must agree between ranks (everything that changes the answer), as bytes.
std::vector<double> signature(int k, const Options& o, Strategy strategy)
{
    std::vector<double> s;
    s.push_back(k);
    s.push_back(static_cast<double>(o.bandwidth.kind()));
    s.push_back(static_cast<double>(o.bandwidth.parameters().size()));
    for (double p : o.bandwidth.parameters()) s.push_back(p);
    s.push_back(o.max_iterations);
    s.push_back(o.tolerance);
    s.push_back(o.fixed_iterations ? 1 : 0);
    s.push_back(o.fixed_iterations ? *o.fixed_iterations : 0);
    s.push_back(static_cast<double>(o.grouping));
    s.push_back(o.merge_eps);
    s.push_back(o.cutoff);
    s.push_back(o.exact ? 1 : 0);
    s.push_back(static_cast<double>(o.search));
    s.push_back(static_cast<double>(o.seeding));
    s.push_back(o.bin_size);
    s.push_back(static_cast<double>(o.min_bin_count));
    s.push_back(o.refine_boundaries ? 1 : 0);
    s.push_back(static_cast<double>(strategy));
    return s;
}

const char* const kSignatureNames[] = {"k (dimensions)", "bandwidth kind", "bandwidth size"};

std::string signature_field(std::size_t i, std::size_t nparams)
{
    if (i < 3) return kSignatureNames[i];
    if (i < 3 + nparams) return "bandwidth";
    static const char* const rest[] = {"max_iterations",
                                       "tolerance",
                                       "fixed_iterations",
                                       "fixed_iterations",
                                       "grouping",
                                       "merge_eps",
                                       "cutoff",
                                       "exact",
                                       "search",
                                       "seeding",
                                       "bin_size",
                                       "min_bin_count",
                                       "refine_boundaries",
                                       "strategy",
                                       "sample weights (given or not)"};
    const std::size_t j = i - 3 - nparams;
    return j < sizeof(rest) / sizeof(rest[0]) ? rest[j] : "options";
}
}  // namespace

void check_options(Run& r)
{
    MPI_Comm comm = r.comm;
    const int rank = r.rank, k = r.k;
    const Index n_local = r.n_local;
    const Eigen::Ref<const MatrixF>& local_points = r.local_points;
    const float* local_weights = r.local_weights;
    const Options& options = r.options;
    const Strategy strategy = r.strategy;
    DistributedResult& out = r.out;

    // 1. Options: local validity, then the same on every rank (rank 0's signature broadcast).
    auto t = Clock::now();
    agree(comm, attempt([&] {
              if (k < 1) throw InvalidArgument("the points must have at least one column, got " + std::to_string(k));
              if (options.bin_data && !options.exact)
                  throw InvalidArgument(
                      "Options::bin_data is not distributed; bin seeding (Options::seeding = Bins) is");
              if (options.bandwidth.kind() == BandwidthKind::PerPoint &&
                  (options.bandwidth.per_point_values().rows() != n_local ||
                   options.bandwidth.per_point_values().cols() != k))
                  throw InvalidArgument("per-point bandwidths: each rank passes one row per local point, " +
                                        std::to_string(n_local) + " x " + std::to_string(k) + " here, got " +
                                        std::to_string(options.bandwidth.per_point_values().rows()) + " x " +
                                        std::to_string(options.bandwidth.per_point_values().cols()));
              for (Index i = 0; i < n_local; ++i)
                  for (int d = 0; d < k; ++d)
                      if (!std::isfinite(local_points(i, d)))
                          throw InvalidArgument("local point " + std::to_string(i) + " has a non-finite coordinate " +
                                                std::to_string(local_points(i, d)));
              if (local_weights)
                  for (Index i = 0; i < n_local; ++i)
                      if (!std::isfinite(local_weights[i]) || local_weights[i] < 0)
                          throw InvalidArgument("local weight " + std::to_string(i) + " is " +
                                                std::to_string(local_weights[i]) + ": weights must be finite and >= 0");
          }));
    {
        std::vector<double> mine = signature(k, options, strategy);
        mine.push_back(local_weights ? 1 : 0);
        long long len = static_cast<long long>(mine.size());
        check_mpi(MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, comm), "MPI_Bcast (options)");
        std::vector<double> root(static_cast<std::size_t>(len));
        if (rank == 0) root = mine;
        check_mpi(MPI_Bcast(root.data(), static_cast<int>(len), MPI_DOUBLE, 0, comm), "MPI_Bcast (options)");
        agree(comm, attempt([&] {
                  const std::size_t np = options.bandwidth.parameters().size();
                  for (std::size_t i = 0; i < std::max(mine.size(), root.size()); ++i) {
                      const bool same =
                          i < mine.size() && i < root.size() && std::memcmp(&mine[i], &root[i], sizeof(double)) == 0;
                      if (!same)
                          throw InvalidArgument("options differ from rank 0's: " + signature_field(i, np) +
                                                (i < mine.size() && i < root.size()
                                                     ? " (" + std::to_string(mine[i]) + " here, " +
                                                           std::to_string(root[i]) + " on rank 0)"
                                                     : std::string()));
                  }
              }));
    }
    // One device and a share of the cores per rank on a shared node, where the caller left them open.
    r.run_options = options;
    Options& run_options = r.run_options;
    detail::NodePlacement placement;
    agree(comm, attempt([&] { placement = detail::place_on_node(comm, run_options); }));
    out.local_rank = placement.local_rank;
    out.local_ranks = placement.local_size;
    out.distributed.seconds_check = since(t);
}

}  // namespace meanshift::mpi::detail
