// meanshift::mpi::cluster (include/meanshift/mpi.hpp, docs/mpi.md): option checks, the strategy
// ("replicated points, modes split" here: cluster() with explicit seeds and GroupingMethod::None on
// every rank, or domain.cpp's loop over every point where the refinement must stop seeds early;
// "domain decomposition" in domain.cpp), bin seeding, its refinement and data binning across the
// ranks, then the grouping (group_modes() on rank 0) and
// the labels of every rank's rows. Only the public API of the library is used, and the header-only
// boundary rule of the bin seeding's refinement (boundary_bins.hpp), so both re-seed the same bins.
#include "common.hpp"

#include "skeleton/src/approx/boundary_bins.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>
#include <typeinfo>
#include <vector>

namespace meanshift::mpi {
namespace {

using detail::attempt;
using detail::check_mpi;
using detail::Clock;
using detail::RowType;
using detail::since;

/// Strategy::Auto takes the domain decomposition when no rank would hold more than this share of
/// the points (slab + halo): beyond it the replicated strategy does the same work with less traffic.
constexpr double kDomainMaxShare = 0.75;

std::string kind_of(const std::exception& e)
{
    if (dynamic_cast<const DistributedError*>(&e)) return static_cast<const DistributedError&>(e).kind();
    if (dynamic_cast<const InvalidArgument*>(&e)) return "InvalidArgument";
    if (dynamic_cast<const BackendUnavailable*>(&e)) return "BackendUnavailable";
    if (dynamic_cast<const DeviceError*>(&e)) return "DeviceError";
    if (dynamic_cast<const NotSupported*>(&e)) return "NotSupported";
    if (dynamic_cast<const IoError*>(&e)) return "IoError";
    if (dynamic_cast<const Error*>(&e)) return "Error";
    return "std::exception";
}

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

void agree(MPI_Comm comm, std::exception_ptr local_error)
{
    int rank = 0, size = 1;
    check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    int mine = local_error ? rank : INT_MAX, first = INT_MAX;
    check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce (error flag)");
    if (first == INT_MAX) return;

    // The lowest failing rank broadcasts its message (and the class of its exception).
    std::string text, kind;
    if (rank == first) {
        try {
            std::rethrow_exception(local_error);
        } catch (const DistributedError& e) {  // already agreed elsewhere: keep its text
            text = e.what();
            kind = e.kind();
        } catch (const std::exception& e) {
            text = "rank " + std::to_string(rank) + ": " + e.what();
            kind = kind_of(e);
        } catch (...) {
            text = "rank " + std::to_string(rank) + ": unknown exception";
            kind = "unknown";
        }
    }
    long long lengths[2] = {static_cast<long long>(text.size()), static_cast<long long>(kind.size())};
    check_mpi(MPI_Bcast(lengths, 2, MPI_LONG_LONG, first, comm), "MPI_Bcast (error length)");
    text.resize(static_cast<std::size_t>(lengths[0]));
    kind.resize(static_cast<std::size_t>(lengths[1]));
    if (lengths[0] > 0)
        check_mpi(MPI_Bcast(text.data(), static_cast<int>(lengths[0]), MPI_CHAR, first, comm), "MPI_Bcast (error)");
    if (lengths[1] > 0)
        check_mpi(MPI_Bcast(kind.data(), static_cast<int>(lengths[1]), MPI_CHAR, first, comm), "MPI_Bcast (error)");
    throw DistributedError(first, kind, text);
}

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
    const auto t_start = Clock::now();
    int rank = 0, size = 1;
    check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    const int k = static_cast<int>(local_points.cols());
    const Index n_local = local_points.rows();

    DistributedResult out;
    out.ranks = size;

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
    Options run_options = options;
    detail::NodePlacement placement;
    agree(comm, attempt([&] { placement = detail::place_on_node(comm, run_options); }));
    out.local_rank = placement.local_rank;
    out.local_ranks = placement.local_size;
    out.distributed.seconds_check = since(t);

