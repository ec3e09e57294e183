// MPI tests of meanshift::mpi::cluster (docs/mpi.md), run by CTest under mpirun -np 2 and -np 3.
// No doctest: every rank checks, the ranks agree, and the exit code says it.
//   test_mpi_cluster equal          labels / centres equal one process's cluster(all, opt, &all)
//   test_mpi_cluster domain         the domain decomposition: same labels, modes within float32 rounding;
//                                   Auto's choice; the exact kernel refused for it on every rank
//   test_mpi_cluster weights        sample weights, both strategies: the same labels as one process's
//                                   weighted run; weights on some ranks only -> error on every rank
//   test_mpi_cluster ring_chunks    the pipelined ring with several chunks per hop: bit for bit the
//                                   one-chunk ring's results, one process's labels; a failing rank ends all
//   test_mpi_cluster ring_opencl    the ring with opencl ranks (their partial sums from the OpenCL kernels)
//                                   against one process on opencl; exit code 77 (skipped) without OpenCL
//   test_mpi_cluster perpoint       per-point H_i (the paper's model) in both strategies, and Sec. IV's
//                                   exponential-last model (replicated), against one process
//   test_mpi_cluster bins           bin seeding across ranks (both strategies) against one process's
//                                   bin seeding without boundary refinement and data binning
//   test_mpi_cluster refine         the boundary refinement across ranks against one process's
//   test_mpi_cluster databins       data binning across ranks (with and without sample weights) against one process's
//   test_mpi_cluster nan            rank 1 passes a NaN: every rank must get DistributedError "rank 1: ..."
//   test_mpi_cluster backend        rank 1 asks for a backend that does not exist: same, from the ascent
//   test_mpi_cluster mismatch       rank 1 passes another bandwidth: every rank gets the mismatch error
//   test_mpi_cluster throw-uncaught rank 1's error is not caught: mpirun must end non-zero (no hang)
#include <meanshift/mpi.hpp>

#include <meanshift/registry.hpp>

#include "../../skeleton/src/mpi/common.hpp"  // detail::gpu_of_rank (placement rule)

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

int rank_ = 0, size_ = 1;
bool skipped_ = false;  // the test could not run here (exit code 77, CTest's SKIP_RETURN_CODE)

meanshift::MatrixF blobs(meanshift::Index n)
{
    std::mt19937 rng(42);
    std::normal_distribution<float> noise(0.0f, 0.6f);
    const float centres[4][2] = {{0, 0}, {8, 1}, {2, 9}, {-7, 6}};
    meanshift::MatrixF x(n, 2);
    for (meanshift::Index i = 0; i < n; ++i)
        for (int d = 0; d < 2; ++d) x(i, d) = centres[i % 4][d] + noise(rng);
    return x;
}

// Rows [first, first + count) of rank r's share (this rank's by default): uneven on purpose (n % R != 0).
void share(meanshift::Index n, meanshift::Index& first, meanshift::Index& count, int r = rank_)
{
    const meanshift::Index base = n / size_, extra = n % size_;
    first = r * base + std::min<meanshift::Index>(r, extra);
    count = base + (r < extra ? 1 : 0);
}

meanshift::Options options()
{
    meanshift::Options opt;
    opt.bandwidth = meanshift::Bandwidth::isotropic(1.0);
    opt.backend = "auto";
    opt.seeding = meanshift::Seeding::AllPoints;  // compared with one process's cluster(all, opt, &all)
    return opt;
}

/// options() for one case of the ring tests: `backend`, the exact kernel (cut = inf) or cutoff `cut`.
meanshift::Options case_options(const char* backend, double cut)
{
    meanshift::Options opt = options();
    opt.backend = backend;
    opt.cutoff = cut;
    if (!std::isfinite(cut)) opt.exact = true;
    return opt;
}

/// The name of a case of the ring tests, whose cutoffs are inf and 3.
std::string case_name(const std::string& what, double cut)
{
    return what + (std::isfinite(cut) ? " cutoff 3" : " exact");
}

/// Bin seeding without the boundary refinement and without data binning: every point takes its bin's
/// seed's label and the distributed ascents run on the points, as one process's do.
meanshift::Options bin_seeded()
{
    meanshift::Options opt = options();
    opt.seeding = meanshift::Seeding::Bins;
    opt.refine_boundaries = false;
    opt.data_bin_size = -1;
    return opt;
}

bool fail(const std::string& what)
{
    std::fprintf(stderr, "[rank %d] FAIL: %s\n", rank_, what.c_str());
    return false;
}

bool test_equal(meanshift::GroupingMethod method)
{
    const meanshift::Index n = 403;
    const meanshift::MatrixF all = blobs(n);
    meanshift::Options opt = options();
    opt.grouping = method;
    const Eigen::Ref<const meanshift::MatrixF> seeds(all);
    const meanshift::Result ref = meanshift::cluster(all, opt, &seeds);

    meanshift::Index first = 0, count = 0;
    share(n, first, count);
    const meanshift::MatrixF mine = all.middleRows(first, count);
    const meanshift::mpi::DistributedResult r =
        meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt, meanshift::mpi::Strategy::ReplicatedPoints);

    if (r.strategy != meanshift::mpi::Strategy::ReplicatedPoints) return fail("strategy");
    if (r.global_points != n || r.first_row != first || r.ranks != size_) return fail("global_points/first_row/ranks");
    if (static_cast<meanshift::Index>(r.labels.size()) != count) return fail("labels size");
    if (r.centres.rows() != ref.centres.rows())
        return fail("cluster count " + std::to_string(r.centres.rows()) + " vs " + std::to_string(ref.centres.rows()));
    if (r.cluster_sizes != ref.cluster_sizes) return fail("cluster sizes");
    // ARI 1.0: the labels are a bijection of the reference's (same grouping order: equal in fact).
    std::map<int, int> to_ref;
    for (meanshift::Index i = 0; i < count; ++i) {
        const int a = r.labels[static_cast<std::size_t>(i)], b = ref.labels[static_cast<std::size_t>(first + i)];
        auto it = to_ref.emplace(a, b).first;
        if (it->second != b) return fail("labels are not a relabelling of one process's");
        if (a != b)
            return fail("label " + std::to_string(a) + " vs " + std::to_string(b) + " at row " +
                        std::to_string(first + i));
    }
    const double dc = (r.centres - ref.centres).cwiseAbs().maxCoeff();
    if (!(dc <= 1e-5)) return fail("centres differ by " + std::to_string(dc));
    const double dm = (r.modes - ref.modes.middleRows(first, count)).cwiseAbs().maxCoeff();
    if (!(dm <= 1e-5)) return fail("modes differ by " + std::to_string(dm));
    return true;
}

