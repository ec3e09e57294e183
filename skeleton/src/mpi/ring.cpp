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

#include "skeleton/src/core/ascent.hpp"

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

namespace {

/// This rank's sums over its points for travelling modes (Binding::accumulate), in data units and
/// one process's scale. With the truncated kernel a mode farther than the cutoff from this rank's
/// bounding box gets nothing here and is not handed to the backend at all (its search would still
/// visit the border cells nearest to it).
class LocalSums {
public:
    LocalSums(const MatrixF& local, const Options& options, Clusterer* clusterer, const std::vector<double>& reach,
              const std::vector<double>& centre, const std::vector<double>& unit, bool per_point, double rank_factor,
              std::size_t row)
        : clusterer_(clusterer),
          reach_(reach),
          centre_(centre),
          unit_(unit),
          per_point_(per_point),
          rank_factor_(rank_factor),
          row_(row),
          k_(static_cast<int>(local.cols())),
          truncated_(!options.exact && std::isfinite(options.cutoff)),
          cutoff_(options.cutoff),
          width_(per_point ? 2 * k_ : 1 + k_),
          box_lo_(std::size_t(k_), 0),
          box_hi_(std::size_t(k_), 0)
    {
        for (int d = 0; d < k_ && local.rows() > 0; ++d) {
            box_lo_[std::size_t(d)] = local.col(d).minCoeff();
            box_hi_[std::size_t(d)] = local.col(d).maxCoeff();
        }
    }

    /// Adds this rank's sums over its points to the block's `count` modes (S1 = Σ e x).
    void add(double* block, Index count)
    {
        if (!clusterer_ || count == 0) return;
        const std::size_t ku = std::size_t(k_);
        near_.clear();
        for (Index j = 0; j < count; ++j)
            if (reaches(block + static_cast<std::size_t>(j) * row_)) near_.push_back(j);
        const Index c = static_cast<Index>(near_.size());
        if (c == 0) return;
        pos_.resize(static_cast<std::size_t>(c) * ku);
        sums_.assign(static_cast<std::size_t>(c) * static_cast<std::size_t>(width_), 0.0);
        for (Index i = 0; i < c; ++i)
            for (int d = 0; d < k_; ++d)
                pos_[static_cast<std::size_t>(i) * ku + std::size_t(d)] =
                    (block[static_cast<std::size_t>(near_[std::size_t(i)]) * row_ + std::size_t(d)] -
                     centre_[std::size_t(d)]) *
                    unit_[std::size_t(d)];
        pairs += clusterer_->binding().accumulate(pos_.data(), c, sums_.data());
        // To data units and the common scale: prepared x' = (x − centre)·unit and precisions p/unit²,
        // so S0_d = unit_d² S0'_d (per point) and S1_d = unit_d S1'_d + centre_d S0_d.
        for (Index i = 0; i < c; ++i) {
            const double* sm = sums_.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(width_);
            double* acc = block + static_cast<std::size_t>(near_[std::size_t(i)]) * row_ + ku;
            if (per_point_) {
                for (int d = 0; d < k_; ++d) {
                    const double u = unit_[std::size_t(d)];
                    const double s0 = sm[d] * u * u * rank_factor_;
                    acc[d] += s0;
                    acc[k_ + d] += (sm[k_ + d] * u * rank_factor_) + centre_[std::size_t(d)] * s0;
                }
            } else {
                acc[0] += sm[0];
                for (int d = 0; d < k_; ++d)
                    acc[1 + d] += sm[1 + d] / unit_[std::size_t(d)] + centre_[std::size_t(d)] * sm[0];
            }
        }
    }

    double pairs = 0;  ///< candidate pairs evaluated on this rank

private:
    bool reaches(const double* y) const
    {
        if (!truncated_) return true;
        double d2 = 0;
        for (int d = 0; d < k_; ++d) {  // Σ_d p_id gap_d² ≥ Σ_d (gap_d / max_i σ_id)²
            const double gap = std::max({0.0, box_lo_[std::size_t(d)] - y[d], y[d] - box_hi_[std::size_t(d)]}) /
                               std::max(reach_[std::size_t(d)], 1e-300);
            d2 += gap * gap;
        }
        return d2 <= cutoff_ * cutoff_ * (1 + 1e-4);  // margin: the kernels test D² in float32
    }

