// meanshift::mpi::cluster (include/meanshift/mpi.hpp, docs/mpi.md): option checks, the strategy
// ("replicated points, modes split" here: cluster() with explicit seeds and GroupingMethod::None on
// every rank; "domain decomposition" in domain.cpp), then the grouping (group_modes() on rank 0) and
// the labels of every rank's rows. Only the public API of the library is used.
#include "common.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
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
    s.push_back(static_cast<double>(strategy));
    return s;
}

const char* const kSignatureNames[] = {"k (dimensions)", "bandwidth kind", "bandwidth size"};

std::string signature_field(std::size_t i, std::size_t nparams)
{
    if (i < 3) return kSignatureNames[i];
    if (i < 3 + nparams) return "bandwidth";
    static const char* const rest[] = {"max_iterations", "tolerance", "fixed_iterations", "fixed_iterations",
                                       "grouping",       "merge_eps", "cutoff",           "exact",
                                       "search",         "strategy",       "sample weights (given or not)"};
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
            throw InvalidArgument("Options::bin_data is not distributed; bin seeding (Options::seeding = Bins) is");
        if (options.bandwidth.kind() == BandwidthKind::PerPoint &&
            (options.bandwidth.per_point_values().rows() != n_local || options.bandwidth.per_point_values().cols() != k))
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
                const bool same = i < mine.size() && i < root.size() &&
                                  std::memcmp(&mine[i], &root[i], sizeof(double)) == 0;
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
        counts[static_cast<std::size_t>(r)] = static_cast<int>(std::min<long long>(counts64[static_cast<std::size_t>(r)], INT_MAX));
        first_rows[static_cast<std::size_t>(r)] = total;
        total += counts64[static_cast<std::size_t>(r)];
    }
    first_rows[static_cast<std::size_t>(size)] = total;
    const bool truncated = !options.exact && std::isfinite(options.cutoff);
    agree(comm, attempt([&] {
        if (total < 1) throw InvalidArgument("no points on any rank");
        if (total > INT_MAX) throw InvalidArgument("more than 2^31 - 1 points in all: not supported yet");
        if (strategy == Strategy::DomainDecomposition && !truncated)
            throw InvalidArgument("the domain decomposition needs the truncated kernel (a finite Options::cutoff, "
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
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, log_precision.data(), k, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce (precisions)");
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, reach.data(), k, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce (reach)");
        const std::vector<double>& p = options.bandwidth.parameters();
        for (int d = 0; d < k; ++d)
            scale[std::size_t(d)] = options.bandwidth.shared()
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
    }));
    if (truncated && decomposable && strategy != Strategy::ReplicatedPoints &&
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
    const bool seeded = !options.exact && options.seeding == Seeding::Bins;
    detail::BinSeeds bins;
    MatrixF my_queries;
    std::vector<int> qcounts = counts, qdispls = displs;
    std::vector<long long> qfirst = first_rows;
    if (seeded) {
        bins = detail::plan_bin_seeds(comm, mine_rows, options, mid, scale);
        const Index S = bins.seeds.rows();
        for (int r = 0; r < size; ++r) {
            qcounts[std::size_t(r)] = static_cast<int>(S / size + (r < S % size ? 1 : 0));
            qfirst[std::size_t(r + 1)] = qfirst[std::size_t(r)] + qcounts[std::size_t(r)];
            qdispls[std::size_t(r)] = static_cast<int>(qfirst[std::size_t(r)]);
        }
        my_queries = bins.seeds.middleRows(qfirst[std::size_t(rank)], qcounts[std::size_t(rank)]);
    }
    const MatrixF& queries = seeded ? my_queries : mine_rows;
    const Index q_local = queries.rows();
    const long long q_total = qfirst[std::size_t(size)];
    Result local;
    if (chosen == Strategy::DomainDecomposition) {
        detail::LocalAscent a = detail::domain_ascent(comm, mine_rows, local_weights, run_options, scale, slabs, first_rows,
                                                      seeded ? &my_queries : nullptr, qfirst);
        out.distributed.seconds_allgather = a.seconds_exchange;
        out.distributed.seconds_migrate = a.seconds_migrate;
        out.local_points_held = a.points_held;
        out.modes_migrated = a.migrated;
        local = std::move(a.bind_info);
        local.modes = std::move(a.modes);
        local.iterations = std::move(a.iterations);
        local.converged = std::move(a.converged);
        local.no_support = std::move(a.no_support);
        local.modes_without_support = 0;
        out.distributed.seconds_ascent = since(t) - out.distributed.seconds_allgather;
    } else {
        MatrixF all(static_cast<Index>(total), k);
        check_mpi(MPI_Allgatherv(n_local ? mine_rows.data() : nullptr, static_cast<int>(n_local), row_f.type,
                                 all.data(), counts.data(), displs.data(), row_f.type, comm),
                  "MPI_Allgatherv (points)");
        std::vector<float> all_weights(local_weights ? static_cast<std::size_t>(total) : 0);
        Options local_options = run_options;
        local_options.grouping = GroupingMethod::None;
        if (options.bandwidth.kind() == BandwidthKind::PerPoint) {  // every point's H_i, as its rows
            MatrixD all_h(static_cast<Index>(total), k);
            const MatrixD mine_h = options.bandwidth.per_point_values();  // contiguous row-major
            const RowType row_d(k, MPI_DOUBLE);
            check_mpi(MPI_Allgatherv(n_local ? mine_h.data() : nullptr, static_cast<int>(n_local), row_d.type,
                                     all_h.data(), counts.data(), displs.data(), row_d.type, comm),
                      "MPI_Allgatherv (per-point bandwidths)");
            local_options.bandwidth = Bandwidth::per_point(std::move(all_h));
        }
        if (local_weights)
            check_mpi(MPI_Allgatherv(n_local ? local_weights : nullptr, static_cast<int>(n_local), MPI_FLOAT,
                                     all_weights.data(), counts.data(), displs.data(), MPI_FLOAT, comm),
                      "MPI_Allgatherv (weights)");
        out.distributed.seconds_allgather = since(t);
        out.local_points_held = static_cast<Index>(total);
        t = Clock::now();
        std::exception_ptr ascent_error = attempt([&] {
            if (q_local > 0) {
                const Eigen::Ref<const MatrixF> seeds(queries);
                local = meanshift::cluster(all, local_options, local_weights ? all_weights.data() : nullptr, &seeds);
            } else {
                local.modes = MatrixF(0, k);
            }
        });
        out.distributed.seconds_ascent = since(t);
        t = Clock::now();
        agree(comm, ascent_error);
        out.distributed.seconds_wait = since(t);
    }

    // 4. Modes to rank 0, grouped there in whitened units (as cluster() groups them).
    t = Clock::now();
    // Every point's mode to rank 0; the seeds' modes (few) and their ascents' outcomes to every rank,
    // which labels its own points from them.
    MatrixF modes_all = rank == 0 || seeded ? MatrixF(static_cast<Index>(q_total), k) : MatrixF(0, k);
    std::vector<int> seed_state;  // per seed: iterations, converged, no support
    if (seeded) {
        check_mpi(MPI_Allgatherv(q_local ? local.modes.data() : nullptr, static_cast<int>(q_local), row_f.type,
                                 modes_all.data(), qcounts.data(), qdispls.data(), row_f.type, comm),
                  "MPI_Allgatherv (seed modes)");
        std::vector<int> mine_state;
        for (Index s = 0; s < q_local; ++s) {
            mine_state.push_back(local.iterations[std::size_t(s)]);
            mine_state.push_back(local.converged[std::size_t(s)] ? 1 : 0);
            mine_state.push_back(local.no_support[std::size_t(s)] ? 1 : 0);
        }
        seed_state.resize(static_cast<std::size_t>(q_total) * 3);
        const RowType triple(3, MPI_INT);
        check_mpi(MPI_Allgatherv(mine_state.data(), static_cast<int>(q_local), triple.type, seed_state.data(),
                                 qcounts.data(), qdispls.data(), triple.type, comm),
                  "MPI_Allgatherv (seed outcomes)");
    } else {
        check_mpi(MPI_Gatherv(n_local ? local.modes.data() : nullptr, static_cast<int>(n_local), row_f.type,
                              rank == 0 ? modes_all.data() : nullptr, counts.data(), displs.data(), row_f.type, 0, comm),
                  "MPI_Gatherv (modes)");
    }
    out.distributed.seconds_gather = since(t);

    t = Clock::now();
    std::vector<int> labels_all;
    MatrixD centres;
    std::vector<long long> sizes;
    agree(comm, attempt([&] {
        if (rank != 0 || options.grouping == GroupingMethod::None) return;
        // One process's prepared units: (x - mid-range) · scale_d (prepare.cpp).
        MatrixD Y = modes_all.cast<double>();
        for (int d = 0; d < k; ++d) Y.col(d) = ((Y.col(d).array() - mid[std::size_t(d)]) * scale[std::size_t(d)]).matrix();
        Grouping g = group_modes(Y, options.merge_eps, options.grouping);
        if (seeded) {
            // As one process labels by seed: clusters renumbered by their points (stable, largest first).
            std::vector<long long> points(g.sizes.size(), 0);
            for (std::size_t b = 0; b < bins.count.size(); ++b)
                points[std::size_t(g.labels[std::size_t(bins.seed_of_bin[b])])] += bins.count[b];
            std::vector<int> by(points.size());
            std::iota(by.begin(), by.end(), 0);
            std::stable_sort(by.begin(), by.end(), [&](int x, int y) { return points[std::size_t(x)] > points[std::size_t(y)]; });
            std::vector<int> renumber(points.size());
            MatrixD sorted(static_cast<Index>(points.size()), k);
            for (std::size_t j = 0; j < by.size(); ++j) {
                renumber[std::size_t(by[j])] = static_cast<int>(j);
                sorted.row(static_cast<Index>(j)) = g.centres.row(by[j]);
                sizes.push_back(points[std::size_t(by[j])]);
            }
            g.centres = std::move(sorted);
            for (int& l : g.labels) l = renumber[std::size_t(l)];
        } else {
            sizes.assign(g.sizes.begin(), g.sizes.end());
        }
        centres = g.centres;
        for (int d = 0; d < k; ++d)
            centres.col(d) = (centres.col(d).array() / scale[std::size_t(d)] + mid[std::size_t(d)]).matrix();
        labels_all = std::move(g.labels);
    }));
    out.distributed.seconds_group = since(t);

    // 5. Centres, sizes and each rank's labels.
    t = Clock::now();
    if (options.grouping != GroupingMethod::None) {
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
            labels_all.resize(static_cast<std::size_t>(q_total));
            check_mpi(MPI_Bcast(labels_all.data(), static_cast<int>(q_total), MPI_INT, 0, comm), "MPI_Bcast (seed labels)");
        } else {
            check_mpi(MPI_Scatterv(rank == 0 ? labels_all.data() : nullptr, counts.data(), displs.data(), MPI_INT,
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
        // Every point: its bin's seed's mode, label and ascent (docs/mpi.md, "Bin seeding").
        out.modes.resize(n_local, k);
        out.iterations.assign(static_cast<std::size_t>(n_local), 0);
        out.converged.assign(static_cast<std::size_t>(n_local), false);
        out.no_support.assign(static_cast<std::size_t>(n_local), false);
        agree(comm, attempt([&] {
            for (Index i = 0; i < n_local; ++i) {
                const Index s = bins.seed_of(mine_rows.data() + i * k, mid, scale);
                out.modes.row(i) = modes_all.row(s);
                if (!out.labels.empty()) out.labels[std::size_t(i)] = labels_all[std::size_t(s)];
                out.iterations[std::size_t(i)] = seed_state[std::size_t(3 * s)];
                out.converged[std::size_t(i)] = seed_state[std::size_t(3 * s + 1)] != 0;
                out.no_support[std::size_t(i)] = seed_state[std::size_t(3 * s + 2)] != 0;
            }
        }));
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
    out.seed_count = seeded ? static_cast<Index>(q_total) : n_local;
    out.seeding = seeded ? "bins of " + std::to_string(options.bin_size) + " bandwidths (" + std::to_string(q_total) +
                               " seeds over all ranks), every point labelled by its bin's seed (no boundary refinement)"
                         : "every point its own seed";
    for (bool none : out.no_support) if (none) ++out.modes_without_support;
    out.distributed.seconds_total = since(t_start);
    return out;
}

}  // namespace meanshift::mpi