// `r` (this rank's rows [first, first + count)) against one process's `ref`: the same cluster sizes
// and labels, modes within `mode_tol`, centres within 1e-3. Prints the deviations under `name`.
bool matches(const meanshift::Result& ref, const meanshift::mpi::DistributedResult& r, meanshift::Index first,
             meanshift::Index count, const std::string& name, double mode_tol)
{
    if (static_cast<meanshift::Index>(r.labels.size()) != count || r.modes.rows() != count)
        return fail(name + ": sizes");
    if (r.cluster_sizes != ref.cluster_sizes) return fail(name + ": cluster sizes differ");
    for (meanshift::Index i = 0; i < count; ++i)
        if (r.labels[std::size_t(i)] != ref.labels[std::size_t(first + i)])
            return fail(name + ": label differs at row " + std::to_string(first + i));
    const double dm = (r.modes - ref.modes.middleRows(first, count)).cwiseAbs().maxCoeff();
    const double dc = (r.centres - ref.centres).cwiseAbs().maxCoeff();
    std::printf("[rank %d] %s: %lld points held, %lld modes migrated, modes within %.2e, centres %.2e\n", rank_,
                name.c_str(), static_cast<long long>(r.local_points_held), static_cast<long long>(r.modes_migrated), dm,
                dc);
    if (!(dm <= mode_tol)) return fail(name + ": modes differ by " + std::to_string(dm));
    if (!(dc <= 1e-3)) return fail(name + ": centres differ by " + std::to_string(dc));
    return true;
}

/// A ring run against one process: it ran the ring strategy, this rank held only its own points, and
/// matches() holds.
bool ring_matches(const meanshift::Result& ref, const meanshift::mpi::DistributedResult& r, meanshift::Index first,
                  meanshift::Index count, const std::string& name, double mode_tol)
{
    if (r.strategy != meanshift::mpi::Strategy::Ring) return fail(name + ": strategy");
    if (r.local_points_held != count) return fail(name + ": a rank holds other ranks' points");
    return matches(ref, r, first, count, name, mode_tol);
}

// `call` must throw DistributedError on every rank, with `needle` in its message.
template <class F>
bool fails_everywhere(F&& call, const std::string& needle, const std::string& what)
{
    try {
        call();
    } catch (const meanshift::mpi::DistributedError& e) {
        if (std::string(e.what()).find(needle) != std::string::npos) return true;
        return fail(what + ": wrong error: " + e.what());
    }
    return fail(what + ": no exception");
}

// Domain decomposition (truncated kernel, cutoff 3): the same labels and cluster sizes as one
// process, modes and centres within float32 rounding of its prepared units (each rank centres its
// own points), every mode accounted for; the halo is checked by the equality itself (a missing
// neighbour within the cutoff changes a trajectory).
bool test_domain()
{
    const meanshift::Index n = 1601;
    const meanshift::MatrixF all = blobs(n);
    meanshift::Options opt = options();
    opt.cutoff = 3.0;
    const Eigen::Ref<const meanshift::MatrixF> seeds(all);
    const meanshift::Result ref = meanshift::cluster(all, opt, &seeds);
    meanshift::Index first = 0, count = 0;
    share(n, first, count);
    const meanshift::MatrixF mine = all.middleRows(first, count);
    const auto r = meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt, meanshift::mpi::Strategy::DomainDecomposition);
    if (r.strategy != meanshift::mpi::Strategy::DomainDecomposition) return fail("strategy");
    // The ascent stops when a shift is <= tolerance (1e-3 bandwidths); a float32 difference may end
    // a trajectory one iteration earlier or later, a few tolerances from the other's end.
    if (!matches(ref, r, first, count, "domain", 5e-3)) return false;
    if (size_ > 1 && r.local_points_held >= n) return fail("a rank holds every point: no decomposition");
    // Auto: the exact kernel keeps the replicated points.
    meanshift::Options exact = opt;
    exact.exact = true;
    const auto e = meanshift::mpi::cluster(MPI_COMM_WORLD, mine, exact);
    if (e.strategy != meanshift::mpi::Strategy::ReplicatedPoints) return fail("Auto with the exact kernel");
    std::printf("[rank %d] auto with cutoff 3 chose %s\n", rank_,
                meanshift::mpi::to_string(meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt).strategy));
    // Asked for with the exact kernel: an InvalidArgument on every rank, no hang.
    return fails_everywhere(
        [&] { meanshift::mpi::cluster(MPI_COMM_WORLD, mine, exact, meanshift::mpi::Strategy::DomainDecomposition); },
        "truncated kernel", "domain decomposition with the exact kernel");
}

// Every rank's `ok`, agreed (so that one rank's failure does not leave the others in a collective).
bool all_ranks(bool ok)
{
    int v = ok ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return v == 1;
}

// The ring's per-point case: per-point H_i of 2-D points (σ differing 2.8×, anisotropic) and sample
// weights (every fifth point 20×), cutoff 3 on `backend`; one process's result over all points and
// the options a rank passes with its rows' H_i.
struct PerPointRing {
    std::vector<float> w;  ///< every point's weight (a rank passes w.data() + first)
    meanshift::Options local;  ///< this rank's options: its rows' H_i
    meanshift::Result ref;  ///< one process, all points
};