    Clusterer* clusterer_;
    const std::vector<double>& reach_;
    const std::vector<double>& centre_;
    const std::vector<double>& unit_;
    bool per_point_;
    double rank_factor_;
    std::size_t row_;
    int k_;
    bool truncated_;
    double cutoff_;
    int width_;
    std::vector<double> box_lo_, box_hi_;
    std::vector<double> pos_, sums_;
    std::vector<Index> near_;
};

/// The move of one mode home with its sums over all points (Alg. 3 line 20) and its test (Alg. 5):
/// NoSupport when every weight underflowed (the mode keeps its position, as the driver's), else
/// Converged when `settled` accepts the new position or (not fixed) the shift in one process's
/// prepared units is within the tolerance, else Active.
struct HomeStep {
    int k;
    bool per_point;
    bool sphere;  ///< von Mises-Fisher: the new mode goes back onto the caller's unit sphere
    const std::vector<double>& scale;
    const std::function<bool(const double*)>& settled;
    ::meanshift::detail::AscentLimits limits;

    /// `b`: the mode's travelling row (position, then sums); `y`: its position (data units), moved.
    ModeStatus operator()(const double* b, double* y) const
    {
        const std::size_t ku = std::size_t(k);
        const double* s0 = b + ku;
        const double* s1 = b + ku + (per_point ? ku : 1);
        bool any = false;
        for (int d = 0; d < k; ++d) any = any || s0[per_point ? d : 0] > 0;
        if (!any) return ModeStatus::NoSupport;
        double ynew[kMaxStackDims];
        std::vector<double> heap;
        double* yn = ynew;
        if (k > kMaxStackDims) {
            heap.resize(ku);
            yn = heap.data();
        }
        for (int d = 0; d < k; ++d) {
            const double den = s0[per_point ? d : 0];
            yn[d] = den > 0 ? s1[d] / den : y[d];  // a dimension without support keeps y_d
        }
        // von Mises-Fisher: back onto the unit sphere (data units here) before the shift is
        // measured, as the bindings do for the other strategies.
        if (sphere) {
            double norm2 = 0;
            for (int d = 0; d < k; ++d) norm2 += yn[d] * yn[d];
            if (norm2 > 0)
                for (int d = 0; d < k; ++d) yn[d] /= std::sqrt(norm2);
        }
        double shift2 = 0;
        for (int d = 0; d < k; ++d) {
            const double dy = yn[d] - y[d];
            shift2 += dy * dy * scale[std::size_t(d)] * scale[std::size_t(d)];
            y[d] = yn[d];
        }
        if (settled && settled(y)) return ModeStatus::Converged;
        if (!limits.fixed && shift2 <= limits.tol2) return ModeStatus::Converged;
        return ModeStatus::Active;
    }
    static constexpr int kMaxStackDims = 64;
};

/// One iteration's messages: every rank's block of active modes goes once around the ring, in
/// chunks, pipelined (see the top of this file).
class RingPass {
public:
    RingPass(MPI_Comm comm, int rank, int size, std::size_t row, std::vector<double> (&buffers)[3])
        : chunking(ring_chunks()),
          comm_(comm),
          rank_(rank),
          size_(size),
          row_(row),
          buffers_(buffers),
          layout_(2 * static_cast<std::size_t>(size))
    {
    }

    /// Collective: every rank's block size and chunk rows for a block of `count` modes here;
    /// returns the modes active on all ranks.
    long long gather(Index count)
    {
        long long mine[2] = {static_cast<long long>(count),
                             static_cast<long long>(ring_chunk_rows(count, row_, chunking))};
        check_mpi(MPI_Allgather(mine, 2, MPI_LONG_LONG, layout_.data(), 2, MPI_LONG_LONG, comm_),
                  "MPI_Allgather (ring: block sizes)");
        long long alive = 0;
        for (int r = 0; r < size_; ++r) alive += layout_[2 * static_cast<std::size_t>(r)];
        return alive;
    }