    // 2. Row counts, the global bounding box (the grouping's units, the slabs), the strategy.
    t = Clock::now();
    const RowType row_f(k, MPI_FLOAT);
    std::vector<long long> counts64(static_cast<std::size_t>(size));
    long long mine64 = n_local;
    check_mpi(MPI_Allgather(&mine64, 1, MPI_LONG_LONG, counts64.data(), 1, MPI_LONG_LONG, comm), "MPI_Allgather");
    std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
    std::vector<long long> first_rows(static_cast<std::size_t>(size) + 1, 0);
    long long total = 0;
    for (int r = 0; r < size; ++r) {
        displs[static_cast<std::size_t>(r)] = static_cast<int>(std::min<long long>(total, INT_MAX));
        counts[static_cast<std::size_t>(r)] =
            static_cast<int>(std::min<long long>(counts64[static_cast<std::size_t>(r)], INT_MAX));
        first_rows[static_cast<std::size_t>(r)] = total;
        total += counts64[static_cast<std::size_t>(r)];
    }
    first_rows[static_cast<std::size_t>(size)] = total;
    const bool truncated = !options.exact && std::isfinite(options.cutoff);
    agree(comm, attempt([&] {
              if (total < 1) throw InvalidArgument("no points on any rank");
              if (total > INT_MAX) throw InvalidArgument("more than 2^31 - 1 points in all: not supported yet");
              if (strategy == Strategy::DomainDecomposition && !truncated)
                  throw InvalidArgument(
                      "the domain decomposition needs the truncated kernel (a finite Options::cutoff, "
                      "not exact): with the exact kernel every point reaches every mode");
          }));
    out.global_points = total;
    out.first_row = displs[static_cast<std::size_t>(rank)];
    std::vector<double> lo(static_cast<std::size_t>(k), std::numeric_limits<double>::infinity()),
        hi(static_cast<std::size_t>(k), -std::numeric_limits<double>::infinity());
    for (Index i = 0; i < n_local; ++i)
        for (int d = 0; d < k; ++d) {
            lo[std::size_t(d)] = std::min(lo[std::size_t(d)], static_cast<double>(local_points(i, d)));
            hi[std::size_t(d)] = std::max(hi[std::size_t(d)], static_cast<double>(local_points(i, d)));
        }
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, lo.data(), k, MPI_DOUBLE, MPI_MIN, comm), "MPI_Allreduce (bounding box)");
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, hi.data(), k, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce (bounding box)");
    // One process's prepared units, (x − centre) · scale_d (prepare.cpp): scale_d = 1/h_d for a shared
    // bandwidth, the geometric mean of the points' precisions 1/σ_id² (square-rooted) for per-point
    // H_i; and reach_d, the largest σ_id of any point (h_d when shared), for the slabs' halos.
    std::vector<double> scale(static_cast<std::size_t>(k)), reach(static_cast<std::size_t>(k), 0);
    {
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
            scale[std::size_t(d)] =
                options.bandwidth.shared()
                    ? 1.0 / (p.size() == 1 ? p[0] : p[static_cast<std::size_t>(d)])
                    : std::sqrt(std::exp(log_precision[std::size_t(d)] / static_cast<double>(total)));
    }
    detail::Slabs slabs;
    Strategy chosen = Strategy::ReplicatedPoints;
    // Asked for explicitly, the decomposition also runs on one rank (one slab: a test of the path).
    // Sec. IV's exponential-last model moves H_i with the coordinates: no fixed halo bounds it.
    const bool decomposable = options.bandwidth.kind() != BandwidthKind::ExponentialLast;
    agree(comm, attempt([&] {
              if (strategy == Strategy::DomainDecomposition && !decomposable)
                  throw InvalidArgument("the domain decomposition does not take the exponential-last bandwidth model "
                                        "(H_i depends on the mode's coordinates); use the replicated strategy");
              if (strategy == Strategy::Ring && !decomposable)
                  throw InvalidArgument(
                      "the ring strategy does not take the exponential-last bandwidth model (H_i depends "
                      "on the mode's coordinates); use the replicated strategy");
          }));
    if (strategy == Strategy::Ring) {
        chosen = Strategy::Ring;
    } else if (truncated && decomposable && strategy != Strategy::ReplicatedPoints &&
               (size > 1 || strategy == Strategy::DomainDecomposition)) {
        slabs = detail::plan_slabs(comm, local_points, reach, lo, hi, options.cutoff);
        if (strategy == Strategy::DomainDecomposition || slabs.largest_share <= kDomainMaxShare)
            chosen = Strategy::DomainDecomposition;
    }
    out.strategy = chosen;

    // 3. The queries: every point (Seeding::AllPoints, exact) or the bins' seeds (Seeding::Bins),
    //    split evenly over the ranks; their ascents by the chosen strategy.
    const MatrixF mine_rows = local_points;  // contiguous row-major copy
    std::vector<double> mid(static_cast<std::size_t>(k));
    for (int d = 0; d < k; ++d) mid[std::size_t(d)] = 0.5 * (lo[std::size_t(d)] + hi[std::size_t(d)]);
    // Bins whose int64 keys would overflow (a tiny bandwidth or bin_size, a huge coordinate; issue
    // 26): every point seeds its own ascent instead, as one process does. The extent comes from the
    // global bounding box, so every rank decides alike without communicating (half of kMaxBinCell
    // leaves room for the rounding of (x − mid) · scale).
    double extent = 0;  // the largest |prepared coordinate|
    for (int d = 0; d < k; ++d)
        extent = std::max(extent, 0.5 * (hi[std::size_t(d)] - lo[std::size_t(d)]) * scale[std::size_t(d)]);
    auto bins_fit = [&](double side) { return side > 0 && extent / side < 0.5 * ::meanshift::detail::kMaxBinCell; };
    const double finest = options.refine_boundaries ? options.bin_size / 4 : options.bin_size;
    const bool wants_bins = !options.exact && options.seeding == Seeding::Bins;
    const bool seeded = wants_bins && bins_fit(finest);
    // Prepared units of one process, (x − mid) · scale (prepare.cpp), for the grouping and the bins.
    auto prepared = [&](const MatrixF& y) {
        MatrixD Y = y.cast<double>();
        for (int d = 0; d < k; ++d)
            Y.col(d) = ((Y.col(d).array() - mid[std::size_t(d)]) * scale[std::size_t(d)]).matrix();
        return Y;
    };

    // Data binning (Options::data_bin_size, set below): the ascents run on the merged cells' means,
    // weighted by their counts (× sample weights), instead of the points.
    detail::BinSeeds cells;
    bool binned = false;
    MatrixF my_cells;  // this rank's share of the cells (domain decomposition, ring)
    std::vector<float> my_cell_weights;
    std::vector<long long> cell_first;  // each rank's first cell, R + 1 values
    float no_cells = 0;  // a weight pointer for a rank without cells: every rank must pass weights or none

    // The replicated strategy's copy of every point (weights, H_i), gathered once for all ascents.
    MatrixF all;
    std::vector<float> all_weights;
    Options replica_options = run_options;
    bool replicated = false;
    auto replicate = [&] {
        const auto t_r = Clock::now();
        replica_options.grouping = GroupingMethod::None;
        replicated = true;
        if (binned) {  // every rank already holds every cell (plan_bin_seeds broadcasts them)
            all = cells.seeds;
            all_weights.assign(cells.weight.begin(), cells.weight.end());
            out.local_points_held = all.rows();
            return;
        }
        all.resize(static_cast<Index>(total), k);
        check_mpi(MPI_Allgatherv(n_local ? mine_rows.data() : nullptr, static_cast<int>(n_local), row_f.type,
                                 all.data(), counts.data(), displs.data(), row_f.type, comm),
                  "MPI_Allgatherv (points)");
        if (options.bandwidth.kind() == BandwidthKind::PerPoint) {  // every point's H_i, as its rows
            MatrixD all_h(static_cast<Index>(total), k);
            const MatrixD mine_h = options.bandwidth.per_point_values();  // contiguous row-major
            const RowType row_d(k, MPI_DOUBLE);
            check_mpi(MPI_Allgatherv(n_local ? mine_h.data() : nullptr, static_cast<int>(n_local), row_d.type,
                                     all_h.data(), counts.data(), displs.data(), row_d.type, comm),
                      "MPI_Allgatherv (per-point bandwidths)");
            replica_options.bandwidth = Bandwidth::per_point(std::move(all_h));
        }
        if (local_weights) {
            all_weights.resize(static_cast<std::size_t>(total));
            check_mpi(MPI_Allgatherv(n_local ? local_weights : nullptr, static_cast<int>(n_local), MPI_FLOAT,
                                     all_weights.data(), counts.data(), displs.data(), MPI_FLOAT, comm),
                      "MPI_Allgatherv (weights)");
        }
        out.distributed.seconds_allgather += since(t_r);
        out.local_points_held = static_cast<Index>(total);
    };

    // Collective: the ascents of this rank's queries (nullptr: its own rows, the first_rows split) by
    // the chosen strategy; query_first: each rank's first query (R + 1 values).
    auto ascend = [&](const MatrixF* queries, const std::vector<long long>& query_first,
                      const std::function<bool(const double*)>& settled) {
        Result a;
        auto t_a = Clock::now();
        auto take = [&](detail::LocalAscent d) {  // the loop's results as a Result, its timings counted
            out.distributed.seconds_allgather += d.seconds_exchange;
            out.distributed.seconds_migrate += d.seconds_migrate;
            out.distributed.seconds_ascent += since(t_a) - d.seconds_exchange;
            out.local_points_held = d.points_held;
            out.modes_migrated += d.migrated;
            a = std::move(d.bind_info);
            a.modes = std::move(d.modes);
            a.iterations = std::move(d.iterations);
            a.converged = std::move(d.converged);
            a.no_support = std::move(d.no_support);
            a.modes_without_support = 0;
            return a;
        };
        if (chosen == Strategy::Ring) {  // with data binning the cells are the points that stay on their rank
            t_a = Clock::now();
            const float* cell_weights = my_cell_weights.empty() ? &no_cells : my_cell_weights.data();
            return take(
                binned ? detail::ring_ascent(comm, my_cells, cell_weights, run_options, scale, queries, settled)
                       : detail::ring_ascent(comm, mine_rows, local_weights, run_options, scale, queries, settled));
        }
        if (chosen == Strategy::DomainDecomposition) {
            const float* cell_weights = my_cell_weights.empty() ? &no_cells : my_cell_weights.data();
            return take(binned ? detail::domain_ascent(comm, my_cells, cell_weights, run_options, scale, slabs,
                                                       cell_first, queries, query_first, settled)
                               : detail::domain_ascent(comm, mine_rows, local_weights, run_options, scale, slabs,
                                                       first_rows, queries, query_first, settled));
        }
        if (!replicated) replicate();
        if (settled) {
            // A stopping test needs the ascent one iteration at a time: domain_ascent's loop, every
            // rank holding every point and keeping its own queries.
            detail::Slabs here;
            here.everywhere = true;
            const std::vector<long long> all_first(static_cast<std::size_t>(size) + 1, 0);
            t_a = Clock::now();
            return take(detail::domain_ascent(comm, all, all_weights.empty() ? nullptr : all_weights.data(),
                                              replica_options, scale, here, all_first, queries, query_first, settled));
        }
        t_a = Clock::now();
        const MatrixF& q = queries ? *queries : mine_rows;
        std::exception_ptr ascent_error = attempt([&] {
            if (q.rows() > 0) {
                const Eigen::Ref<const MatrixF> seeds(q);
                a = meanshift::cluster(all, replica_options, all_weights.empty() ? nullptr : all_weights.data(),
                                       &seeds);
            } else {
                a.modes = MatrixF(0, k);
            }
        });
        out.distributed.seconds_ascent += since(t_a);
        t_a = Clock::now();
        agree(comm, ascent_error);
        out.distributed.seconds_wait += since(t_a);
        return a;
    };

    // Seeds split evenly over the ranks; their ascents; every seed's mode and outcome (iterations,
    // converged, no support) to every rank, which labels its own points from them.
    struct SeedAscent {
        MatrixF modes;  ///< S × k, data units, every rank
        std::vector<int> state;  ///< S × 3
        Result local;  ///< this rank's share (backend, timing)
    };
    auto ascend_seeds = [&](const MatrixF& seeds, const std::function<bool(const double*)>& settled) {
        const long long S = seeds.rows();
        std::vector<int> qcounts(static_cast<std::size_t>(size)), qdispls(static_cast<std::size_t>(size));
        std::vector<long long> qfirst(static_cast<std::size_t>(size) + 1, 0);
        for (int r = 0; r < size; ++r) {
            qcounts[std::size_t(r)] = static_cast<int>(S / size + (r < S % size ? 1 : 0));
            qfirst[std::size_t(r + 1)] = qfirst[std::size_t(r)] + qcounts[std::size_t(r)];
            qdispls[std::size_t(r)] = static_cast<int>(qfirst[std::size_t(r)]);
        }
        const MatrixF mine = seeds.middleRows(qfirst[std::size_t(rank)], qcounts[std::size_t(rank)]);
        SeedAscent s;
        s.local = ascend(&mine, qfirst, settled);
        const auto t_g = Clock::now();
        const Index q_local = mine.rows();
        s.modes = MatrixF(static_cast<Index>(S), k);
        check_mpi(MPI_Allgatherv(q_local ? s.local.modes.data() : nullptr, static_cast<int>(q_local), row_f.type,
                                 s.modes.data(), qcounts.data(), qdispls.data(), row_f.type, comm),
                  "MPI_Allgatherv (seed modes)");
        std::vector<int> mine_state;
        for (Index q = 0; q < q_local; ++q) {
            mine_state.push_back(s.local.iterations[std::size_t(q)]);
            mine_state.push_back(s.local.converged[std::size_t(q)] ? 1 : 0);
            mine_state.push_back(s.local.no_support[std::size_t(q)] ? 1 : 0);
        }
        s.state.resize(static_cast<std::size_t>(S) * 3);
        const RowType triple(3, MPI_INT);
        check_mpi(MPI_Allgatherv(mine_state.data(), static_cast<int>(q_local), triple.type, s.state.data(),
                                 qcounts.data(), qdispls.data(), triple.type, comm),
                  "MPI_Allgatherv (seed outcomes)");
        out.distributed.seconds_gather += since(t_g);
        return s;
    };

    Result local;
    detail::BinSeeds bins;
    SeedAscent coarse;
    MatrixF modes_all;  // not seeded: every point's mode, on rank 0
    if (seeded) {
        const auto t_bins = Clock::now();
        bins = detail::plan_bin_seeds(comm, mine_rows, options, mid, scale);
        // Data binning as one process does it (shared bandwidths; 0 = automatic: cells of bin_size/4
        // when they leave at most n/4 weighted points). Automatic skips the merge when one rank alone
        // has more cells than that (a lower bound of the merged count), else decides on the merge.
        const double s = options.data_bin_size;
        if (options.bandwidth.shared() && s >= 0 && std::isfinite(s) && bins_fit(s == 0 ? options.bin_size / 4 : s)) {
            const bool automatic = s == 0;
            Options cell_options = options;
            cell_options.bin_size = automatic ? options.bin_size / 4 : s;
            cell_options.min_bin_count = 1;
            long long lower = automatic ? detail::count_cells(mine_rows, cell_options.bin_size, mid, scale) : 0;
            check_mpi(MPI_Allreduce(MPI_IN_PLACE, &lower, 1, MPI_LONG_LONG, MPI_MAX, comm), "MPI_Allreduce (cells)");
            if (!automatic || 4 * lower <= total) {
                cells = detail::plan_bin_seeds(comm, mine_rows, cell_options, mid, scale, local_weights);
                binned = !automatic || 4 * static_cast<long long>(cells.seeds.rows()) <= total;
            }
            if (binned) {
                const long long B = cells.seeds.rows();
                cell_first.assign(static_cast<std::size_t>(size) + 1, 0);
                for (int r = 0; r < size; ++r)
                    cell_first[std::size_t(r + 1)] = cell_first[std::size_t(r)] + B / size + (r < B % size ? 1 : 0);
                const long long c0 = cell_first[std::size_t(rank)], c1 = cell_first[std::size_t(rank + 1)];
                my_cells = cells.seeds.middleRows(c0, c1 - c0);
                my_cell_weights.assign(cells.weight.begin() + c0, cells.weight.begin() + c1);
            }
        }
        out.distributed.seconds_binning += since(t_bins);
        coarse = ascend_seeds(bins.seeds, {});
        local = coarse.local;
    } else {
        local = ascend(nullptr, first_rows, {});
        t = Clock::now();
        modes_all = rank == 0 ? MatrixF(static_cast<Index>(total), k) : MatrixF(0, k);
        check_mpi(MPI_Gatherv(n_local ? local.modes.data() : nullptr, static_cast<int>(n_local), row_f.type,
                              rank == 0 ? modes_all.data() : nullptr, counts.data(), displs.data(), row_f.type, 0,
                              comm),
                  "MPI_Gatherv (modes)");
        out.distributed.seconds_gather += since(t);
    }
    const long long S = seeded ? coarse.modes.rows() : 0;

    // 4. The modes grouped on rank 0 in one process's prepared units (as cluster() groups them).
    t = Clock::now();
    const bool grouped = options.grouping != GroupingMethod::None;
    Grouping g;
    agree(comm, attempt([&] {
              if (rank == 0 && grouped)
                  g = group_modes(prepared(seeded ? coarse.modes : modes_all), options.merge_eps, options.grouping);
          }));
    out.distributed.seconds_group += since(t);

    // 4b. Boundary refinement (Options::refine_boundaries, as one process does it, docs/mpi.md): the
    //     points of bins on a basin boundary are binned again at bin_size/4 across the ranks; those
    //     fine seeds ascend by the same strategy, and each takes the label of the coarse bin its mode
    //     lies in when that bin is off the boundaries, else that of the nearest cluster centre.
    std::vector<char> boundary;
    detail::BinSeeds fine;
    SeedAscent refined;
    std::vector<int> fine_labels;
    std::vector<Index> settled_bin;  // per fine seed: the bin off the boundaries it stopped in, or -1
    long long n_boundary = 0;
    if (seeded && grouped && options.refine_boundaries) {
        t = Clock::now();
        const std::size_t B = bins.count.size();
        std::vector<int> bin_label(rank == 0 ? B : 0);
        boundary.assign(B, 0);
        if (rank == 0) {
            for (std::size_t j = 0; j < B; ++j) bin_label[j] = g.labels[std::size_t(bins.seed_of_bin[j])];
            boundary = ::meanshift::detail::boundary_bins(bins.keys, bin_label, bins.count, options.min_bin_count, k,
                                                          [&](const std::int64_t* c) { return bins.find(c); });
        }
        check_mpi(MPI_Bcast(boundary.data(), static_cast<int>(B), MPI_CHAR, 0, comm), "MPI_Bcast (boundary bins)");
        for (char bd : boundary) n_boundary += bd;
        out.distributed.seconds_group += since(t);
        if (n_boundary > 0) {
            std::vector<Index> rows;
            agree(comm, attempt([&] {
                      for (Index i = 0; i < n_local; ++i)
                          if (boundary[std::size_t(bins.bin_of(mine_rows.data() + i * k, mid, scale))])
                              rows.push_back(i);
                  }));
            MatrixF mine_boundary(static_cast<Index>(rows.size()), k);
            for (std::size_t r = 0; r < rows.size(); ++r)
                mine_boundary.row(static_cast<Index>(r)) = mine_rows.row(rows[r]);
            Options fine_options = options;
            fine_options.bin_size = options.bin_size / 4;
            fine_options.min_bin_count = 1;
            const auto t_fine = Clock::now();
            fine = detail::plan_bin_seeds(comm, mine_boundary, fine_options, mid, scale);
            out.distributed.seconds_binning += since(t_fine);
            // As one process: a fine seed stops as soon as it enters a bin off the boundaries (the
            // domain decomposition's loop applies this; the replicated ranks run whole ascents).
            refined = ascend_seeds(fine.seeds, [&](const double* y) {
                const Index j = bins.bin_at(y, mid, scale);
                return j >= 0 && !boundary[std::size_t(j)];
            });
            local.timing.pair_interactions += refined.local.timing.pair_interactions;
            local.timing.seconds_kernels += refined.local.timing.seconds_kernels;
            local.timing.iterations += refined.local.timing.iterations;
            t = Clock::now();
            const Index F = refined.modes.rows();
            // Every rank: the settled bin each fine seed ended in (-1: none), whose seed's mode it takes.
            settled_bin.assign(static_cast<std::size_t>(F), -1);
            std::vector<double> y(static_cast<std::size_t>(k));
            for (Index f = 0; f < F; ++f) {
                for (int d = 0; d < k; ++d) y[std::size_t(d)] = refined.modes(f, d);
                const Index j = bins.bin_at(y.data(), mid, scale);
                if (j >= 0 && !boundary[std::size_t(j)]) settled_bin[std::size_t(f)] = j;
            }
            fine_labels.assign(static_cast<std::size_t>(F), 0);
            agree(comm, attempt([&] {
                      if (rank != 0) return;
                      const MatrixD Z = prepared(refined.modes);
                      for (Index f = 0; f < F; ++f) {
                          const Index j = settled_bin[std::size_t(f)];
                          if (j >= 0) {
                              fine_labels[std::size_t(f)] = bin_label[std::size_t(j)];
                          } else {
                              Index best = 0;
                              (g.centres.rowwise() - Z.row(f)).rowwise().squaredNorm().minCoeff(&best);
                              fine_labels[std::size_t(f)] = static_cast<int>(best);
                          }
                      }
                  }));
            out.distributed.seconds_group += since(t);
        }
    }
    const bool refine = n_boundary > 0;

    // 5. Clusters renumbered by their points (stable, largest first) as one process numbers them;
    //    centres, sizes and labels to every rank.
    t = Clock::now();
    std::vector<int> seed_labels;  // per seed (seeded) or per point (on rank 0)
    MatrixD centres;
    std::vector<long long> sizes;
    agree(comm, attempt([&] {
              if (rank != 0 || !grouped) return;
              if (seeded) {
                  std::vector<long long> points(g.sizes.size(), 0);
                  for (std::size_t b = 0; b < bins.count.size(); ++b)
                      if (!refine || !boundary[b])
                          points[std::size_t(g.labels[std::size_t(bins.seed_of_bin[b])])] += bins.count[b];
                  for (std::size_t f = 0; f < fine_labels.size(); ++f)
                      points[std::size_t(fine_labels[f])] += fine.count[f];
                  std::vector<int> by(points.size());
                  std::iota(by.begin(), by.end(), 0);
                  std::stable_sort(by.begin(), by.end(),
                                   [&](int x, int y) { return points[std::size_t(x)] > points[std::size_t(y)]; });
                  std::vector<int> renumber(points.size());
                  MatrixD sorted(static_cast<Index>(points.size()), k);
                  for (std::size_t j = 0; j < by.size(); ++j) {
                      renumber[std::size_t(by[j])] = static_cast<int>(j);
                      sorted.row(static_cast<Index>(j)) = g.centres.row(by[j]);
                      sizes.push_back(points[std::size_t(by[j])]);
                  }
                  // Clusters no point maps to (possible through min_bin_count or the refinement) are
                  // dropped, as one process drops them: they sort last.
                  while (!sizes.empty() && sizes.back() == 0) sizes.pop_back();
                  g.centres = sorted.topRows(static_cast<Index>(sizes.size()));
                  for (int& l : g.labels) l = renumber[std::size_t(l)];
                  for (int& l : fine_labels) l = renumber[std::size_t(l)];
              } else {
                  sizes.assign(g.sizes.begin(), g.sizes.end());
              }
              centres = g.centres;
              for (int d = 0; d < k; ++d)
                  centres.col(d) = (centres.col(d).array() / scale[std::size_t(d)] + mid[std::size_t(d)]).matrix();
              seed_labels = std::move(g.labels);
          }));
    out.distributed.seconds_group += since(t);

    t = Clock::now();
    if (grouped) {
        long long c = static_cast<long long>(sizes.size());
        check_mpi(MPI_Bcast(&c, 1, MPI_LONG_LONG, 0, comm), "MPI_Bcast (cluster count)");
        sizes.resize(static_cast<std::size_t>(c));
        if (rank != 0) centres.resize(static_cast<Index>(c), k);
        if (c > 0) {
            check_mpi(MPI_Bcast(sizes.data(), static_cast<int>(c), MPI_LONG_LONG, 0, comm), "MPI_Bcast (sizes)");
            check_mpi(MPI_Bcast(centres.data(), static_cast<int>(c * k), MPI_DOUBLE, 0, comm), "MPI_Bcast (centres)");
        }
        out.labels.resize(static_cast<std::size_t>(n_local));
        if (seeded) {  // the seeds' labels to every rank; each point takes its bin's seed's
            seed_labels.resize(static_cast<std::size_t>(S));
            check_mpi(MPI_Bcast(seed_labels.data(), static_cast<int>(S), MPI_INT, 0, comm), "MPI_Bcast (seed labels)");
            if (refine)
                check_mpi(MPI_Bcast(fine_labels.data(), static_cast<int>(fine_labels.size()), MPI_INT, 0, comm),
                          "MPI_Bcast (fine seed labels)");
        } else {
            check_mpi(MPI_Scatterv(rank == 0 ? seed_labels.data() : nullptr, counts.data(), displs.data(), MPI_INT,
                                   n_local ? out.labels.data() : nullptr, static_cast<int>(n_local), MPI_INT, 0, comm),
                      "MPI_Scatterv (labels)");
        }
        out.centres = centres.cast<float>();
        out.cluster_sizes.assign(sizes.begin(), sizes.end());
    } else {
        out.centres = MatrixF(0, k);
    }
    out.distributed.seconds_broadcast = since(t);

    if (seeded) {
        // Every point: its bin's seed's (or, on a boundary, its fine bin's seed's) mode, label and
        // ascent (docs/mpi.md, "Bin seeding").
        out.modes.resize(n_local, k);
        out.iterations.assign(static_cast<std::size_t>(n_local), 0);
        out.converged.assign(static_cast<std::size_t>(n_local), false);
        out.no_support.assign(static_cast<std::size_t>(n_local), false);
        const auto t_label = Clock::now();
        agree(comm, attempt([&] {
                  for (Index i = 0; i < n_local; ++i) {
                      const float* x = mine_rows.data() + i * k;
                      const Index j = bins.bin_of(x, mid, scale);
                      const bool on_boundary = refine && boundary[std::size_t(j)];
                      const Index f = on_boundary ? fine.seed_of(x, mid, scale) : -1;
                      // A fine seed that settled in a bin takes that bin's seed's mode and outcome (as in
                      // one process), its own steps added.
                      const Index via = f >= 0 ? settled_bin[std::size_t(f)] : j;
                      const bool own = f >= 0 && via < 0;
                      const SeedAscent& a = own ? refined : coarse;
                      const Index s = own ? f : bins.seed_of_bin[std::size_t(via)];
                      out.modes.row(i) = a.modes.row(s);
                      if (!out.labels.empty())
                          out.labels[std::size_t(i)] =
                              f >= 0 ? fine_labels[std::size_t(f)] : seed_labels[std::size_t(s)];
                      out.iterations[std::size_t(i)] =
                          a.state[std::size_t(3 * s)] + (f >= 0 && !own ? refined.state[std::size_t(3 * f)] : 0);
                      out.converged[std::size_t(i)] = a.state[std::size_t(3 * s + 1)] != 0;
                      out.no_support[std::size_t(i)] = a.state[std::size_t(3 * s + 2)] != 0;
                  }
              }));
        out.distributed.seconds_label = since(t_label);
    } else {
        out.modes = std::move(local.modes);
        out.iterations = std::move(local.iterations);
        out.converged = std::move(local.converged);
        out.no_support = std::move(local.no_support);
    }
    out.modes_without_support = 0;
    out.timing = local.timing;
    out.backend = local.backend;
    out.topology = local.topology;
    out.search = local.search;
    out.cutoff = local.cutoff;
    const long long F = refine ? refined.modes.rows() : 0;
    out.seed_count = seeded ? static_cast<Index>(S) : n_local;  // one process counts the bins' seeds
    if (seeded) {
        auto number = [](double v) {
            std::ostringstream o;
            o << v;
            return o.str();
        };
        out.seeding = "bins of " + number(options.bin_size) + " bandwidths (" + std::to_string(S) +
                      " seeds over all ranks), every point labelled by its bin's seed";
        if (binned)
            out.seeding += "; data binned at " + number(cells.side) + " bandwidths: " + std::to_string(total) + " -> " +
                           std::to_string(cells.seeds.rows()) + " weighted points";
        if (refine)
            out.seeding +=
                "; " + std::to_string(n_boundary) + " boundary bins re-seeded at " + number(options.bin_size / 4) +
                " (" + std::to_string(F) + " seeds, " +
                std::to_string(std::count_if(settled_bin.begin(), settled_bin.end(), [](Index j) { return j >= 0; })) +
                " resolved by their trajectory)";
        else if (!options.refine_boundaries)
            out.seeding += " (no boundary refinement)";
    } else {
        out.seeding = "every point its own seed";
        if (wants_bins) {
            std::ostringstream o;
            o << " (bin seeding declined: coordinates reach " << extent / finest << " bins of " << finest
              << " bandwidths from the data's centre, beyond the 2^53 that integer bin keys hold exactly)";
            out.seeding += o.str();
        }
    }
    for (bool none : out.no_support)
        if (none) ++out.modes_without_support;
    out.distributed.seconds_total = since(t_start);
    return out;
}

}  // namespace meanshift::mpi