PerPointRing per_point_ring(const char* backend, const meanshift::MatrixF& all,
                            const Eigen::Ref<const meanshift::MatrixF>& seeds, meanshift::Index first,
                            meanshift::Index count)
{
    const meanshift::Index n = all.rows();
    meanshift::MatrixD H(n, 2);
    PerPointRing c;
    c.w.assign(static_cast<std::size_t>(n), 1.0f);
    for (meanshift::Index i = 0; i < n; ++i) {
        const double sg = i % 4 == 0 ? 0.5 : 1.0 + 0.2 * static_cast<double>(i % 3);
        H(i, 0) = sg;
        H(i, 1) = 1.3 * sg;
        c.w[std::size_t(i)] = i % 5 == 0 ? 20.0f : 1.0f;
    }
    meanshift::Options pp = options();
    pp.backend = backend;
    pp.cutoff = 3.0;
    c.local = pp;
    pp.bandwidth = meanshift::Bandwidth::per_point(H);
    c.ref = meanshift::cluster(all, pp, c.w.data(), &seeds);
    c.local.bandwidth = meanshift::Bandwidth::per_point(H.middleRows(first, count));
    return c;
}

// Ring (points stay on their rank, the modes travel with their partial sums): one process's labels
// and cluster sizes, and its modes within 1e-5 on the serial backend (float64 sums in another
// order) or within 5e-3 of the openmp backend's float32 kernels (the ring's sums are float64; a
// trajectory may stop an iteration earlier or later, a few tolerances away); exact and truncated,
// every point a seed and bin seeding, per-point H_i with sample weights; each rank holds only its
// own points.
bool test_ring()
{
    const meanshift::Index n = 601;
    const meanshift::MatrixF all = blobs(n);
    meanshift::Index first = 0, count = 0;
    share(n, first, count);
    const meanshift::MatrixF mine = all.middleRows(first, count);
    const Eigen::Ref<const meanshift::MatrixF> seeds(all);
    for (const char* backend : {"serial", "openmp"})
        for (double cut : {std::numeric_limits<double>::infinity(), 3.0}) {
            const meanshift::Options opt = case_options(backend, cut);
            const meanshift::Result ref = meanshift::cluster(all, opt, &seeds);
            const auto r = meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt, meanshift::mpi::Strategy::Ring);
            const std::string name = case_name(std::string("ring ") + backend, cut);
            if (!all_ranks(ring_matches(ref, r, first, count, name, std::string(backend) == "serial" ? 1e-5 : 5e-3)))
                return false;
        }
    // Bin seeding (the library's default seeding), truncated kernel: one process's bin-seeded labels
    // without refinement and without data binning (the ring bins no data).
    meanshift::Options binned = bin_seeded();
    binned.backend = "openmp";
    const meanshift::Result ref_bins = meanshift::cluster(all, binned);
    const auto rb = meanshift::mpi::cluster(MPI_COMM_WORLD, mine, binned, meanshift::mpi::Strategy::Ring);
    if (!all_ranks(matches(ref_bins, rb, first, count, "ring bins", 5e-3))) return false;
    // Per-point H_i (σ differing 2.8x) with sample weights on the serial backend: the ranks' sums,
    // each made with its own log-weight shift, are brought to one process's: modes identical within
    // float64 rounding.
    const PerPointRing c = per_point_ring("serial", all, seeds, first, count);
    const auto rp =
        meanshift::mpi::cluster(MPI_COMM_WORLD, mine, c.w.data() + first, c.local, meanshift::mpi::Strategy::Ring);
    return all_ranks(matches(c.ref, rp, first, count, "ring per-point + weights, serial", 1e-5));
}

// Every rank's result equal bit for bit (labels, modes, iterations) to `one` (the same ring run with
// one chunk per hop).
bool same_bits(const meanshift::mpi::DistributedResult& one, const meanshift::mpi::DistributedResult& r,
               const std::string& name)
{
    if (r.labels != one.labels || r.iterations != one.iterations || r.cluster_sizes != one.cluster_sizes)
        return fail(name + ": labels, iterations or cluster sizes differ from the one-chunk ring's");
    if (r.modes.rows() != one.modes.rows() || r.modes != one.modes)
        return fail(name + ": modes differ from the one-chunk ring's (by " +
                    std::to_string((r.modes - one.modes).cwiseAbs().maxCoeff()) + ")");
    if (r.centres != one.centres) return fail(name + ": centres differ from the one-chunk ring's");
    return true;
}

// Runs `call` (a ring run) with one chunk per hop and with `chunks` (detail::ring_chunks(), the
// internal hook; restored afterwards); checks that this rank's first block (`modes` modes of `row`
// doubles) goes in at least 2 chunks and that the results are the same bit for bit. Returns the
// check and the chunked run's result.
template <class F>
std::pair<bool, meanshift::mpi::DistributedResult> chunked_vs_one(const meanshift::mpi::detail::RingChunks& chunks,
                                                                  meanshift::Index modes, std::size_t row,
                                                                  const std::string& name, F&& call)
{
    auto& hook = meanshift::mpi::detail::ring_chunks();
    const meanshift::mpi::detail::RingChunks defaults = hook;
    meanshift::mpi::detail::RingChunks single;
    single.max_chunks = 1;
    hook = single;
    const auto one = call();
    hook = chunks;
    const auto r = call();
    hook = defaults;
    const meanshift::Index rows = meanshift::mpi::detail::ring_chunk_rows(modes, row, chunks);
    const meanshift::Index pieces = rows > 0 ? (modes + rows - 1) / rows : 0;
    std::printf("[rank %d] %s: %lld modes in %lld chunks of %lld\n", rank_, name.c_str(), static_cast<long long>(modes),
                static_cast<long long>(pieces), static_cast<long long>(rows));
    if (pieces < 2) return {fail(name + ": fewer than 2 chunks per hop"), r};
    return {same_bits(one, r, name), r};
}

