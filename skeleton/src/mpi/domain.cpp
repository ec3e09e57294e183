// Strategy "domain decomposition" (include/meanshift/mpi.hpp, docs/mpi.md): slabs along one
// dimension, halos as wide as the cutoff, the library's step on each rank's binding, modes handed
// to the owner of the slab they move into after every iteration.
#include "common.hpp"

#include "skeleton/src/core/ascent.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

namespace meanshift::mpi::detail {
namespace {

/// Samples per rank for the boundaries: quantiles to ~1/4096 of the points, a few KiB per rank.
constexpr Index kSamplesPerRank = 4096;

int owner_of(const std::vector<double>& bounds, double u)
{
    return static_cast<int>(std::upper_bound(bounds.begin(), bounds.end(), u) - bounds.begin());
}

/// Counts (per destination) → displacements; returns the total.
long long displacements(const std::vector<int>& counts, std::vector<int>& displs)
{
    displs.assign(counts.size(), 0);
    long long at = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
        if (at > std::numeric_limits<int>::max()) throw InvalidArgument("more than 2^31 - 1 rows to one rank");
        displs[r] = static_cast<int>(at);
        at += counts[r];
    }
    return at;
}

/// A mode travelling between ranks: global row, iterations made, position (data units).
struct Mode {
    long long gid = 0;
    int iterations = 0;
    ModeStatus status = ModeStatus::Active;
    bool settled = false;  ///< stopped by the caller's `settled` test (the refinement's early stop)
};

/// All-to-all of modes: mode i goes to rank `dest[i]`; `modes`/`pos` become the ones received
/// (in source-rank order). Two MPI_Alltoallv: metadata and positions.
void exchange_modes(MPI_Comm comm, int size, int k, std::vector<Mode>& modes, std::vector<double>& pos,
                    const std::vector<int>& dest)
{
    std::vector<int> send_counts(static_cast<std::size_t>(size), 0);
    for (int d : dest) ++send_counts[static_cast<std::size_t>(d)];
    std::vector<int> send_displs, recv_counts(static_cast<std::size_t>(size)), recv_displs;
    const long long nsend = displacements(send_counts, send_displs);
    check_mpi(MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm),
              "MPI_Alltoall (modes)");
    const long long nrecv = displacements(recv_counts, recv_displs);

    std::vector<long long> meta_out(static_cast<std::size_t>(nsend) * 4), meta_in(static_cast<std::size_t>(nrecv) * 4);
    std::vector<double> pos_out(static_cast<std::size_t>(nsend) * std::size_t(k)),
        pos_in(static_cast<std::size_t>(nrecv) * std::size_t(k));
    std::vector<int> fill(send_displs);
    for (std::size_t i = 0; i < modes.size(); ++i) {
        const double* y = pos.data() + i * std::size_t(k);
        const std::size_t at = static_cast<std::size_t>(fill[static_cast<std::size_t>(dest[i])]++);
        meta_out[4 * at] = modes[i].gid;
        meta_out[4 * at + 1] = modes[i].iterations;
        meta_out[4 * at + 2] = static_cast<long long>(modes[i].status);
        meta_out[4 * at + 3] = modes[i].settled ? 1 : 0;
        std::copy(y, y + k, pos_out.begin() + static_cast<std::ptrdiff_t>(at * std::size_t(k)));
    }
    const RowType meta(4, MPI_LONG_LONG), row(k, MPI_DOUBLE);
    check_mpi(MPI_Alltoallv(meta_out.data(), send_counts.data(), send_displs.data(), meta.type, meta_in.data(),
                            recv_counts.data(), recv_displs.data(), meta.type, comm),
              "MPI_Alltoallv (mode metadata)");
    check_mpi(MPI_Alltoallv(pos_out.data(), send_counts.data(), send_displs.data(), row.type, pos_in.data(),
                            recv_counts.data(), recv_displs.data(), row.type, comm),
              "MPI_Alltoallv (mode positions)");
    modes.resize(static_cast<std::size_t>(nrecv));
    for (std::size_t s = 0; s < modes.size(); ++s)
        modes[s] = {meta_in[4 * s], static_cast<int>(meta_in[4 * s + 1]), static_cast<ModeStatus>(meta_in[4 * s + 2]),
                    meta_in[4 * s + 3] != 0};
    pos = std::move(pos_in);
}

}  // namespace