    /// Passes this rank's block of `count` modes (in buffers[0]) around the ring; `sums(chunk,
    /// rows, hop, j)` adds this rank's sums to chunk j of the block held at hop `hop`, which is
    /// then sent on. Returns the block home, with every rank's sums.
    template <class Sums>
    const double* pass(Index count, Sums&& sums)
    {
        double* own = buffers_[0].data();
        if (size_ == 1) {
            sums(own, count, 0, Index(0));
            return own;
        }
        for (int hop = 0; hop < size_; ++hop) {
            post_receives(hop + 1);  // the next hop's chunks arrive while this hop's are summed
            double* block = buffers_[hop % 3].data();
            Index c = 0, rows = 0;
            const Index n_chunks = chunks_of(owner_at(hop), c, rows);
            std::vector<MPI_Request>& out_reqs = sends_[hop % 3];
            out_reqs.resize(static_cast<std::size_t>(n_chunks));
            for (Index j = 0; j < n_chunks; ++j) {
                const Index first = j * rows, len = std::min(rows, c - first);
                double* chunk = block + static_cast<std::size_t>(first) * row_;
                if (hop > 0) {
                    const auto t = Clock::now();
                    check_mpi(MPI_Wait(&recvs_[hop % 3][static_cast<std::size_t>(j)], MPI_STATUS_IGNORE),
                              "MPI_Wait (ring: a chunk)");
                    seconds_pass += since(t);
                }
                sums(chunk, len, hop, j);
                check_mpi(MPI_Isend(chunk, static_cast<int>(static_cast<std::size_t>(len) * row_), MPI_DOUBLE, next(),
                                    kTag, comm_, &out_reqs[static_cast<std::size_t>(j)]),
                          "MPI_Isend (ring: a chunk)");
            }
            recvs_[hop % 3].clear();  // all completed by the waits above
        }
        wait_all(recvs_[size_ % 3], "MPI_Waitall (ring: the block home)");
        for (auto& s : sends_) wait_all(s, "MPI_Waitall (ring: the last chunks)");
        return buffers_[size_ % 3].data();
    }

    const RingChunks chunking;
    double seconds_pass = 0;  ///< blocked in the ring's communication (what the sums did not hide)

private:
    static constexpr int kTag = 15;  // every chunk: they match in the order sent (MPI's non-overtaking rule)
    int next() const { return (rank_ + 1) % size_; }
    int prev() const { return (rank_ + size_ - 1) % size_; }
    /// Hop h: the block of rank (rank − h) mod R, in buffers[h % 3]; hop R is the own block, home.
    int owner_at(int hop) const { return (rank_ - hop % size_ + size_) % size_; }
    /// The chunks of rank `owner`'s block: chunk j holds modes [j · rows, min((j + 1) · rows, count)).
    Index chunks_of(int owner, Index& count, Index& rows) const
    {
        count = static_cast<Index>(layout_[2 * static_cast<std::size_t>(owner)]);
        rows = static_cast<Index>(layout_[2 * static_cast<std::size_t>(owner) + 1]);
        return rows > 0 ? (count + rows - 1) / rows : Index(0);
    }
    void wait_all(std::vector<MPI_Request>& requests, const char* what)
    {
        if (requests.empty()) return;
        const auto t = Clock::now();
        check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), what);
        requests.clear();
        seconds_pass += since(t);
    }
    void post_receives(int hop)
    {
        std::vector<MPI_Request>& reqs = recvs_[hop % 3];
        wait_all(sends_[hop % 3], "MPI_Waitall (ring: a buffer's sends)");  // hop − 3's chunks leave it
        Index c = 0, rows = 0;
        const Index n_chunks = chunks_of(owner_at(hop), c, rows);
        reqs.resize(static_cast<std::size_t>(n_chunks));
        for (Index j = 0; j < n_chunks; ++j) {
            const Index first = j * rows, len = std::min(rows, c - first);
            check_mpi(MPI_Irecv(buffers_[hop % 3].data() + static_cast<std::size_t>(first) * row_,
                                static_cast<int>(static_cast<std::size_t>(len) * row_), MPI_DOUBLE, prev(), kTag, comm_,
                                &reqs[static_cast<std::size_t>(j)]),
                      "MPI_Irecv (ring: a chunk)");
        }
    }

    MPI_Comm comm_;
    int rank_, size_;
    std::size_t row_;
    std::vector<double> (&buffers_)[3];
    std::vector<long long> layout_;  ///< per rank: its block's size and the rows of its chunks
    std::vector<MPI_Request> sends_[3], recvs_[3];
};

/// The modes 0..m-1 in the lexicographic order of their cells of side c (the cutoff) in bandwidth
/// units where the kernel is truncated, else as they are: the backend steps them in blocks, and a
/// block of nearby modes shares its candidate rows (20,000 2-D points, one rank: 4.8 s in input
/// order, 0.64 s so ordered, openmp). `pos`: m × k positions, data units.
std::vector<Index> start_order(const Options& options, const std::vector<double>& scale, const std::vector<double>& pos,
                               Index m, int k)
{
    const std::size_t ku = static_cast<std::size_t>(k);
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
    return active;
}

