// Stage 2 of meanshift::mpi::cluster: the rows of every rank, the global bounding box, one
// process's prepared units (the grouping's, the bins', the slabs'), the strategy and the seeding.
#include "cluster_run.hpp"

#include "skeleton/src/approx/boundary_bins.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <vector>

namespace meanshift::mpi::detail {
namespace {

// Every rank's row count, their offsets and the total; the checks that need the total.
void count_rows(Run& r)
{
    const std::size_t size = static_cast<std::size_t>(r.size);
    std::vector<long long> counts64(size);
    long long mine64 = r.n_local;
    check_mpi(MPI_Allgather(&mine64, 1, MPI_LONG_LONG, counts64.data(), 1, MPI_LONG_LONG, r.comm), "MPI_Allgather");
    r.counts.assign(size, 0);
    r.displs.assign(size, 0);
    r.first_rows.assign(size + 1, 0);
    long long total = 0;
    for (std::size_t q = 0; q < size; ++q) {
        r.displs[q] = static_cast<int>(std::min<long long>(total, INT_MAX));
        r.counts[q] = static_cast<int>(std::min<long long>(counts64[q], INT_MAX));
        r.first_rows[q] = total;
        total += counts64[q];
    }
    r.first_rows[size] = total;
    r.total = total;
    r.truncated = !r.options.exact && std::isfinite(r.options.cutoff);
    const bool truncated = r.truncated;
    const Strategy strategy = r.strategy;
    agree(r.comm, attempt([&] {
              if (total < 1) throw InvalidArgument("no points on any rank");
              if (total > INT_MAX) throw InvalidArgument("more than 2^31 - 1 points in all: not supported yet");
              if (strategy == Strategy::DomainDecomposition && !truncated)
                  throw InvalidArgument(
                      "the domain decomposition needs the truncated kernel (a finite Options::cutoff, "
                      "not exact): with the exact kernel every point reaches every mode");
          }));
    r.out.global_points = total;
    r.out.first_row = r.displs[static_cast<std::size_t>(r.rank)];
}

// The global bounding box, and one process's prepared units, (x − centre) · scale_d (prepare.cpp):
// scale_d = 1/h_d for a shared bandwidth, the geometric mean of the points' precisions 1/σ_id²
// (square-rooted) for per-point H_i; and reach_d, the largest σ_id of any point (h_d when shared),
// for the slabs' halos.
void global_units(Run& r)
{
    const int k = r.k;
    const Index n_local = r.n_local;
    const Eigen::Ref<const MatrixF>& local_points = r.local_points;
    const Options& options = r.options;
    MPI_Comm comm = r.comm;
    std::vector<double>& lo = r.lo;
    std::vector<double>& hi = r.hi;
    lo.assign(static_cast<std::size_t>(k), std::numeric_limits<double>::infinity());
    hi.assign(static_cast<std::size_t>(k), -std::numeric_limits<double>::infinity());
    for (Index i = 0; i < n_local; ++i)
        for (int d = 0; d < k; ++d) {
            lo[std::size_t(d)] = std::min(lo[std::size_t(d)], static_cast<double>(local_points(i, d)));
            hi[std::size_t(d)] = std::max(hi[std::size_t(d)], static_cast<double>(local_points(i, d)));
        }
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, lo.data(), k, MPI_DOUBLE, MPI_MIN, comm), "MPI_Allreduce (bounding box)");
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, hi.data(), k, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce (bounding box)");
    std::vector<double>& scale = r.scale;
    std::vector<double>& reach = r.reach;
    scale.assign(static_cast<std::size_t>(k), 0);
    reach.assign(static_cast<std::size_t>(k), 0);
    std::vector<double> log_precision(static_cast<std::size_t>(k), 0), var(static_cast<std::size_t>(k)),
        x(static_cast<std::size_t>(k));
    agree(comm, attempt([&] {
              for (Index i = 0; i < n_local; ++i) {
                  for (int d = 0; d < k; ++d) x[std::size_t(d)] = local_points(i, d);
                  options.bandwidth.covariance_diagonal(i, x.data(), k, var.data());  // throws for a singular H_i
                  for (int d = 0; d < k; ++d) {
                      log_precision[std::size_t(d)] -= std::log(var[std::size_t(d)]);
                      reach[std::size_t(d)] = std::max(reach[std::size_t(d)], std::sqrt(var[std::size_t(d)]));
                  }
              }
          }));
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, log_precision.data(), k, MPI_DOUBLE, MPI_SUM, comm),
              "MPI_Allreduce (precisions)");
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, reach.data(), k, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce (reach)");
    const std::vector<double>& p = options.bandwidth.parameters();
    for (int d = 0; d < k; ++d)
        scale[std::size_t(d)] = options.bandwidth.shared()
                                    ? 1.0 / (p.size() == 1 ? p[0] : p[static_cast<std::size_t>(d)])
                                    : std::sqrt(std::exp(log_precision[std::size_t(d)] / static_cast<double>(r.total)));
}