Slabs plan_slabs(MPI_Comm comm, const Eigen::Ref<const MatrixF>& local, const std::vector<double>& reach,
                 const std::vector<double>& lo, const std::vector<double>& hi, double cutoff)
{
    int size = 1;
    check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    const int k = static_cast<int>(local.cols());
    Slabs s;
    double widest = -1;
    for (int d = 0; d < k; ++d) {
        const double w = (hi[std::size_t(d)] - lo[std::size_t(d)]) / reach[std::size_t(d)];
        if (w > widest) {
            widest = w;
            s.dim = d;
        }
    }
    s.scale = 1.0 / reach[std::size_t(s.dim)];
    // A float32 margin: the backends decide D ≤ c in float32 prepared units.
    s.halo = cutoff * (1 + 1e-4) + 1e-4;

    // Strided sample of the cut coordinate; each value stands for n_r / samples_r points.
    const Index n = local.rows();
    const Index m = std::min(n, kSamplesPerRank);
    std::vector<double> mine(static_cast<std::size_t>(2 * m));
    for (Index i = 0; i < m; ++i) {
        const Index row =
            m == n
                ? i
                : static_cast<Index>((static_cast<double>(i) + 0.5) * static_cast<double>(n) / static_cast<double>(m));
        mine[std::size_t(2 * i)] = static_cast<double>(local(row, s.dim)) * s.scale;
        mine[std::size_t(2 * i + 1)] = static_cast<double>(n) / static_cast<double>(m);
    }
    std::vector<int> counts(static_cast<std::size_t>(size)), displs;
    const int mine_count = static_cast<int>(2 * m);
    check_mpi(MPI_Allgather(&mine_count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm), "MPI_Allgather (sample)");
    const long long total = displacements(counts, displs);
    std::vector<double> all(static_cast<std::size_t>(total));
    check_mpi(
        MPI_Allgatherv(mine.data(), mine_count, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, comm),
        "MPI_Allgatherv (sample)");
    std::vector<std::pair<double, double>> v(static_cast<std::size_t>(total / 2));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = {all[2 * i], all[2 * i + 1]};
    std::sort(v.begin(), v.end());
    double weight = 0;
    for (const auto& p : v) weight += p.second;
    // Boundary j at the weighted quantile j / R (midway between the two samples around it).
    double acc = 0;
    std::size_t at = 0;
    for (int j = 1; j < size; ++j) {
        const double target = weight * j / size;
        while (at < v.size() && acc + v[at].second <= target) acc += v[at++].second;
        const double b = at == 0          ? v.front().first
                         : at >= v.size() ? v.back().first
                                          : 0.5 * (v[at - 1].first + v[at].first);
        s.bounds.push_back(b);
    }
    // Estimated share of the points each rank holds (slab + halo), from the sample.
    s.largest_share = 0;
    std::vector<double> held(static_cast<std::size_t>(size), 0);
    for (const auto& p : v) {
        const int a = owner_of(s.bounds, p.first - s.halo), b = owner_of(s.bounds, p.first + s.halo);
        for (int r = a; r <= b; ++r) held[std::size_t(r)] += p.second;
    }
    for (double x : held) s.largest_share = std::max(s.largest_share, weight > 0 ? x / weight : 1.0);
    return s;
}