// The pipelined ring (each hop's block in chunks, MPI_Isend / MPI_Irecv) with several chunks per hop,
// forced through the internal hook detail::ring_chunks(): serial with chunks of 7 modes (no alignment:
// its sums are per mode), openmp with chunks of 64 (the default granule, so its SIMD blocks of modes
// fall as in one call). Exact and cutoff 3, every point a seed; bin seeding; per-point H_i with
// weights. Each result equals the same run with one chunk per hop bit for bit, and one process's
// labels and cluster sizes (modes within 1e-5 on serial, 5e-3 on openmp, as test_ring). The default
// chunking on blocks of 4,096-6,145 modes (2-3 chunks of at least 2,048), and a rank that throws
// while chunks are in flight: every rank gets its error, no hang.
bool test_ring_chunks()
{
    using meanshift::mpi::detail::RingChunks;
    auto& hook = meanshift::mpi::detail::ring_chunks();
    const RingChunks defaults = hook;
    const meanshift::Index n = 601;
    const meanshift::MatrixF all = blobs(n);
    meanshift::Index first = 0, count = 0;
    share(n, first, count);
    const meanshift::MatrixF mine = all.middleRows(first, count);
    const Eigen::Ref<const meanshift::MatrixF> seeds(all);
    RingChunks tiny;  // serial: 7 modes per chunk, unaligned
    tiny.min_rows = 7;
    tiny.max_chunks = 1000;
    tiny.granule = 1;
    RingChunks aligned;  // openmp: 64 modes per chunk (the granule)
    aligned.min_rows = 64;
    aligned.max_chunks = 1000;
    for (const char* backend : {"serial", "openmp"})
        for (double cut : {std::numeric_limits<double>::infinity(), 3.0}) {
            const meanshift::Options opt = case_options(backend, cut);
            const bool serial = std::string(backend) == "serial";
            const meanshift::Result ref = meanshift::cluster(all, opt, &seeds);
            const std::string name = case_name(std::string("ring chunks ") + backend, cut);
            auto [ok, r] = chunked_vs_one(serial ? tiny : aligned, count, 5, name, [&] {
                return meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt, meanshift::mpi::Strategy::Ring);
            });
            if (!all_ranks(ok && matches(ref, r, first, count, name, serial ? 1e-5 : 5e-3))) return false;
        }
    // Bin seeding (no refinement, no data binning): the seeds' blocks in chunks of 7.
    meanshift::Options binned = bin_seeded();
    binned.backend = "serial";
    binned.bin_size = 0.25;  // enough seeds for several chunks per rank
    const meanshift::Result ref_bins = meanshift::cluster(all, binned);
    {
        meanshift::Index s_first = 0, s_count = 0;
        share(ref_bins.seed_count, s_first, s_count);  // the seeds' split over the ranks
        auto [ok, r] = chunked_vs_one(tiny, s_count, 5, "ring chunks bins", [&] {
            return meanshift::mpi::cluster(MPI_COMM_WORLD, mine, binned, meanshift::mpi::Strategy::Ring);
        });
        if (!all_ranks(ok && matches(ref_bins, r, first, count, "ring chunks bins", 1e-5))) return false;
    }
    // Per-point H_i with sample weights (3k doubles per mode), serial, cutoff 3.
    {
        const PerPointRing c = per_point_ring("serial", all, seeds, first, count);
        auto [ok, r] = chunked_vs_one(tiny, count, 6, "ring chunks per-point + weights", [&] {
            return meanshift::mpi::cluster(MPI_COMM_WORLD, mine, c.w.data() + first, c.local,
                                           meanshift::mpi::Strategy::Ring);
        });
        if (!all_ranks(ok && matches(c.ref, r, first, count, "ring chunks per-point + weights", 1e-5))) return false;
    }
    // The default chunking (at least 2,048 modes per chunk) on blocks of 4,096-6,145 modes, openmp,
    // cutoff 3.
    {
        const meanshift::Index big_n = 12289;
        const meanshift::MatrixF big = blobs(big_n);
        meanshift::Index b_first = 0, b_count = 0;
        share(big_n, b_first, b_count);
        const meanshift::MatrixF big_mine = big.middleRows(b_first, b_count);
        meanshift::Options opt = options();
        opt.backend = "openmp";
        opt.cutoff = 3.0;
        const Eigen::Ref<const meanshift::MatrixF> big_seeds(big);
        const meanshift::Result ref = meanshift::cluster(big, opt, &big_seeds);
        auto [ok, r] = chunked_vs_one(defaults, b_count, 5, "ring default chunks openmp cutoff 3", [&] {
            return meanshift::mpi::cluster(MPI_COMM_WORLD, big_mine, opt, meanshift::mpi::Strategy::Ring);
        });
        if (!all_ranks(ok && matches(ref, r, b_first, b_count, "ring default chunks openmp cutoff 3", 5e-3)))
            return false;
    }
    // Rank 1 throws in its sums at the second hop, its first chunk, while the other chunks are in
    // flight: every rank ends with its message, none waits for a chunk.
    meanshift::Options opt = options();
    opt.backend = "serial";
    opt.exact = true;
    hook = tiny;
    hook.fail_rank = 1;
    const bool failed =
        fails_everywhere([&] { meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt, meanshift::mpi::Strategy::Ring); },
                         "rank 1: ring strategy: failure injected", "a rank failing inside the pipelined ring");
    hook = defaults;
    return all_ranks(failed);
}

