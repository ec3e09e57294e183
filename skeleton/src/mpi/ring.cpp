// The ring strategy (docs/mpi.md): every rank keeps its own n/R points bound on its backend and
// never sends them; the modes travel instead. Each iteration the active modes of every rank, with
// their partial sums [S0 | S1] (Binding::accumulate), pass once around the ring of ranks: at each
// stop the host adds the sums over its points; back home after R hops they hold Alg. 3's sums over
// all n points, and the owner moves them (y' = S1 / S0) and tests convergence (Alg. 5), exactly as
// one process does. Sums from different ranks must share one scale: each rank's prepared
// log-weights (per-point H_i, sample weights) are shifted by its own largest one, so its sums are
// brought to the shift one process uses (the largest over all points) first.
//
// A hop is pipelined, as all-pairs N-body codes pass their particles: the travelling block goes in
// chunks (RingChunks, common.hpp); a rank waits for chunk j of the block it holds (MPI_Irecv posted
// a hop ahead), adds its sums to it and sends it on (MPI_Isend) at once, so that while it works on
// chunk j + 1, chunk j is on its way to the next rank and chunk j + 2 is arriving from the previous
// one; a chunk may run a whole hop ahead of the next. The block sizes (and each owner's chunk
// layout) are allgathered at the start of the iteration, so no size travels with the data and the
// pattern of messages is fixed before any sum is made. Every mode still gets the same sums added in
// the same (hop) order, so the results equal the unpipelined ring's bit for bit. A rank whose sums
// throw keeps passing the chunks on (its sums no longer matter) and the ranks agree once at the end
// of the iteration: every rank throws DistributedError with its reason, none waits for a chunk
// that never comes.
#include "common.hpp"

#include <meanshift/meanshift.hpp>

#include <algorithm>
#include <cmath>
#include <climits>
#include <limits>
#include <optional>
#include <vector>