void prepared_frame(const PreparedData& D, const MatrixF& rows, const std::vector<double>& fallback,
                    std::vector<double>& centre, std::vector<double>& unit)
{
    const int k = D.k();
    centre.assign(static_cast<std::size_t>(k), 0.0);
    unit.assign(static_cast<std::size_t>(k), 1.0);
    for (int d = 0; d < k; ++d) {
        Index lo_row = 0, hi_row = 0;
        for (Index i = 1; i < D.n(); ++i) {
            if (D.points(i, d) < D.points(lo_row, d)) lo_row = i;
            if (D.points(i, d) > D.points(hi_row, d)) hi_row = i;
        }
        auto x_of = [&](Index i) {
            return static_cast<double>(rows(D.original.empty() ? i : D.original[std::size_t(i)], d));
        };
        const double dx = x_of(hi_row) - x_of(lo_row);
        unit[std::size_t(d)] = dx > 0 ? (D.points(hi_row, d) - D.points(lo_row, d)) / dx : fallback[std::size_t(d)];
        centre[std::size_t(d)] = x_of(lo_row) - D.points(lo_row, d) / unit[std::size_t(d)];
    }
}

namespace {

/// What the domain ascent's iterations need of this rank: its communicator, slabs and binding.
struct SlabFrame {
    MPI_Comm comm;
    int rank, size, k;
    const Options& options;
    const Slabs& slabs;
    std::function<int(double)> owner;  ///< the rank owning the slab of u (bandwidth units)
    Clusterer* clusterer;  ///< bound to the held points; nullptr when this rank holds none
    long long held;  ///< points held (slab and halo)
    const std::vector<double>& scale;  ///< one process's prepared units (the tolerance's)
    const std::vector<double>& centre;  ///< this rank's prepared frame: (x − centre) · unit
    const std::vector<double>& unit;
    const std::function<bool(const double*)>& settled;
};

/// Orders `modes` (positions `pos`, data units) by their cells of side `side` in one process's
/// prepared units (lexicographic), so that nearby modes are stepped together.
void sort_by_cell(int k, double side, const std::vector<double>& scale, std::vector<Mode>& modes,
                  std::vector<double>& pos)
{
    std::vector<std::vector<long long>> key(modes.size(), std::vector<long long>(static_cast<std::size_t>(k)));
    for (std::size_t i = 0; i < modes.size(); ++i)
        for (int d = 0; d < k; ++d)
            key[i][std::size_t(d)] = static_cast<long long>(
                std::floor(pos[i * std::size_t(k) + std::size_t(d)] * scale[std::size_t(d)] / side));
    std::vector<std::size_t> order(modes.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key[a] < key[b]; });
    std::vector<Mode> sorted;
    std::vector<double> sorted_pos;
    for (std::size_t i : order) {
        sorted.push_back(modes[i]);
        sorted_pos.insert(sorted_pos.end(), pos.begin() + static_cast<std::ptrdiff_t>(i * std::size_t(k)),
                          pos.begin() + static_cast<std::ptrdiff_t>((i + 1) * std::size_t(k)));
    }
    modes = std::move(sorted);
    pos = std::move(sorted_pos);
}

/// Hands the live modes that moved into another rank's slab to that rank and appends the modes
/// that arrive here (collective); returns how many left this rank.
template <class Live>
long long migrate(const SlabFrame& f, const Live& live, std::vector<Mode>& modes, std::vector<double>& pos)
{
    const int k = f.k;
    std::vector<Mode> leaving;
    std::vector<double> leaving_pos;
    std::vector<int> dest;
    std::vector<bool> left(modes.size(), false);
    for (std::size_t i = 0; i < modes.size(); ++i) {
        if (!live(modes[i])) continue;
        const double* y = pos.data() + i * std::size_t(k);
        const int own = f.owner(y[f.slabs.dim] * f.slabs.scale);
        if (own == f.rank) continue;
        left[i] = true;
        leaving.push_back(modes[i]);
        leaving_pos.insert(leaving_pos.end(), y, y + k);
        dest.push_back(own);
    }
    const std::size_t nleave = leaving.size();
    exchange_modes(f.comm, f.size, k, leaving, leaving_pos, dest);  // now: the arriving modes
    if (nleave > 0 || !leaving.empty()) {
        std::vector<Mode> keep;
        std::vector<double> keep_pos;
        for (std::size_t i = 0; i < modes.size(); ++i) {
            if (left[i]) continue;
            keep.push_back(modes[i]);
            keep_pos.insert(keep_pos.end(), pos.begin() + static_cast<std::ptrdiff_t>(i * std::size_t(k)),
                            pos.begin() + static_cast<std::ptrdiff_t>((i + 1) * std::size_t(k)));
        }
        keep.insert(keep.end(), leaving.begin(), leaving.end());
        keep_pos.insert(keep_pos.end(), leaving_pos.begin(), leaving_pos.end());
        modes = std::move(keep);
        pos = std::move(keep_pos);
    }
    return static_cast<long long>(nleave);
}