/// The ascents' outcome into `out`: per mode its position (`pos`, m × k, data units), iterations,
/// convergence (fixed iterations: every supported mode, the driver's rule) and support.
void write_modes(const ::meanshift::detail::ModeLedger& ledger, bool fixed, const std::vector<double>& pos, int k,
                 LocalAscent& out)
{
    const std::size_t m = ledger.iterations.size(), ku = static_cast<std::size_t>(k);
    out.iterations = ledger.iterations;
    out.converged.assign(m, false);
    out.no_support.assign(m, false);
    for (std::size_t q = 0; q < m; ++q) {
        out.no_support[q] = ledger.no_support(q);
        out.converged[q] = ledger.converged(q, fixed);
    }
    out.modes.resize(static_cast<Index>(m), k);
    for (std::size_t i = 0; i < m; ++i)
        for (int d = 0; d < k; ++d)
            out.modes(static_cast<Index>(i), d) = static_cast<float>(pos[i * ku + std::size_t(d)]);
}

}  // namespace

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
    // The active modes, nearby ones together.
    std::vector<Index> active = start_order(options, scale, pos, m, k);
    const ::meanshift::detail::AscentLimits limits = ::meanshift::detail::ascent_limits(options);
    const std::size_t row = ku + static_cast<std::size_t>(width);  // a travelling mode: position, sums
    LocalSums local_sums(local, options, clusterer ? &*clusterer : nullptr, reach, centre, unit, per_point, rank_factor,
                         row);
    // Alg. 5's shift in one process's prepared units ((x − centre)·scale_d), as the other
    // strategies measure it (they equal cluster(all, options, &all): explicit seeds, Euclidean there).
    const HomeStep home_step{k, per_point, options.kernel == KernelProfile::VonMisesFisher, scale, settled, limits};

    // 3. Alg. 4 (core/ascent.hpp): each iteration the active modes of every rank go once around
    //    the ring and come home with their sums over all points. The ring cannot use a binding's
    //    step (the sums of one mode are made on every rank in turn), so it supplies its own step:
    //    the pass and the move at home; the loop and the per-mode bookkeeping are ascent.cpp's.
    const auto t_ascent = Clock::now();
    RingPass ring(comm, rank, size, row, buffers);
    ::meanshift::detail::ModeLedger ledger(static_cast<std::size_t>(m));
    int it = 0;
    ::meanshift::detail::AscentHooks hooks;
    hooks.active = [&] { return static_cast<Index>(ring.gather(static_cast<Index>(active.size()))); };
    hooks.step = [&](StepReport& report) {
        const Index count = static_cast<Index>(active.size());
        // The block of this rank's active modes: positions and zeroed sums.
        double* own = buffers[0].data();
        std::fill_n(own, static_cast<std::size_t>(count) * row, 0.0);
        for (Index j = 0; j < count; ++j)
            std::copy_n(pos.data() + static_cast<std::size_t>(active[static_cast<std::size_t>(j)]) * ku, ku,
                        own + static_cast<std::size_t>(j) * row);
        std::exception_ptr failed;
        const double pairs_before = local_sums.pairs;
        const double* home = ring.pass(count, [&](double* chunk, Index rows, int hop, Index j) {
            if (failed) return;  // this iteration ends in an error anyway: only pass the chunks on
            failed = attempt([&] {
                if (ring.chunking.fail_rank == rank && it == 0 && hop == std::min(1, size - 1) && j == 0)
                    throw Error("ring strategy: failure injected by the test hook");
                local_sums.add(chunk, rows);
            });
        });
        // One agreement per iteration, after every message of the ring has completed.
        agree(comm, failed);
        // Home again: Alg. 3 line 20 and Alg. 5 for each of this rank's active modes.
        std::vector<Index> still;
        for (Index j = 0; j < count; ++j) {
            const Index q = active[static_cast<std::size_t>(j)];
            const ModeStatus status =
                home_step(home + static_cast<std::size_t>(j) * row, pos.data() + static_cast<std::size_t>(q) * ku);
            report.mode.push_back(q);
            report.status.push_back(status);
            if (status == ModeStatus::Active) still.push_back(q);
        }
        active = std::move(still);
        report.pairs = local_sums.pairs - pairs_before;
        ++it;
    };
    hooks.record = [&](Index q, ModeStatus status) { ledger.record(static_cast<std::size_t>(q), status); };
    const ::meanshift::detail::AscentTotals totals = ::meanshift::detail::ascend(limits, hooks);
    write_modes(ledger, limits.fixed, pos, k, out);
    out.seconds_migrate = ring.seconds_pass;
    out.bind_info.timing.seconds_iterate = since(t_ascent);
    out.bind_info.timing.iterations = totals.iterations;
    out.bind_info.timing.pair_interactions = local_sums.pairs;
    out.bind_info.timing.seconds_kernels = 0;  // not measured separately
    return out;
}

}  // namespace meanshift::mpi::detail