// Ring with opencl ranks: each rank's partial sums come from the OpenCL kernels of its step (float32
// sums, added across ranks in float64). One process's opencl labels and cluster sizes, modes within
// 5e-3 as for openmp above; exact and cutoff 3, every point a seed, also with several chunks per hop
// (bit for bit the one-chunk ring); per-point H_i with sample weights (each rank's log-weight shift
// brought to one process's). Skipped unless every rank has OpenCL.
bool test_ring_opencl()
{
    bool opencl = false;
    for (const auto& st : meanshift::list_backends()) opencl = opencl || (st.name == "opencl" && st.usable);
    if (!all_ranks(opencl)) {
        if (rank_ == 0) std::printf("the opencl backend is not usable on every rank: skipped\n");
        skipped_ = true;
        return true;
    }
    const meanshift::Index n = 601;
    const meanshift::MatrixF all = blobs(n);
    meanshift::Index first = 0, count = 0;
    share(n, first, count);
    const meanshift::MatrixF mine = all.middleRows(first, count);
    const Eigen::Ref<const meanshift::MatrixF> seeds(all);
    for (double cut : {std::numeric_limits<double>::infinity(), 3.0}) {
        const meanshift::Options opt = case_options("opencl", cut);
        const meanshift::Result ref = meanshift::cluster(all, opt, &seeds);
        const auto r = meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt, meanshift::mpi::Strategy::Ring);
        const std::string name = case_name("ring opencl", cut);
        if (!all_ranks(ring_matches(ref, r, first, count, name, 5e-3))) return false;
        // Pipelined in chunks of 64 modes (the granule): the kernels' query tiles are those of one
        // call, so the results are the one-chunk ring's bit for bit.
        meanshift::mpi::detail::RingChunks aligned;
        aligned.min_rows = 64;
        aligned.max_chunks = 1000;
        const bool same = chunked_vs_one(aligned, count, 5, name + " in chunks", [&] {
                              return meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt, meanshift::mpi::Strategy::Ring);
                          }).first;
        if (!all_ranks(same)) return false;
    }
    const PerPointRing c = per_point_ring("opencl", all, seeds, first, count);
    const auto rp =
        meanshift::mpi::cluster(MPI_COMM_WORLD, mine, c.w.data() + first, c.local, meanshift::mpi::Strategy::Ring);
    return all_ranks(matches(c.ref, rp, first, count, "ring opencl per-point + weights", 5e-3));
}

// Sample weights travel with the points: both strategies give one process's weighted labels, and
// the weights change the answer (a test that would pass with the weights dropped is no test).
bool test_weights()
{
    const meanshift::Index n = 1203;
    const meanshift::MatrixF all = blobs(n);
    std::vector<float> w(static_cast<std::size_t>(n));
    // Blob 1's points weigh 50x near its far side: its mode moves towards them.
    for (meanshift::Index i = 0; i < n; ++i) w[std::size_t(i)] = (i % 4 == 1 && all(i, 0) > 8.5f) ? 50.0f : 1.0f;
    w[7] = 0.0f;  // a zero weight is allowed
    meanshift::Options opt = options();
    opt.cutoff = 3.0;
    const Eigen::Ref<const meanshift::MatrixF> seeds(all);
    const meanshift::Result ref = meanshift::cluster(all, opt, w.data(), &seeds);
    const meanshift::Result plain = meanshift::cluster(all, opt, &seeds);
    const double moved = (ref.centres - plain.centres).cwiseAbs().maxCoeff();
    if (!(moved > 0.05)) return fail("the weights do not move a centre (" + std::to_string(moved) + ")");
    meanshift::Index first = 0, count = 0;
    share(n, first, count);
    const meanshift::MatrixF mine = all.middleRows(first, count);
    for (auto s : {meanshift::mpi::Strategy::ReplicatedPoints, meanshift::mpi::Strategy::DomainDecomposition,
                   meanshift::mpi::Strategy::Ring}) {
        const auto r = meanshift::mpi::cluster(MPI_COMM_WORLD, mine, w.data() + first, opt, s);
        if (r.strategy != s) return fail("weights: strategy");
        if (!matches(ref, r, first, count, std::string("weights, ") + meanshift::mpi::to_string(s), 5e-3)) return false;
    }
    // Weights on rank 0 only: the option check names them on every rank.
    return fails_everywhere(
        [&] { meanshift::mpi::cluster(MPI_COMM_WORLD, mine, rank_ == 0 ? w.data() + first : nullptr, opt); },
        "sample weights", "weights on one rank only");
}

// Kernel profiles: the flat profile (compact support) and von Mises-Fisher (unit vectors, every
// mode projected back onto the sphere) give one process's answer under every strategy; the ring
// moves the modes itself, so it must project them too.
bool test_profiles()
{
    const meanshift::Index n = 1202;
    const meanshift::MatrixF planar = blobs(n);
    meanshift::MatrixF sphere(n, 3);  // the blobs lifted onto the unit sphere
    for (meanshift::Index i = 0; i < n; ++i) {
        const float x = 0.08f * planar(i, 0), y = 0.08f * planar(i, 1), r = std::sqrt(x * x + y * y + 1.0f);
        sphere(i, 0) = x / r;
        sphere(i, 1) = y / r;
        sphere(i, 2) = 1.0f / r;
    }
    meanshift::Index first = 0, count = 0;
    share(n, first, count);
    struct Case {
        meanshift::KernelProfile kernel;
        double h;
        const meanshift::MatrixF* all;
    };
    for (const Case& c : {Case{meanshift::KernelProfile::Flat, 2.5, &planar},
                          Case{meanshift::KernelProfile::VonMisesFisher, 0.08, &sphere}}) {
        meanshift::Options opt = options();
        opt.kernel = c.kernel;
        opt.bandwidth = meanshift::Bandwidth::isotropic(c.h);
        const Eigen::Ref<const meanshift::MatrixF> seeds(*c.all);
        const meanshift::Result ref = meanshift::cluster(*c.all, opt, &seeds);
        if (ref.centres.rows() != 4)
            return fail(std::string(meanshift::profile_name(c.kernel)) + ": 4 clusters expected");
        const meanshift::MatrixF mine = c.all->middleRows(first, count);
        for (auto s : {meanshift::mpi::Strategy::ReplicatedPoints, meanshift::mpi::Strategy::DomainDecomposition,
                       meanshift::mpi::Strategy::Ring}) {
            const auto r = meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt, s);
            const std::string name =
                std::string(meanshift::profile_name(c.kernel)) + ", " + meanshift::mpi::to_string(s);
            if (r.strategy != s) return fail(name + ": strategy");
            if (!matches(ref, r, first, count, name, 5e-3 * c.h)) return false;
            if (c.kernel == meanshift::KernelProfile::VonMisesFisher)
                for (meanshift::Index i = 0; i < count; ++i)
                    if (std::abs(r.modes.row(i).norm() - 1.0f) > 1e-5f) return fail(name + ": a mode off the sphere");
        }
    }
    return true;
}