/// 3. The ascents (core/ascent.hpp), one iteration at a time on every rank (a collective count of
///    the live modes ends them), the modes stepped on this rank's binding and, after every
///    iteration, handed to the owner of the slab they moved into. The modes start in the
///    binding's row order (its search's cell/leaf order: nearby modes together, as the driver's
///    Morton order) and stay bound across iterations; set_modes runs again only when modes leave
///    or arrive. `modes`/`pos` (data units) are the live ones; the stopped ones end in `done`.
void ascend_in_slabs(const SlabFrame& f, std::vector<Mode>& modes, std::vector<double>& pos, std::vector<Mode>& done,
                     std::vector<double>& done_pos, LocalAscent& out)
{
    const int k = f.k;
    const ::meanshift::detail::AscentLimits limits = ::meanshift::detail::ascent_limits(f.options);
    const bool fixed = limits.fixed;
    // Fixed iterations: nothing retires (the driver's rule), every mode stays bound.
    auto live = [&](const Mode& md) { return !md.settled && (fixed || md.status == ModeStatus::Active); };
    auto retire_finished = [&] {
        std::vector<Mode> keep;
        std::vector<double> keep_pos;
        for (std::size_t i = 0; i < modes.size(); ++i) {
            const double* y = pos.data() + i * std::size_t(k);
            auto& to = live(modes[i]) ? keep : done;
            auto& to_pos = live(modes[i]) ? keep_pos : done_pos;
            to.push_back(modes[i]);
            to_pos.insert(to_pos.end(), y, y + k);
        }
        modes = std::move(keep);
        pos = std::move(keep_pos);
    };
    // Shifts in one process's units (the tolerance's): per-dimension weights (scale / unit)², all 1
    // for a shared bandwidth (both are 1/h), when no metric is passed at all.
    std::vector<double> weight(static_cast<std::size_t>(k));
    bool own_units = true;
    for (int d = 0; d < k; ++d) {
        const double q = f.scale[std::size_t(d)] / f.unit[std::size_t(d)];
        weight[std::size_t(d)] = q * q;
        own_units &= std::abs(q - 1) < 1e-12;
    }
    std::vector<double> Y, metric;
    long long migrated = 0, active = 0;
    bool bound = false;
    ::meanshift::detail::AscentHooks hooks;
    hooks.active = [&]() -> Index {
        const auto t_m = Clock::now();
        long long all_active = 0;
        active = 0;
        for (const Mode& md : modes) active += live(md) ? 1 : 0;
        check_mpi(MPI_Allreduce(&active, &all_active, 1, MPI_LONG_LONG, MPI_SUM, f.comm),
                  "MPI_Allreduce (active modes)");
        out.seconds_migrate += since(t_m);
        return static_cast<Index>(all_active);
    };
    hooks.step = [&](StepReport& report) {
        agree(f.comm, attempt([&] {
                  if (active == 0) return;
                  if (!f.clusterer) {  // no point within the halo of this slab: no support (as one process)
                      for (Mode& md : modes) md.status = ModeStatus::NoSupport;
                      return;
                  }
                  Binding& b = f.clusterer->binding();
                  if (!bound) {
                      retire_finished();
                      Y.resize(pos.size());
                      for (std::size_t i = 0; i < pos.size(); ++i)
                          Y[i] = (pos[i] - f.centre[i % std::size_t(k)]) * f.unit[i % std::size_t(k)];
                      metric.clear();
                      if (!own_units)
                          for (std::size_t i = 0; i < modes.size(); ++i)
                              metric.insert(metric.end(), weight.begin(), weight.end());
                      b.set_modes(Y.data(), static_cast<Index>(modes.size()), own_units ? nullptr : metric.data());
                      bound = true;
                  }
                  ::meanshift::detail::binding_step(b, limits, static_cast<Index>(f.held))(report);
                  b.read_modes(Y.data());
                  for (std::size_t i = 0; i < pos.size(); ++i)
                      pos[i] = Y[i] / f.unit[i % std::size_t(k)] + f.centre[i % std::size_t(k)];
              }));
    };
    hooks.record = [&](Index slot, ModeStatus status) {
        Mode& md = modes[std::size_t(slot)];
        ++md.iterations;
        md.status = status;
    };
    hooks.after = [&](int) {
        if (f.settled)  // stopped modes leave the binding at the next set_modes
            agree(f.comm, attempt([&] {
                      for (std::size_t i = 0; i < modes.size(); ++i)
                          if (live(modes[i]) && f.settled(pos.data() + i * std::size_t(k))) {
                              modes[i].settled = true;
                              bound = false;
                          }
                  }));
        // Active modes that moved into another slab go to its owner; retired ones stay here.
        const auto t_x = Clock::now();
        const std::size_t before = modes.size();
        const long long left = migrate(f, live, modes, pos);
        migrated += left;
        if (left > 0 || modes.size() != before) bound = false;  // modes left or arrived
        out.seconds_migrate += since(t_x);
        return true;
    };
    const auto t_ascent = Clock::now();
    const ::meanshift::detail::AscentTotals totals = ::meanshift::detail::ascend(limits, hooks);
    done.insert(done.end(), modes.begin(), modes.end());
    done_pos.insert(done_pos.end(), pos.begin(), pos.end());
    out.bind_info.timing.seconds_iterate = since(t_ascent);
    out.bind_info.timing.iterations = totals.iterations;
    out.bind_info.timing.seconds_kernels = totals.kernel_seconds;
    out.bind_info.timing.pair_interactions = totals.pairs;
    check_mpi(MPI_Allreduce(&migrated, &out.migrated, 1, MPI_LONG_LONG, MPI_SUM, f.comm), "MPI_Allreduce (migrations)");
}