namespace meanshift::mpi::detail {

RingChunks& ring_chunks()
{
    static RingChunks chunks;
    return chunks;
}

Index ring_chunk_rows(Index count, std::size_t row, const RingChunks& c)
{
    if (count <= 0) return 0;
    const Index granule = std::max<Index>(1, c.granule);
    const Index chunks = std::clamp<Index>(count / std::max<Index>(1, c.min_rows), 1, std::max(1, c.max_chunks));
    Index rows = (count + chunks - 1) / chunks;
    rows = (rows + granule - 1) / granule * granule;
    const Index cap = std::max<Index>(1, static_cast<Index>(INT_MAX / std::max<std::size_t>(1, row)));  // one message
    if (rows > cap) rows = cap >= granule ? cap / granule * granule : cap;
    return std::min(rows, count);
}

LocalAscent ring_ascent(MPI_Comm comm, const MatrixF& local, const float* weights, const Options& options,
                        const std::vector<double>& scale, const MatrixF* queries,
                        const std::function<bool(const double*)>& settled)
{
    int rank = 0, size = 1;
    check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    const int k = static_cast<int>(local.cols());
    const std::size_t ku = static_cast<std::size_t>(k);
    LocalAscent out;

    // 1. This rank's binding of its own points (its neighbour search included), through a
    //    one-seed, one-iteration fit, and its prepared units: (x − centre) · unit.
    Options bind_options = options;
    bind_options.grouping = GroupingMethod::None;
    bind_options.fixed_iterations = 1;
    bind_options.progress = nullptr;
    bind_options.seeding = Seeding::AllPoints;
    std::optional<Clusterer> clusterer;
    std::vector<double> centre(ku, 0), unit(ku, 1);
    // Per-point model (per-point H_i, or sample weights): [S0_1..S0_k | S1]; shared: [S0 | S1].
    const bool per_point = !options.bandwidth.shared() || weights != nullptr;
    const Index width = per_point ? 2 * k : 1 + k;
    // True log-weights c_i = −½ Σ_d log var_id + log w_i and per-dimension σ reach (data units).
    std::vector<double> var(ku), reach(ku, 0.0);
    double top_c = -std::numeric_limits<double>::infinity();  // this rank's largest c_i
    double rank_offset = 0;  // its prepared log-weights minus the true ones (all rows alike)
    // The largest block that will travel (active sets only shrink): three rotating buffers of it
    // (the block summed here, the next hop's block arriving, the last hop's block still being sent).
    long long largest_block = queries ? queries->rows() : local.rows();
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &largest_block, 1, MPI_LONG_LONG, MPI_MAX, comm),
              "MPI_Allreduce (block size)");
    std::vector<double> buffers[3];
    agree(comm, attempt([&] {
              std::vector<double> x(ku);
              for (Index i = 0; i < local.rows(); ++i) {
                  for (int d = 0; d < k; ++d) x[std::size_t(d)] = local(i, d);
                  options.bandwidth.covariance_diagonal(i, x.data(), k, var.data());
                  double c = 0;
                  for (int d = 0; d < k; ++d) {
                      c -= 0.5 * std::log(var[std::size_t(d)]);
                      reach[std::size_t(d)] = std::max(reach[std::size_t(d)], std::sqrt(var[std::size_t(d)]));
                  }
                  if (weights) c += weights[i] > 0 ? std::log(static_cast<double>(weights[i])) : -1e4;
                  top_c = std::max(top_c, c);
              }
              const std::size_t row_values = ku + static_cast<std::size_t>(width);
              for (int b = 0; b < (size > 1 ? 3 : 1); ++b)
                  buffers[b].resize(static_cast<std::size_t>(largest_block) * row_values);
              if (local.rows() == 0) return;  // contributes no sums
              clusterer.emplace(bind_options);
              const MatrixF seed = local.topRows(1);
              const Eigen::Ref<const MatrixF> seed_ref(seed);
              out.bind_info = clusterer->fit(local, weights, &seed_ref);
              const Binding& b = clusterer->binding();
              if (b.sum_width() != width) throw Error("ring strategy: unexpected kernel model of the binding");
              // prepare() shifts the log-weights so that the largest is 0: that row is the rank's top_c.
              if (per_point) rank_offset = -top_c;
              prepared_frame(b.data(), local, scale, centre, unit);
              // A probe, so that a backend without partial sums fails here, on every rank, with its reason.
              std::vector<double> probe(static_cast<std::size_t>(width), 0.0), y(ku, 0.0);
              clusterer->binding().accumulate(y.data(), 1, probe.data());
          }));
    out.points_held = local.rows();
    // One process shifts every log-weight by the largest over all points (C): rank r's sums, made
    // with e·exp(rank_offset), are multiplied by exp(−C − rank_offset) ≤ 1.
    double global_top = top_c;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &global_top, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce (log-weights)");
    const double rank_factor = per_point && clusterer ? std::exp(-global_top - rank_offset) : 1.0;

    // 2. This rank's modes (data units): its queries, else its own rows.
    const MatrixF& start = queries ? *queries : local;
    const Index m = start.rows();
    std::vector<double> pos(static_cast<std::size_t>(m) * ku);
    for (Index i = 0; i < m; ++i)
        for (int d = 0; d < k; ++d) pos[static_cast<std::size_t>(i) * ku + std::size_t(d)] = start(i, d);
    // Alg. 5's shift in one process's prepared units ((x − centre)·scale_d), as the other
    // strategies measure it (they equal cluster(all, options, &all): explicit seeds, Euclidean there).
    out.iterations.assign(static_cast<std::size_t>(m), 0);
    out.converged.assign(static_cast<std::size_t>(m), false);
    out.no_support.assign(static_cast<std::size_t>(m), false);
    // Active modes in the lexicographic order of their cells of side c (the cutoff) in bandwidth
    // units: the backend steps them in blocks, and a block of nearby modes shares its candidate
    // rows (20,000 2-D points, one rank: 4.8 s in input order, 0.64 s so ordered, openmp).
    std::vector<Index> active(static_cast<std::size_t>(m));
    for (Index i = 0; i < m; ++i) active[static_cast<std::size_t>(i)] = i;
    if (std::isfinite(options.cutoff) && !options.exact) {
        const double side = std::max(options.cutoff, 1e-12);
        std::vector<long long> key(static_cast<std::size_t>(m) * ku);
        for (std::size_t v = 0; v < key.size(); ++v)
            key[v] = static_cast<long long>(std::floor(pos[v] * scale[v % ku] / side));
        std::stable_sort(active.begin(), active.end(), [&](Index a, Index b) {
            return std::lexicographical_compare(key.begin() + static_cast<std::ptrdiff_t>(a * k),
                                                key.begin() + static_cast<std::ptrdiff_t>((a + 1) * k),
                                                key.begin() + static_cast<std::ptrdiff_t>(b * k),
                                                key.begin() + static_cast<std::ptrdiff_t>((b + 1) * k));
        });
    }

    const bool fixed = options.fixed_iterations.has_value();
    const bool sphere = options.kernel == KernelProfile::VonMisesFisher;
    std::vector<double> ynew(ku);
    const int max_it = fixed ? *options.fixed_iterations : options.max_iterations;
    const double tol2 = options.tolerance * options.tolerance;
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    const std::size_t row = ku + static_cast<std::size_t>(width);  // a travelling mode: position, sums

    // This rank's bounding box (data units): with the truncated kernel a mode farther than the
    // cutoff from it gets nothing here and is not handed to the backend at all (its search would
    // still visit the border cells nearest to it).
    const bool truncated = !options.exact && std::isfinite(options.cutoff);
    std::vector<double> box_lo(ku, 0), box_hi(ku, 0);
    for (int d = 0; d < k && local.rows() > 0; ++d) {
        box_lo[std::size_t(d)] = local.col(d).minCoeff();
        box_hi[std::size_t(d)] = local.col(d).maxCoeff();
    }
    auto reaches = [&](const double* y) {
        if (!truncated) return true;
        double d2 = 0;
        for (int d = 0; d < k; ++d) {  // Σ_d p_id gap_d² ≥ Σ_d (gap_d / max_i σ_id)²
            const double gap = std::max({0.0, box_lo[std::size_t(d)] - y[d], y[d] - box_hi[std::size_t(d)]}) /
                               std::max(reach[std::size_t(d)], 1e-300);
            d2 += gap * gap;
        }
        return d2 <= options.cutoff * options.cutoff * (1 + 1e-4);  // margin: the kernels test D² in float32
    };

    // Adds this rank's sums over its points to the block's (data units: S1 = Σ e x).
    std::vector<double> local_pos, local_sums;
    std::vector<Index> near;
    double pairs = 0;
    auto add_sums = [&](double* block, Index count) {
        if (!clusterer || count == 0) return;
        near.clear();
        for (Index j = 0; j < count; ++j)
            if (reaches(block + static_cast<std::size_t>(j) * row)) near.push_back(j);
        const Index c = static_cast<Index>(near.size());
        if (c == 0) return;
        local_pos.resize(static_cast<std::size_t>(c) * ku);
        local_sums.assign(static_cast<std::size_t>(c) * static_cast<std::size_t>(width), 0.0);
        for (Index i = 0; i < c; ++i)
            for (int d = 0; d < k; ++d)
                local_pos[static_cast<std::size_t>(i) * ku + std::size_t(d)] =
                    (block[static_cast<std::size_t>(near[std::size_t(i)]) * row + std::size_t(d)] -
                     centre[std::size_t(d)]) *
                    unit[std::size_t(d)];
        pairs += clusterer->binding().accumulate(local_pos.data(), c, local_sums.data());
        // To data units and the common scale: prepared x' = (x − centre)·unit and precisions p/unit²,
        // so S0_d = unit_d² S0'_d (per point) and S1_d = unit_d S1'_d + centre_d S0_d.
        for (Index i = 0; i < c; ++i) {
            const double* sm = local_sums.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(width);
            double* acc = block + static_cast<std::size_t>(near[std::size_t(i)]) * row + ku;
            if (per_point) {
                for (int d = 0; d < k; ++d) {
                    const double u = unit[std::size_t(d)];
                    const double s0 = sm[d] * u * u * rank_factor;
                    acc[d] += s0;
                    acc[k + d] += (sm[k + d] * u * rank_factor) + centre[std::size_t(d)] * s0;
                }
            } else {
                acc[0] += sm[0];
                for (int d = 0; d < k; ++d)
                    acc[1 + d] += sm[1 + d] / unit[std::size_t(d)] + centre[std::size_t(d)] * sm[0];
            }
        }
    };

    const auto t_ascent = Clock::now();
    const RingChunks chunking = ring_chunks();
    double seconds_pass = 0;  // blocked in the ring's communication (what the sums did not hide)
    // Per rank: its block's size and the rows of its chunks, allgathered each iteration.
    std::vector<long long> layout(2 * static_cast<std::size_t>(size));
    std::vector<MPI_Request> sends[3], recvs[3];
    auto wait_all = [&](std::vector<MPI_Request>& requests, const char* what) {
        if (requests.empty()) return;
        const auto t = Clock::now();
        check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), what);
        requests.clear();
        seconds_pass += since(t);
    };
    // The chunks of rank `owner`'s block: chunk j holds modes [j · rows, min((j + 1) · rows, count)).
    auto chunks_of = [&](int owner, Index& count, Index& rows) {
        count = static_cast<Index>(layout[2 * static_cast<std::size_t>(owner)]);
        rows = static_cast<Index>(layout[2 * static_cast<std::size_t>(owner) + 1]);
        return rows > 0 ? (count + rows - 1) / rows : Index(0);
    };
    constexpr int kTag = 15;  // every chunk: they match in the order sent (MPI's non-overtaking rule)
    int iterations = 0;
    for (int it = 0; it < max_it; ++it) {
        const Index count = static_cast<Index>(active.size());
        long long mine[2] = {static_cast<long long>(count),
                             static_cast<long long>(ring_chunk_rows(count, row, chunking))};
        check_mpi(MPI_Allgather(mine, 2, MPI_LONG_LONG, layout.data(), 2, MPI_LONG_LONG, comm),
                  "MPI_Allgather (ring: block sizes)");
        long long alive = 0;
        for (int r = 0; r < size; ++r) alive += layout[2 * static_cast<std::size_t>(r)];
        if (alive == 0) break;
        ++iterations;
        // The block of this rank's active modes: positions and zeroed sums.
        double* own = buffers[0].data();
        std::fill_n(own, static_cast<std::size_t>(count) * row, 0.0);
        for (Index j = 0; j < count; ++j)
            std::copy_n(pos.data() + static_cast<std::size_t>(active[static_cast<std::size_t>(j)]) * ku, ku,
                        own + static_cast<std::size_t>(j) * row);
        std::exception_ptr failed;
        auto sums_of = [&](double* chunk, Index rows, int hop, Index j) {
            if (failed) return;  // this iteration ends in an error anyway: only pass the chunks on
            failed = attempt([&] {
                if (chunking.fail_rank == rank && it == 0 && hop == std::min(1, size - 1) && j == 0)
                    throw Error("ring strategy: failure injected by the test hook");
                add_sums(chunk, rows);
            });
        };
        const double* home = own;
        if (size == 1) {
            sums_of(own, count, 0, 0);
        } else {
            // Hop h: the block of rank (rank − h) mod R, in buffers[h % 3]; hop R is the own block, home.
            auto owner_at = [&](int hop) { return (rank - hop % size + size) % size; };
            auto post_receives = [&](int hop) {
                std::vector<MPI_Request>& reqs = recvs[hop % 3];
                wait_all(sends[hop % 3], "MPI_Waitall (ring: a buffer's sends)");  // hop − 3's chunks leave it
                Index c = 0, rows = 0;
                const Index n_chunks = chunks_of(owner_at(hop), c, rows);
                reqs.resize(static_cast<std::size_t>(n_chunks));
                for (Index j = 0; j < n_chunks; ++j) {
                    const Index first = j * rows, len = std::min(rows, c - first);
                    check_mpi(MPI_Irecv(buffers[hop % 3].data() + static_cast<std::size_t>(first) * row,
                                        static_cast<int>(static_cast<std::size_t>(len) * row), MPI_DOUBLE, prev, kTag,
                                        comm, &reqs[static_cast<std::size_t>(j)]),
                              "MPI_Irecv (ring: a chunk)");
                }
            };
            for (int hop = 0; hop < size; ++hop) {
                post_receives(hop + 1);  // the next hop's chunks arrive while this hop's are summed
                double* block = buffers[hop % 3].data();
                Index c = 0, rows = 0;
                const Index n_chunks = chunks_of(owner_at(hop), c, rows);
                std::vector<MPI_Request>& out_reqs = sends[hop % 3];
                out_reqs.resize(static_cast<std::size_t>(n_chunks));
                for (Index j = 0; j < n_chunks; ++j) {
                    const Index first = j * rows, len = std::min(rows, c - first);
                    double* chunk = block + static_cast<std::size_t>(first) * row;
                    if (hop > 0) {
                        const auto t = Clock::now();
                        check_mpi(MPI_Wait(&recvs[hop % 3][static_cast<std::size_t>(j)], MPI_STATUS_IGNORE),
                                  "MPI_Wait (ring: a chunk)");
                        seconds_pass += since(t);
                    }
                    sums_of(chunk, len, hop, j);
                    check_mpi(MPI_Isend(chunk, static_cast<int>(static_cast<std::size_t>(len) * row), MPI_DOUBLE, next,
                                        kTag, comm, &out_reqs[static_cast<std::size_t>(j)]),
                              "MPI_Isend (ring: a chunk)");
                }
                recvs[hop % 3].clear();  // all completed by the waits above
            }
            wait_all(recvs[size % 3], "MPI_Waitall (ring: the block home)");
            for (auto& s : sends) wait_all(s, "MPI_Waitall (ring: the last chunks)");
            home = buffers[size % 3].data();
        }
        // One agreement per iteration, after every message of the ring has completed.
        agree(comm, failed);
        // Home again: Alg. 3 line 20 and Alg. 5 for each of this rank's active modes.
        std::vector<Index> still;
        for (Index j = 0; j < count; ++j) {
            const Index q = active[static_cast<std::size_t>(j)];
            const double* b = home + static_cast<std::size_t>(j) * row;
            double* y = pos.data() + static_cast<std::size_t>(q) * ku;
            ++out.iterations[static_cast<std::size_t>(q)];
            const double* s0 = b + ku;
            const double* s1 = b + ku + (per_point ? ku : 1);
            bool any = false;
            for (int d = 0; d < k; ++d) any = any || s0[per_point ? d : 0] > 0;
            if (!any) {  // every weight underflowed: the mode keeps its position (driver's NoSupport)
                out.no_support[static_cast<std::size_t>(q)] = true;
                continue;
            }
            for (int d = 0; d < k; ++d) {
                const double den = s0[per_point ? d : 0];
                ynew[std::size_t(d)] = den > 0 ? s1[d] / den : y[d];  // a dimension without support keeps y_d
            }
            // von Mises-Fisher: the new mode goes back onto the caller's unit sphere (data units here)
            // before its shift is measured, as the bindings do for the other strategies.
            if (sphere) {
                double norm2 = 0;
                for (int d = 0; d < k; ++d) norm2 += ynew[std::size_t(d)] * ynew[std::size_t(d)];
                if (norm2 > 0)
                    for (int d = 0; d < k; ++d) ynew[std::size_t(d)] /= std::sqrt(norm2);
            }
            double shift2 = 0;
            for (int d = 0; d < k; ++d) {
                const double dy = ynew[std::size_t(d)] - y[d];
                shift2 += dy * dy * scale[std::size_t(d)] * scale[std::size_t(d)];
                y[d] = ynew[std::size_t(d)];
            }
            if (settled && settled(y)) {
                out.converged[static_cast<std::size_t>(q)] = true;
                continue;
            }
            if (!fixed && shift2 <= tol2) {
                out.converged[static_cast<std::size_t>(q)] = true;
                continue;
            }
            still.push_back(q);
        }
        active = std::move(still);
    }
    // Fixed iterations: every supported mode counts as converged (the driver's rule).
    if (fixed)
        for (Index q = 0; q < m; ++q) out.converged[std::size_t(q)] = !out.no_support[std::size_t(q)];
    out.modes.resize(m, k);
    for (Index i = 0; i < m; ++i)
        for (int d = 0; d < k; ++d)
            out.modes(i, d) = static_cast<float>(pos[static_cast<std::size_t>(i) * ku + std::size_t(d)]);
    out.seconds_migrate = seconds_pass;
    out.bind_info.timing.seconds_iterate = since(t_ascent);
    out.bind_info.timing.iterations = iterations;
    out.bind_info.timing.pair_interactions = pairs;
    out.bind_info.timing.seconds_kernels = 0;  // not measured separately
    return out;
}

}  // namespace meanshift::mpi::detail