// Per-point diagonal H_i: each rank passes its rows' standard deviations; both strategies give one
// process's labels (the domain halo uses the largest sigma, the shifts are measured in one process's
// units). Sec. IV's model runs replicated; the decomposition refuses it on every rank.
bool test_per_point()
{
    const meanshift::Index n = 1202;
    const meanshift::MatrixF all = blobs(n);
    meanshift::MatrixD H(n, 2);
    for (meanshift::Index i = 0; i < n; ++i) {
        const double s = i % 4 == 0 ? 0.5 : 1.0 + 0.2 * static_cast<double>(i % 3);  // sigmas differ 2.8x
        H(i, 0) = s;
        H(i, 1) = 1.3 * s;
    }
    meanshift::Options opt = options();
    opt.cutoff = 3.0;
    meanshift::Options opt_all = opt;
    opt_all.bandwidth = meanshift::Bandwidth::per_point(H);
    const Eigen::Ref<const meanshift::MatrixF> seeds(all);
    const meanshift::Result ref = meanshift::cluster(all, opt_all, &seeds);
    meanshift::Index first = 0, count = 0;
    share(n, first, count);
    const meanshift::MatrixF mine = all.middleRows(first, count);
    meanshift::Options opt_mine = opt;
    opt_mine.bandwidth = meanshift::Bandwidth::per_point(H.middleRows(first, count));
    for (auto s : {meanshift::mpi::Strategy::ReplicatedPoints, meanshift::mpi::Strategy::DomainDecomposition,
                   meanshift::mpi::Strategy::Ring}) {
        const auto r = meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt_mine, s);
        if (r.strategy != s) return fail("per-point: strategy");
        if (!matches(ref, r, first, count, std::string("per-point, ") + meanshift::mpi::to_string(s), 5e-3))
            return false;
    }
    // A rank passing the wrong number of rows of H: named on every rank.
    meanshift::Options wrong = opt;
    wrong.bandwidth = meanshift::Bandwidth::per_point(H.topRows(count + (rank_ == 1 ? 1 : 0)));
    if (size_ > 1 && !fails_everywhere([&] { meanshift::mpi::cluster(MPI_COMM_WORLD, mine, wrong); },
                                       "one row per local point", "per-point rows != local rows"))
        return false;
    // Sec. IV, H_i = diag(s_1 e^{y_2}, s_2): replicated equals one process; the decomposition refuses.
    meanshift::MatrixF shifted = all;
    shifted.col(1) = shifted.col(1) * 0.1f;  // keep e^{y_2} moderate
    meanshift::Options ex = options();
    ex.bandwidth = meanshift::Bandwidth::exponential_last({0.5, 0.3});
    const Eigen::Ref<const meanshift::MatrixF> sseeds(shifted);
    const meanshift::Result eref = meanshift::cluster(shifted, ex, &sseeds);
    const meanshift::MatrixF smine = shifted.middleRows(first, count);
    const auto e = meanshift::mpi::cluster(MPI_COMM_WORLD, smine, ex);
    if (e.strategy != meanshift::mpi::Strategy::ReplicatedPoints) return fail("exponential-last: Auto must replicate");
    if (e.cluster_sizes != eref.cluster_sizes) return fail("exponential-last: cluster sizes differ");
    return fails_everywhere(
               [&] {
                   meanshift::mpi::cluster(MPI_COMM_WORLD, smine, ex, meanshift::mpi::Strategy::DomainDecomposition);
               },
               "exponential-last", "exponential-last with the domain decomposition") &&
           fails_everywhere([&] { meanshift::mpi::cluster(MPI_COMM_WORLD, smine, ex, meanshift::mpi::Strategy::Ring); },
                            "exponential-last", "exponential-last with the ring");
}

// Bin seeding: the bins counted on every rank and merged give one process's seeds; without the
// boundary refinement every point takes its bin's seed's label, as one process does.
bool test_bins()
{
    const meanshift::Index n = 2401;
    const meanshift::MatrixF all = blobs(n);
    meanshift::Options opt = bin_seeded();
    opt.min_bin_count = 3;  // some bins take the nearest seed's label
    const meanshift::Result ref = meanshift::cluster(all, opt);
    meanshift::Index first = 0, count = 0;
    share(n, first, count);
    const meanshift::MatrixF mine = all.middleRows(first, count);
    for (auto s : {meanshift::mpi::Strategy::ReplicatedPoints, meanshift::mpi::Strategy::DomainDecomposition}) {
        const auto r = meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt, s);
        const std::string name = std::string("bins, ") + meanshift::mpi::to_string(s);
        if (r.strategy != s) return fail(name + ": strategy");
        if (r.seed_count != ref.seed_count)
            return fail(name + ": " + std::to_string(r.seed_count) + " seeds, one process " +
                        std::to_string(ref.seed_count));
        if (!matches(ref, r, first, count, name, 5e-3)) return false;
    }
    // min_bin_count above every bin: no seed, a named error on every rank.
    meanshift::Options none = opt;
    none.min_bin_count = n + 1;
    return fails_everywhere([&] { meanshift::mpi::cluster(MPI_COMM_WORLD, mine, none); }, "no seeds",
                            "min_bin_count above every bin");
}

