// Stage 3 of meanshift::mpi::cluster: the ascents by the chosen strategy (replicated points,
// domain decomposition, ring), of every point or of the bins' seeds (with data binning where
// asked), and the grouping of their modes on rank 0 in one process's prepared units.
#include "cluster_run.hpp"

#include <cmath>
#include <vector>

namespace meanshift::mpi::detail {
namespace {

// The replicated strategy's copy of every point (weights, H_i), gathered once for all ascents.
void replicate(Run& run)
{
    const int k = run.k;
    const Index n_local = run.n_local;
    const long long total = run.total;
    const Options& options = run.options;
    const float* local_weights = run.local_weights;
    MPI_Comm comm = run.comm;
    DistributedResult& out = run.out;
    const RowType& row_f = *run.row_f;
    const std::vector<int>&counts = run.counts, &displs = run.displs;
    MatrixF& all = run.all;
    std::vector<float>& all_weights = run.all_weights;
    Options& replica_options = run.replica_options;
    replica_options = run.run_options;
    const auto t_r = Clock::now();
    replica_options.grouping = GroupingMethod::None;
    run.replicated = true;
    if (run.binned) {  // every rank already holds every cell (plan_bin_seeds broadcasts them)
        all = run.cells.seeds;
        all_weights.assign(run.cells.weight.begin(), run.cells.weight.end());
        out.local_points_held = all.rows();
        return;
    }
    all.resize(static_cast<Index>(total), k);
    check_mpi(MPI_Allgatherv(n_local ? run.mine_rows.data() : nullptr, static_cast<int>(n_local), row_f.type,
                             all.data(), counts.data(), displs.data(), row_f.type, comm),
              "MPI_Allgatherv (points)");
    if (options.bandwidth.kind() == BandwidthKind::PerPoint) {  // every point's H_i, as its rows
        MatrixD all_h(static_cast<Index>(total), k);
        const MatrixD mine_h = options.bandwidth.per_point_values();  // contiguous row-major
        const RowType row_d(k, MPI_DOUBLE);
        check_mpi(MPI_Allgatherv(n_local ? mine_h.data() : nullptr, static_cast<int>(n_local), row_d.type, all_h.data(),
                                 counts.data(), displs.data(), row_d.type, comm),
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
}

// Data binning as one process does it (shared bandwidths; 0 = automatic: cells of bin_size/4
// when they leave at most n/4 weighted points). Automatic skips the merge when one rank alone has
// more cells than that (a lower bound of the merged count), else decides on the merge.
void bin_data(Run& run)
{
    MPI_Comm comm = run.comm;
    const int rank = run.rank, size = run.size;
    const long long total = run.total;
    const Options& options = run.options;
    const MatrixF& mine_rows = run.mine_rows;
    const std::vector<double>&mid = run.mid, &scale = run.scale;
    detail::BinSeeds& cells = run.cells;
    bool& binned = run.binned;
    std::vector<long long>& cell_first = run.cell_first;
    const double s = options.data_bin_size;
    if (options.bandwidth.shared() && s >= 0 && std::isfinite(s) && run.bins_fit(s == 0 ? options.bin_size / 4 : s)) {
        const bool automatic = s == 0;
        Options cell_options = options;
        cell_options.bin_size = automatic ? options.bin_size / 4 : s;
        cell_options.min_bin_count = 1;
        long long lower = automatic ? detail::count_cells(mine_rows, cell_options.bin_size, mid, scale) : 0;
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, &lower, 1, MPI_LONG_LONG, MPI_MAX, comm), "MPI_Allreduce (cells)");
        if (!automatic || 4 * lower <= total) {
            cells = detail::plan_bin_seeds(comm, mine_rows, cell_options, mid, scale, run.local_weights);
            binned = !automatic || 4 * static_cast<long long>(cells.seeds.rows()) <= total;
        }
        if (binned) {
            const long long B = cells.seeds.rows();
            cell_first.assign(static_cast<std::size_t>(size) + 1, 0);
            for (int r = 0; r < size; ++r)
                cell_first[std::size_t(r + 1)] = cell_first[std::size_t(r)] + B / size + (r < B % size ? 1 : 0);
            const long long c0 = cell_first[std::size_t(rank)], c1 = cell_first[std::size_t(rank + 1)];
            run.my_cells = cells.seeds.middleRows(c0, c1 - c0);
            run.my_cell_weights.assign(cells.weight.begin() + c0, cells.weight.begin() + c1);
        }
    }
}

}  // namespace

Result ascend(Run& run, const MatrixF* queries, const std::vector<long long>& query_first,
              const std::function<bool(const double*)>& settled)
{
    MPI_Comm comm = run.comm;
    const int size = run.size, k = run.k;
    DistributedResult& out = run.out;
    const MatrixF& mine_rows = run.mine_rows;
    const float* local_weights = run.local_weights;
    const Options& run_options = run.run_options;
    const std::vector<double>& scale = run.scale;
    const bool binned = run.binned;
    const MatrixF& my_cells = run.my_cells;
    const Slabs& slabs = run.slabs;
    const std::vector<long long>&first_rows = run.first_rows, &cell_first = run.cell_first;
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
    if (run.chosen == Strategy::Ring) {  // with data binning the cells are the points that stay on their rank
        t_a = Clock::now();
        const float* cell_weights = run.my_cell_weights.empty() ? &run.no_cells : run.my_cell_weights.data();
        return take(binned ? detail::ring_ascent(comm, my_cells, cell_weights, run_options, scale, queries, settled)
                           : detail::ring_ascent(comm, mine_rows, local_weights, run_options, scale, queries, settled));
    }
    if (run.chosen == Strategy::DomainDecomposition) {
        const float* cell_weights = run.my_cell_weights.empty() ? &run.no_cells : run.my_cell_weights.data();
        return take(binned ? detail::domain_ascent(comm, my_cells, cell_weights, run_options, scale, slabs, cell_first,
                                                   queries, query_first, settled)
                           : detail::domain_ascent(comm, mine_rows, local_weights, run_options, scale, slabs,
                                                   first_rows, queries, query_first, settled));
    }
    if (!run.replicated) replicate(run);
    if (settled) {
        // A stopping test needs the ascent one iteration at a time: domain_ascent's loop, every
        // rank holding every point and keeping its own queries.
        detail::Slabs here;
        here.everywhere = true;
        const std::vector<long long> all_first(static_cast<std::size_t>(size) + 1, 0);
        t_a = Clock::now();
        return take(detail::domain_ascent(comm, run.all, run.all_weights.empty() ? nullptr : run.all_weights.data(),
                                          run.replica_options, scale, here, all_first, queries, query_first, settled));
    }
    t_a = Clock::now();
    const MatrixF& q = queries ? *queries : mine_rows;
    std::exception_ptr ascent_error = attempt([&] {
        if (q.rows() > 0) {
            const Eigen::Ref<const MatrixF> seeds(q);
            a = meanshift::cluster(run.all, run.replica_options,
                                   run.all_weights.empty() ? nullptr : run.all_weights.data(), &seeds);
        } else {
            a.modes = MatrixF(0, k);
        }
    });
    out.distributed.seconds_ascent += since(t_a);
    t_a = Clock::now();
    agree(comm, ascent_error);
    out.distributed.seconds_wait += since(t_a);
    return a;
}

SeedAscent ascend_seeds(Run& run, const MatrixF& seeds, const std::function<bool(const double*)>& settled)
{
    MPI_Comm comm = run.comm;
    const int rank = run.rank, size = run.size, k = run.k;
    const RowType& row_f = *run.row_f;
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
    s.local = ascend(run, &mine, qfirst, settled);
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
    check_mpi(MPI_Allgatherv(mine_state.data(), static_cast<int>(q_local), triple.type, s.state.data(), qcounts.data(),
                             qdispls.data(), triple.type, comm),
              "MPI_Allgatherv (seed outcomes)");
    run.out.distributed.seconds_gather += since(t_g);
    return s;
}

Ascents ascend_and_group(Run& run)
{
    MPI_Comm comm = run.comm;
    const int rank = run.rank, k = run.k;
    const Index n_local = run.n_local;
    const long long total = run.total;
    const Options& options = run.options;
    const bool seeded = run.seeded;
    DistributedResult& out = run.out;
    const RowType& row_f = *run.row_f;
    Ascents a;
    Result& local = a.local;
    detail::BinSeeds& bins = a.bins;
    SeedAscent& coarse = a.coarse;
    MatrixF& modes_all = a.modes_all;
    if (seeded) {
        const auto t_bins = Clock::now();
        bins = detail::plan_bin_seeds(comm, run.mine_rows, options, run.mid, run.scale);
        bin_data(run);
        out.distributed.seconds_binning += since(t_bins);
        coarse = ascend_seeds(run, bins.seeds, {});
        local = coarse.local;
    } else {
        local = ascend(run, nullptr, run.first_rows, {});
        const auto t = Clock::now();
        modes_all = rank == 0 ? MatrixF(static_cast<Index>(total), k) : MatrixF(0, k);
        check_mpi(MPI_Gatherv(n_local ? local.modes.data() : nullptr, static_cast<int>(n_local), row_f.type,
                              rank == 0 ? modes_all.data() : nullptr, run.counts.data(), run.displs.data(), row_f.type,
                              0, comm),
                  "MPI_Gatherv (modes)");
        out.distributed.seconds_gather += since(t);
    }

    // The modes grouped on rank 0 in one process's prepared units (as cluster() groups them).
    const auto t = Clock::now();
    a.grouped = options.grouping != GroupingMethod::None;
    const bool grouped = a.grouped;
    Grouping& g = a.g;
    agree(comm, attempt([&] {
              if (rank == 0 && grouped)
                  g = group_modes(run.prepared(seeded ? coarse.modes : modes_all), options.merge_eps, options.grouping);
          }));
    out.distributed.seconds_group += since(t);
    return a;
}

}  // namespace meanshift::mpi::detail