/// 4. Every mode back to the rank that passed its row (or its query): `origin_first` holds each
///    rank's first global row (or query), and this rank's n_out results fill `out`.
void return_modes(MPI_Comm comm, int size, int k, Index n_out, const std::vector<long long>& origin_first,
                  std::vector<Mode>& done, std::vector<double>& done_pos, bool fixed, LocalAscent& out)
{
    int rank = 0;
    check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    const long long out_first = origin_first[std::size_t(rank)];
    std::vector<int> dest(done.size());
    for (std::size_t i = 0; i < done.size(); ++i)
        dest[i] = static_cast<int>(std::upper_bound(origin_first.begin(), origin_first.end(), done[i].gid) -
                                   origin_first.begin()) -
                  1;
    exchange_modes(comm, size, k, done, done_pos, dest);
    out.modes = MatrixF(n_out, k);
    out.iterations.assign(static_cast<std::size_t>(n_out), 0);
    out.converged.assign(static_cast<std::size_t>(n_out), false);
    out.no_support.assign(static_cast<std::size_t>(n_out), false);
    agree(comm, attempt([&] {
              if (static_cast<Index>(done.size()) != n_out)
                  throw Error("domain decomposition: " + std::to_string(done.size()) + " modes came back for " +
                              std::to_string(n_out) + " rows");
              for (std::size_t i = 0; i < done.size(); ++i) {
                  const Index row = static_cast<Index>(done[i].gid - out_first);
                  for (int d = 0; d < k; ++d)
                      out.modes(row, d) = static_cast<float>(done_pos[i * std::size_t(k) + std::size_t(d)]);
                  out.iterations[std::size_t(row)] = done[i].iterations;
                  const bool none = done[i].status == ModeStatus::NoSupport;
                  out.no_support[std::size_t(row)] = none;
                  out.converged[std::size_t(row)] =
                      done[i].settled || (fixed ? !none : done[i].status == ModeStatus::Converged);
              }
          }));
}

}  // namespace