// Boundary refinement (the default): on blobs that touch, the points of bins on a basin boundary are
// re-seeded on fine bins across the ranks; both strategies stop a fine seed as one process does (as
// soon as it enters a bin off the boundaries), so the modes are one process's. The seed count, the
// cluster count and all but a few labels (float32 positions near a bin edge) are one process's, and
// far more of them than without the refinement.
bool test_refine()
{
    const meanshift::Index n = 6000;
    std::mt19937 rng(7);
    std::normal_distribution<float> noise(0.0f, 1.6f);
    const float centres[3][2] = {{0, 0}, {5, 1}, {2, 5}};
    meanshift::MatrixF all(n, 2);
    for (meanshift::Index i = 0; i < n; ++i)
        for (int d = 0; d < 2; ++d) all(i, d) = centres[i % 3][d] + noise(rng);
    meanshift::Options opt = options();
    opt.seeding = meanshift::Seeding::Bins;
    opt.data_bin_size = -1;  // off: the distributed ascents run on the points
    opt.cutoff = 3;
    const meanshift::Result ref = meanshift::cluster(all, opt);
    meanshift::Options plain = opt;
    plain.refine_boundaries = false;
    const meanshift::Result unrefined = meanshift::cluster(all, plain);
    meanshift::Index first = 0, count = 0;
    share(n, first, count);
    const meanshift::MatrixF mine = all.middleRows(first, count);
    // Points whose label differs from ref's after mapping each cluster to the ref cluster most of its
    // points have (cluster numbers follow the sizes, which the refinement changes).
    auto differing = [&](const std::vector<int>& labels) {
        std::vector<int> all_labels(static_cast<std::size_t>(n));
        std::vector<int> counts(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
        for (int r = 0; r < size_; ++r) {
            meanshift::Index f = 0, c = 0;
            share(n, f, c, r);
            counts[std::size_t(r)] = static_cast<int>(c);
            displs[std::size_t(r)] = static_cast<int>(f);
        }
        MPI_Allgatherv(labels.data(), static_cast<int>(count), MPI_INT, all_labels.data(), counts.data(), displs.data(),
                       MPI_INT, MPI_COMM_WORLD);
        std::map<std::pair<int, int>, long long> pairs;
        for (meanshift::Index i = 0; i < n; ++i) ++pairs[{all_labels[std::size_t(i)], ref.labels[std::size_t(i)]}];
        std::map<int, std::pair<long long, int>> best;  // label -> (points, ref label)
        for (const auto& [lr, c] : pairs)
            if (c > best[lr.first].first) best[lr.first] = {c, lr.second};
        long long d = 0;
        for (meanshift::Index i = 0; i < n; ++i)
            d += best[all_labels[std::size_t(i)]].second != ref.labels[std::size_t(i)];
        return d;
    };
    std::vector<int> unrefined_mine(unrefined.labels.begin() + first, unrefined.labels.begin() + first + count);
    const long long without = differing(unrefined_mine);
    for (auto s : {meanshift::mpi::Strategy::ReplicatedPoints, meanshift::mpi::Strategy::DomainDecomposition}) {
        const auto r = meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt, s);
        const std::string name = std::string("refine, ") + meanshift::mpi::to_string(s);
        const long long d = differing(r.labels);
        // Modes: a fine seed that stops in a settled bin reports that bin's seed's mode, as one process.
        long long far = 0;
        for (meanshift::Index i = 0; i < count; ++i)
            far += (r.modes.row(i) - ref.modes.row(first + i)).cwiseAbs().maxCoeff() > 1e-3;
        MPI_Allreduce(MPI_IN_PLACE, &far, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        std::printf("[rank %d] %s: %lld seeds (one process %lld), %zu clusters (%zu), %lld labels differ "
                    "(%lld without the refinement), %lld modes off by > 1e-3; %s\n",
                    rank_, name.c_str(), static_cast<long long>(r.seed_count), static_cast<long long>(ref.seed_count),
                    r.cluster_sizes.size(), ref.cluster_sizes.size(), d, without, far, r.seeding.c_str());
        if (r.seeding.find("boundary bins re-seeded") == std::string::npos) return fail(name + ": no refinement ran");
        if (r.seed_count != ref.seed_count) return fail(name + ": seed count");
        if (r.cluster_sizes.size() != ref.cluster_sizes.size()) return fail(name + ": cluster count");
        if (without < 20) return fail(name + ": the data do not exercise the refinement");
        if (d * 10 > without) return fail(name + ": too many labels differ from one process's");
        if (far > 0) return fail(name + ": the early stop must give one process's modes");
    }
    return true;
}

// Data binning (Options::data_bin_size = 0, automatic, the default): the ascents run on the merged
// cells' means weighted by their counts (× sample weights), as in one process; labels, cluster sizes
// and centres equal one process's default run, with and without sample weights.
bool test_data_bins()
{
    const meanshift::Index n = 20000;
    const meanshift::MatrixF all = blobs(n);
    std::vector<float> w(static_cast<std::size_t>(n));
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0.5f, 1.5f);
    for (float& v : w) v = u(rng);
    meanshift::Options opt = options();
    opt.seeding = meanshift::Seeding::Bins;
    opt.cutoff = 3;
    meanshift::Index first = 0, count = 0;
    share(n, first, count);
    const meanshift::MatrixF mine = all.middleRows(first, count);
    for (const bool weighted : {false, true}) {
        const meanshift::Result ref = meanshift::cluster(all, opt, weighted ? w.data() : nullptr);
        for (auto s : {meanshift::mpi::Strategy::ReplicatedPoints, meanshift::mpi::Strategy::DomainDecomposition,
                       meanshift::mpi::Strategy::Ring}) {
            const auto r = meanshift::mpi::cluster(MPI_COMM_WORLD, mine, weighted ? w.data() + first : nullptr, opt, s);
            const std::string name =
                std::string("data bins, ") + (weighted ? "weighted, " : "") + meanshift::mpi::to_string(s);
            std::printf("[rank %d] %s: %s | one process: %s\n", rank_, name.c_str(), r.seeding.c_str(),
                        ref.seeding.c_str());
            if (r.seeding.find("data binned") == std::string::npos ||
                ref.seeding.find("data binned") == std::string::npos)
                return fail(name + ": the data were not binned");
            if (r.cluster_sizes != ref.cluster_sizes) return fail(name + ": cluster sizes differ");
            for (meanshift::Index i = 0; i < count; ++i)
                if (r.labels[std::size_t(i)] != ref.labels[std::size_t(first + i)])
                    return fail(name + ": label differs at row " + std::to_string(first + i));
            const double dc = (r.centres - ref.centres).cwiseAbs().maxCoeff();
            if (!(dc <= 1e-3)) return fail(name + ": centres differ by " + std::to_string(dc));
        }
    }
    return true;
}