// The strategy: the ring when asked; the domain decomposition when asked, or (Auto) when its
// slabs leave no rank more than kDomainMaxShare of the points; else replicated points.
void choose_strategy(Run& r)
{
    const Options& options = r.options;
    const Strategy strategy = r.strategy;
    // Asked for explicitly, the decomposition also runs on one rank (one slab: a test of the path).
    // Sec. IV's exponential-last model moves H_i with the coordinates: no fixed halo bounds it.
    const bool decomposable = options.bandwidth.kind() != BandwidthKind::ExponentialLast;
    agree(r.comm, attempt([&] {
              if (strategy == Strategy::DomainDecomposition && !decomposable)
                  throw InvalidArgument("the domain decomposition does not take the exponential-last bandwidth model "
                                        "(H_i depends on the mode's coordinates); use the replicated strategy");
              if (strategy == Strategy::Ring && !decomposable)
                  throw InvalidArgument(
                      "the ring strategy does not take the exponential-last bandwidth model (H_i depends "
                      "on the mode's coordinates); use the replicated strategy");
          }));
    r.chosen = Strategy::ReplicatedPoints;
    if (strategy == Strategy::Ring) {
        r.chosen = Strategy::Ring;
    } else if (r.truncated && decomposable && strategy != Strategy::ReplicatedPoints &&
               (r.size > 1 || strategy == Strategy::DomainDecomposition)) {
        r.slabs = detail::plan_slabs(r.comm, r.local_points, r.reach, r.lo, r.hi, options.cutoff);
        if (strategy == Strategy::DomainDecomposition || r.slabs.largest_share <= kDomainMaxShare)
            r.chosen = Strategy::DomainDecomposition;
    }
    r.out.strategy = r.chosen;
}

// The queries: every point (Seeding::AllPoints, exact) or the bins' seeds (Seeding::Bins). Bins
// whose int64 keys would overflow (a tiny bandwidth or bin_size, a huge coordinate): every point
// seeds its own ascent instead, as one process does. The extent comes from the global bounding
// box, so every rank decides alike without communicating.
void choose_seeding(Run& r)
{
    const int k = r.k;
    const Options& options = r.options;
    r.mine_rows = r.local_points;  // contiguous row-major copy
    r.mid.assign(static_cast<std::size_t>(k), 0);
    for (int d = 0; d < k; ++d) r.mid[std::size_t(d)] = 0.5 * (r.lo[std::size_t(d)] + r.hi[std::size_t(d)]);
    r.extent = 0;
    for (int d = 0; d < k; ++d)
        r.extent = std::max(r.extent, 0.5 * (r.hi[std::size_t(d)] - r.lo[std::size_t(d)]) * r.scale[std::size_t(d)]);
    r.finest = options.refine_boundaries ? options.bin_size / 4 : options.bin_size;
    r.wants_bins = !options.exact && options.seeding == Seeding::Bins;
    r.seeded = r.wants_bins && r.bins_fit(r.finest);
}

}  // namespace

Run::Run(MPI_Comm comm_, const Eigen::Ref<const MatrixF>& local_points_, const float* local_weights_,
         const Options& options_, Strategy strategy_, DistributedResult& out_)
    : comm(comm_),
      local_points(local_points_),
      local_weights(local_weights_),
      options(options_),
      strategy(strategy_),
      out(out_)
{
    check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    k = static_cast<int>(local_points.cols());
    n_local = local_points.rows();
}

MatrixD Run::prepared(const MatrixF& y) const
{
    MatrixD Y = y.cast<double>();
    for (int d = 0; d < k; ++d) Y.col(d) = ((Y.col(d).array() - mid[std::size_t(d)]) * scale[std::size_t(d)]).matrix();
    return Y;
}

bool Run::bins_fit(double side) const
{
    // Half of kMaxBinCell leaves room for the rounding of (x − mid) · scale.
    return side > 0 && extent / side < 0.5 * ::meanshift::detail::kMaxBinCell;
}

void plan_frame(Run& r)
{
    r.row_f = std::make_unique<RowType>(r.k, MPI_FLOAT);
    count_rows(r);
    global_units(r);
    choose_strategy(r);
    choose_seeding(r);
}

}  // namespace meanshift::mpi::detail