LocalAscent domain_ascent(MPI_Comm comm, const MatrixF& local, const float* weights, const Options& options,
                          const std::vector<double>& scale, const Slabs& slabs,
                          const std::vector<long long>& first_rows, const MatrixF* queries,
                          const std::vector<long long>& query_first, const std::function<bool(const double*)>& settled)
{
    int rank = 0, size = 1;
    check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    const int k = static_cast<int>(local.cols());
    const Index n_local = local.rows();
    const long long first = first_rows[std::size_t(rank)];
    LocalAscent out;
    auto t = Clock::now();
    // The slab of coordinate u (bandwidth units); with slabs.everywhere, this rank (it holds every point).
    auto owner = [&](double u) { return slabs.everywhere ? rank : owner_of(slabs.bounds, u); };

    // 1. Every row to the owner of its slab (gid ≥ 0) and, as halo (−gid − 1), to every other rank
    //    whose slab lies within the halo width.
    auto u_of = [&](const float* row) { return static_cast<double>(row[slabs.dim]) * slabs.scale; };
    std::vector<int> send_counts(static_cast<std::size_t>(size), 0);
    for (Index i = 0; i < n_local; ++i) {
        const double u = u_of(local.data() + i * k);
        for (int r = owner(u - slabs.halo); r <= owner(u + slabs.halo); ++r) ++send_counts[std::size_t(r)];
    }
    std::vector<int> send_displs, recv_counts(static_cast<std::size_t>(size)), recv_displs;
    const long long nsend = displacements(send_counts, send_displs);
    check_mpi(MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm),
              "MPI_Alltoall (points)");
    const long long nrecv = displacements(recv_counts, recv_displs);
    MatrixF send_rows(static_cast<Index>(nsend), k);
    std::vector<long long> send_ids(static_cast<std::size_t>(nsend));
    std::vector<float> send_w(weights ? static_cast<std::size_t>(nsend) : 0);
    // Per-point bandwidths travel with their points (k standard deviations per row).
    const bool per_point = options.bandwidth.kind() == BandwidthKind::PerPoint;
    const MatrixD& H = options.bandwidth.per_point_values();
    MatrixD send_h(per_point ? static_cast<Index>(nsend) : 0, k);
    {
        std::vector<int> fill(send_displs);
        for (Index i = 0; i < n_local; ++i) {
            const double u = u_of(local.data() + i * k);
            const int own = owner(u);
            for (int r = owner(u - slabs.halo); r <= owner(u + slabs.halo); ++r) {
                const int at = fill[std::size_t(r)]++;
                send_rows.row(at) = local.row(i);
                // With explicit queries every point is only data (a halo id): the queries are the modes.
                send_ids[std::size_t(at)] = r == own && !queries ? first + i : -(first + i) - 1;
                if (weights) send_w[std::size_t(at)] = weights[i];
                if (per_point) send_h.row(at) = H.row(i);
            }
        }
    }
    MatrixF held(static_cast<Index>(nrecv), k);
    std::vector<long long> held_ids(static_cast<std::size_t>(nrecv));
    std::vector<float> held_w(weights ? static_cast<std::size_t>(nrecv) : 0);
    MatrixD held_h(per_point ? static_cast<Index>(nrecv) : 0, k);
    {
        const RowType row_f(k, MPI_FLOAT);
        check_mpi(MPI_Alltoallv(send_rows.data(), send_counts.data(), send_displs.data(), row_f.type, held.data(),
                                recv_counts.data(), recv_displs.data(), row_f.type, comm),
                  "MPI_Alltoallv (points)");
        check_mpi(MPI_Alltoallv(send_ids.data(), send_counts.data(), send_displs.data(), MPI_LONG_LONG, held_ids.data(),
                                recv_counts.data(), recv_displs.data(), MPI_LONG_LONG, comm),
                  "MPI_Alltoallv (point ids)");
        if (weights)
            check_mpi(MPI_Alltoallv(send_w.data(), send_counts.data(), send_displs.data(), MPI_FLOAT, held_w.data(),
                                    recv_counts.data(), recv_displs.data(), MPI_FLOAT, comm),
                      "MPI_Alltoallv (point weights)");
        if (per_point) {
            const RowType row_d(k, MPI_DOUBLE);
            check_mpi(MPI_Alltoallv(send_h.data(), send_counts.data(), send_displs.data(), row_d.type, held_h.data(),
                                    recv_counts.data(), recv_displs.data(), row_d.type, comm),
                      "MPI_Alltoallv (per-point bandwidths)");
        }
    }
    out.points_held = static_cast<Index>(nrecv);
    out.seconds_exchange = since(t);

    // 2. This rank's binding: the library prepares the held points (its neighbour search included)
    //    through a one-seed, one-iteration fit, and the steps below run on that binding.
    Options bind_options = options;
    bind_options.grouping = GroupingMethod::None;
    bind_options.fixed_iterations = 1;
    bind_options.progress = nullptr;
    std::optional<Clusterer> clusterer;
    std::vector<double> centre(static_cast<std::size_t>(k), 0), unit(static_cast<std::size_t>(k), 1);
    agree(comm, attempt([&] {
              if (nrecv == 0) return;
              if (per_point) bind_options.bandwidth = Bandwidth::per_point(held_h);
              clusterer.emplace(bind_options);
              if (!slabs.everywhere && !clusterer->backend().supports_cutoff())
                  throw InvalidArgument("the domain decomposition needs a backend with the truncated kernel; " +
                                        clusterer->backend().name() + " has none");
              const MatrixF seed = held.topRows(1);
              const Eigen::Ref<const MatrixF> seed_ref(seed);
              out.bind_info = clusterer->fit(held, weights ? held_w.data() : nullptr, &seed_ref);
              // This rank's prepared units (the held points' own whitening).
              prepared_frame(clusterer->binding().data(), held, scale, centre, unit);
          }));

    // 3. The ascents, one iteration at a time on every rank (a collective count ends them). The
    //    modes start in the binding's row order (its search's cell/leaf order: nearby modes together,
    //    as the driver's Morton order) and stay bound across iterations; set_modes runs again only
    //    when modes leave or arrive.
    std::vector<Mode> modes;
    std::vector<double> pos;  // data units, modes.size() × k
    if (clusterer) {
        const PreparedData& D = clusterer->binding().data();
        for (Index i = 0; i < D.n(); ++i) {
            const Index j = D.original.empty() ? i : D.original[std::size_t(i)];
            if (held_ids[std::size_t(j)] < 0) continue;
            modes.push_back({held_ids[std::size_t(j)], 0, ModeStatus::Active});
            for (int d = 0; d < k; ++d) pos.push_back(static_cast<double>(held(j, d)));
        }
    }
    if (queries) {
        // Explicit queries (bin seeds): each to the owner of its slab, then in the order of their
        // cells of side c (lexicographic), so that nearby modes are stepped together.
        const long long qfirst = query_first[std::size_t(rank)];
        std::vector<int> qdest(static_cast<std::size_t>(queries->rows()));
        for (Index i = 0; i < queries->rows(); ++i) {
            modes.push_back({qfirst + i, 0, ModeStatus::Active});
            for (int d = 0; d < k; ++d) pos.push_back(static_cast<double>((*queries)(i, d)));
            qdest[std::size_t(i)] = owner(static_cast<double>((*queries)(i, slabs.dim)) * slabs.scale);
        }
        exchange_modes(comm, size, k, modes, pos, qdest);
        sort_by_cell(k, std::max(slabs.halo, 1e-12), scale, modes, pos);
    }
    std::vector<Mode> done;
    std::vector<double> done_pos;
    const SlabFrame frame{comm,  rank,  size,   k,    options, slabs, owner, clusterer ? &*clusterer : nullptr,
                          nrecv, scale, centre, unit, settled};
    ascend_in_slabs(frame, modes, pos, done, done_pos, out);

    // 4. Every mode back to the rank that passed its row (or its query).
    const std::vector<long long>& origin_first = queries ? query_first : first_rows;
    return_modes(comm, size, k, queries ? queries->rows() : n_local, origin_first, done, done_pos,
                 options.fixed_iterations.has_value(), out);
    return out;
}

}  // namespace meanshift::mpi::detail