// Ranks on one node share it: with threads left at 0 each openmp rank takes its share of the CPUs it
// may use (at least 1); an explicit thread count is kept.
bool test_placement()
{
    bool has_openmp = false;
    for (const auto& b : meanshift::list_backends()) has_openmp |= b.name == "openmp" && b.usable;
    if (!has_openmp) return true;
    const meanshift::MatrixF all = blobs(90);
    meanshift::Index first = 0, count = 0;
    share(90, first, count);
    const meanshift::MatrixF mine = all.middleRows(first, count);
    meanshift::Options opt = options();
    opt.backend = "openmp";
    const auto r = meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt);
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof(set), &set);
    const int share_of_cpus = std::max(1, CPU_COUNT(&set) / size_);
    std::printf("[rank %d] placement: local rank %d of %d, %d openmp threads (CPUs here %d)\n", rank_, r.local_rank,
                r.local_ranks, r.topology.ppus, CPU_COUNT(&set));
    if (r.local_ranks != size_) return fail("all ranks of this test run on one node");
    if (r.topology.ppus != share_of_cpus)
        return fail("threads " + std::to_string(r.topology.ppus) + ", expected " + std::to_string(share_of_cpus));
    opt.backend_options.threads = 2;
    if (meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt).topology.ppus != 2) return fail("explicit threads not kept");
    // OpenCL: with two or more GPUs the node's ranks take them in turn (a CPU device is skipped);
    // one GPU or none stays with the backend's default.
    auto dev = [](const char* kind, const char* spec) {
        meanshift::DeviceInfo d;
        d.kind = kind;
        d.spec = spec;
        return d;
    };
    const std::vector<meanshift::DeviceInfo> two = {dev("cpu", "0:0"), dev("gpu", "1:0"), dev("gpu", "1:1")};
    using meanshift::mpi::detail::gpu_of_rank;
    if (gpu_of_rank(two, 0) != 1 || gpu_of_rank(two, 1) != 2 || gpu_of_rank(two, 2) != 1)
        return fail("opencl placement over two GPUs");
    if (gpu_of_rank({dev("cpu", "0:0"), dev("gpu", "1:0")}, 1) != -1 || gpu_of_rank({dev("cpu", "0:0")}, 0) != -1)
        return fail("opencl placement with one GPU or none must keep the default");
    return true;
}

// Every rank must catch DistributedError naming rank 1 and containing `needle`.
bool expect_error(meanshift::MatrixF mine, const meanshift::Options& opt, const std::string& needle)
{
    try {
        meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt);
    } catch (const meanshift::mpi::DistributedError& e) {
        const std::string what = e.what();
        std::printf("[rank %d] caught as expected: %s (%s)\n", rank_, what.c_str(), e.kind().c_str());
        if (e.rank() != 1 || what.rfind("rank 1: ", 0) != 0) return fail("wrong rank in: " + what);
        if (what.find(needle) == std::string::npos) return fail("'" + needle + "' not in: " + what);
        return true;
    }
    return fail("no exception");
}

}  // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    const std::string mode = argc > 1 ? argv[1] : "equal";
    bool ok = true;
    try {
        const meanshift::Index n = 90;
        meanshift::Index first = 0, count = 0;
        share(n, first, count);
        meanshift::MatrixF mine = blobs(n).middleRows(first, count);
        meanshift::Options opt = options();
        if (size_ < 2 && mode != "equal") {
            std::printf("needs at least 2 ranks\n");
            ok = false;
        } else if (mode == "equal") {
            ok = test_equal(meanshift::GroupingMethod::Sequential) &&
                 test_equal(meanshift::GroupingMethod::ConnectedComponents) && test_placement();
        } else if (mode == "domain") {
            ok = test_domain();
        } else if (mode == "weights") {
            ok = test_weights();
        } else if (mode == "ring") {
            ok = test_ring();
        } else if (mode == "ring_chunks") {
            ok = test_ring_chunks();
        } else if (mode == "ring_opencl") {
            ok = test_ring_opencl();
        } else if (mode == "perpoint") {
            ok = test_per_point();
        } else if (mode == "profiles") {
            ok = test_profiles();
        } else if (mode == "bins") {
            ok = test_bins();
        } else if (mode == "refine") {
            ok = test_refine();
        } else if (mode == "databins") {
            ok = test_data_bins();
        } else if (mode == "nan") {
            if (rank_ == 1) mine(0, 1) = std::nanf("");
            ok = expect_error(mine, opt, "non-finite");
        } else if (mode == "backend") {
            if (rank_ == 1) opt.backend = "no-such-backend";
            ok = expect_error(mine, opt, "no-such-backend");
        } else if (mode == "mismatch") {
            if (rank_ == 1) opt.bandwidth = meanshift::Bandwidth::isotropic(2.0);
            ok = expect_error(mine, opt, "bandwidth");
        } else if (mode == "throw-uncaught") {
            if (rank_ == 1) mine(0, 0) = std::nanf("");
            meanshift::mpi::cluster(MPI_COMM_WORLD, mine, opt);  // throws on every rank
            ok = true;
        } else {
            std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
            ok = false;
        }
    } catch (const std::exception& e) {
        if (mode == "throw-uncaught") {
            std::fprintf(stderr, "[rank %d] error: %s\n", rank_, e.what());
            MPI_Finalize();
            return 3;  // every rank: non-zero
        }
        ok = fail(std::string("unexpected exception: ") + e.what());
    }
    int mine_ok = ok ? 1 : 0, all_ok = 0;
    MPI_Allreduce(&mine_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank_ == 0)
        std::printf("%s: %s on %d ranks\n", mode.c_str(), !all_ok ? "FAILED" : skipped_ ? "skipped" : "passed", size_);
    MPI_Finalize();
    return all_ok ? (skipped_ ? 77 : 0) : 1;
}
