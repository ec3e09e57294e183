// meanshift cluster IN.{csv,npy} (--bandwidth H|RULE | --bandwidths h1,..,hk | --per-point-bandwidths F) -o OUT
#include "cli_options.hpp"
#include "commands.hpp"
#include "io_matrix.hpp"
#include "memory.hpp"
#include "output_files.hpp"
#include "progress.hpp"
#include "stage_report.hpp"

#include <meanshift/meanshift.hpp>
#include <meanshift/registry.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#ifdef MEANSHIFT_CLI_MPI
#include <meanshift/mpi.hpp>
#endif

namespace mscli {
namespace {

struct ClusterArgs {
    std::string input;
    std::string output;
    std::string modes_output;
    std::string bandwidth;
    std::vector<double> bandwidths;
    std::string per_point;
    RunOptions run;
    ConvergenceOptions conv;
    ApproximationOptions approx;
    ProfileOptions profile;
    MemoryOption memory;
    bool json = false;  // --json: the run's stages as one JSON object on the last line
    std::string mpi_strategy = "auto";  // under mpirun only (docs/mpi.md)
};

meanshift::Bandwidth make_bandwidth(const ClusterArgs& a, const meanshift::MatrixF& data, std::string& description)
{
    const meanshift::Index n = data.rows();
    const int k = static_cast<int>(data.cols());
    if (!a.per_point.empty()) {
        meanshift::MatrixD h = read_matrix(a.per_point);
        if (h.rows() != n || h.cols() != k)
            throw meanshift::InvalidArgument(a.per_point + ": --per-point-bandwidths must be " + std::to_string(n) +
                                             " x " + std::to_string(k) +
                                             " (one row of standard deviations per "
                                             "point), got " +
                                             std::to_string(h.rows()) + " x " + std::to_string(h.cols()));
        description = "per point, from " + a.per_point;
        return meanshift::Bandwidth::per_point(std::move(h));
    }
    if (!a.bandwidths.empty()) {
        if (static_cast<int>(a.bandwidths.size()) != k)
            throw meanshift::InvalidArgument("--bandwidths has " + std::to_string(a.bandwidths.size()) +
                                             " values but the data have " + std::to_string(k) + " dimensions");
        description = "per dimension (given)";
        return meanshift::Bandwidth::diagonal(a.bandwidths);
    }
    BandwidthSpec spec;
    BandwidthSpec::parse(a.bandwidth, spec);  // the option's validator already accepted it
    // The adaptive rule's k-NN search runs on the run's backend (a GPU's brute force under cuda/opencl).
    meanshift::Options run;
    a.run.apply(run);
    spec.adaptive.backend = run.backend;
    spec.adaptive.backend_options = run.backend_options;
    try {
        return spec.resolve(data, description);
    } catch (const meanshift::InvalidArgument& e) {
        throw meanshift::InvalidArgument("--bandwidth " + a.bandwidth + ": " + e.what());
    }
}

#ifdef MEANSHIFT_CLI_MPI
// True when main() initialised MPI (the tool was started by mpirun/mpiexec; main.cpp).
bool under_mpi()
{
    int initialised = 0, finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    return initialised && !finalised;
}

// What rank 0 opens before the ranks share the work: the output files, and without slices the
// input and the bandwidth (with slices, the NPY file's layout).
struct MpiInput {
    bool slices = false;  // every rank reads its own rows of an NPY input
    std::string centres_path;
    std::optional<OutputFiles> files;
    std::size_t labels_slot = 0, centres_slot = 0, modes_slot = 0;
    meanshift::MatrixF data;
    std::string bandwidth_description;
    meanshift::Bandwidth bandwidth;
    NpyLayout layout;
};

// Collective: rank 0 opens the files (and reads what the ranks do not read themselves); every rank
// learns whether it failed (meanshift::mpi::agree).
void open_mpi_input(const ClusterArgs& a, MPI_Comm comm, int rank, int size, MpiInput& in)
{
    const bool slices = in.slices;
    const std::string& centres_path = in.centres_path;
    std::optional<OutputFiles>& files = in.files;
    std::exception_ptr err;
    if (rank == 0) {
        try {
            files.emplace();
            files->add_input(a.input, "the input");
            if (!a.per_point.empty()) files->add_input(a.per_point, "the --per-point-bandwidths file");
            in.labels_slot = files->add_output(a.output, "-o");
            in.centres_slot = files->add_output(centres_path, "the centres file named after -o " + a.output);
            in.modes_slot = a.modes_output.empty() ? 0 : files->add_output(a.modes_output, "--modes");
            if (slices) {
                in.layout = read_npy_layout(a.input);
            } else {
                in.data = to_float(read_matrix(a.input), a.input);
                in.bandwidth = make_bandwidth(a, in.data, in.bandwidth_description);
                if (!in.bandwidth.shared() && in.data.rows() < size)
                    throw meanshift::InvalidArgument("per-point bandwidths under mpirun need at least one point per "
                                                     "rank: " +
                                                     std::to_string(in.data.rows()) + " points, " +
                                                     std::to_string(size) + " ranks");
            }
        } catch (...) {
            err = std::current_exception();
        }
    }
    meanshift::mpi::agree(comm, err);
}

// Collective: rank 0 encodes the labels, centres and modes into its files (published after the
// summary, as in run_cluster: a summary rank 0 cannot write leaves no outputs and exit status 1,
// docs/cli.md); every rank learns whether it failed.
void write_mpi_outputs(const ClusterArgs& a, MPI_Comm comm, int rank, MpiInput& in, const meanshift::MatrixF& centres,
                       const std::vector<int>& labels, const meanshift::MatrixF& modes, MatrixFormat out_format,
                       MatrixFormat modes_format)
{
    std::optional<OutputFiles>& files = in.files;
    const std::string& centres_path = in.centres_path;
    std::exception_ptr err;
    if (rank == 0) {
        try {
            files->set(in.labels_slot, labels_bytes(out_format, labels));
            files->set(in.centres_slot, matrix_bytes(format_of(centres_path), centres));
            if (!a.modes_output.empty()) files->set(in.modes_slot, matrix_bytes(modes_format, modes));
            files->prepare();
        } catch (...) {
            err = std::current_exception();
        }
    }
    meanshift::mpi::agree(comm, err);
}

// Rank 0's summary of the run: the input's distribution, the strategy, the clusters, the time of
// each phase (`ascent_max`: the slowest rank's ascent; `pairs`: all ranks' pair interactions).
void print_mpi_summary(const ClusterArgs& a, const MpiInput& in, const meanshift::mpi::DistributedResult& r,
                       long long n, int k, int size, int mine, double ascent_max, double pairs, int iterations,
                       long long held_max)
{
    const bool slices = in.slices;
    const std::string& bandwidth_description = in.bandwidth_description;
    const std::string& centres_path = in.centres_path;
    const meanshift::mpi::DistributedTiming& t = r.distributed;
    std::printf("points      %lld x %d on %d MPI ranks (rank 0: %lld rows; %s)\n", n, k, size,
                static_cast<long long>(mine),
                slices ? "each rank read its own rows of the NPY file" : "read by rank 0 and scattered");
    std::printf("bandwidth   %s\n", bandwidth_description.c_str());
    std::printf("backend     %s (%s) on rank 0\n", r.backend.c_str(), r.topology.to_string().c_str());
    if (r.strategy == meanshift::mpi::Strategy::DomainDecomposition)
        std::printf("method      domain decomposition (slabs, halo = cutoff): at most %lld points on a rank, "
                    "%lld mode hand-overs; search %s\n",
                    held_max, static_cast<long long>(r.modes_migrated), r.search.c_str());
    else if (r.strategy == meanshift::mpi::Strategy::Ring)
        std::printf("method      ring (points stay on their rank, modes travel with their partial sums); search %s\n",
                    r.search.c_str());
    else
        std::printf("method      replicated points, modes split; search %s\n", r.search.c_str());
    std::printf("seeding     %s\n", r.seeding.c_str());
    std::printf("clusters    %zu (largest:", r.cluster_sizes.size());
    for (std::size_t c = 0; c < r.cluster_sizes.size() && c < 8; ++c)
        std::printf(" %lld", static_cast<long long>(r.cluster_sizes[c]));
    std::printf("%s)\n", r.cluster_sizes.size() > 8 ? " ..." : "");
    std::printf("iterations  %d\n", iterations);
    const bool ring = r.strategy == meanshift::mpi::Strategy::Ring;
    const bool domain = r.strategy == meanshift::mpi::Strategy::DomainDecomposition || ring;
    std::printf("time        %.3f s on rank 0 (%s %.3f, binning %.3f, ascent %.3f [slowest rank %.3f], %s %.3f, "
                "gather %.3f, group %.3f, broadcast %.3f, label %.3f)\n",
                t.seconds_total,
                ring     ? "points moved"
                : domain ? "points to slabs"
                         : "allgather",
                t.seconds_allgather, t.seconds_binning, t.seconds_ascent, ascent_max,
                ring     ? "of which ring passes"
                : domain ? "of which hand-overs"
                         : "wait",
                domain ? t.seconds_migrate : t.seconds_wait, t.seconds_gather, t.seconds_group, t.seconds_broadcast,
                t.seconds_label);
    std::printf("pairs/s     %s (all ranks, over the slowest ascent)\n",
                sci(ascent_max > 0 ? pairs / ascent_max : 0).c_str());
    std::printf("labels  ->  %s\ncentres ->  %s\n", escape_for_terminal(a.output).c_str(),
                escape_for_terminal(centres_path).c_str());
}

// `mpirun -np R meanshift cluster ...` (docs/mpi.md): rank 0 reads the input, resolves the bandwidth
// and scatters the rows; meanshift::mpi::cluster() runs on every rank (replicated points, modes
// split); rank 0 gathers the labels (and modes) and writes every output; the other ranks write and
// print nothing. Every failure ends every rank (meanshift::mpi::agree) with rank 0 reporting it.
void run_cluster_mpi(const ClusterArgs& a)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const MatrixFormat out_format = format_of(a.output);
    const MatrixFormat modes_format = a.modes_output.empty() ? out_format : format_of(a.modes_output);
    format_of(a.input);
    const std::string centres_path = sibling_path(a.output, "centres");

    // Every rank reads its own rows when it can: an NPY input with a numeric bandwidth (a rule such
    // as auto or scott needs all the data, so then rank 0 reads everything and scatters the rows).
    BandwidthSpec spec;
    BandwidthSpec::parse(a.bandwidth, spec);
    const bool slices = format_of(a.input) == MatrixFormat::Npy && a.per_point.empty() &&
                        (!a.bandwidths.empty() || spec.kind == BandwidthSpec::Kind::Number);
    MpiInput in;
    in.slices = slices;
    in.centres_path = centres_path;
    open_mpi_input(a, comm, rank, size, in);
    std::optional<OutputFiles>& files = in.files;
    const meanshift::MatrixF& data = in.data;
    std::string& bandwidth_description = in.bandwidth_description;
    meanshift::Bandwidth& bandwidth = in.bandwidth;
    NpyLayout& layout = in.layout;
    std::exception_ptr err;

    // Shape and bandwidth from rank 0; the other options come from the same command line.
    long long shape[3] = {static_cast<long long>(slices ? layout.rows : data.rows()),
                          static_cast<long long>(slices ? layout.cols : data.cols()),
                          bandwidth.shared() ? static_cast<long long>(bandwidth.parameters().size()) : -1};
    MPI_Bcast(shape, 3, MPI_LONG_LONG, 0, comm);
    const long long n = shape[0];
    const int k = static_cast<int>(shape[1]);
    const bool per_point = shape[2] < 0;  // rows of H_i, scattered with the points below
    std::vector<double> h = bandwidth.parameters();
    if (!slices && !per_point) {
        h.resize(static_cast<std::size_t>(shape[2]));
        MPI_Bcast(h.data(), static_cast<int>(h.size()), MPI_DOUBLE, 0, comm);
    }
    meanshift::Options opt;
    a.run.apply(opt);
    a.conv.apply(opt);
    a.approx.apply(opt);
    a.profile.apply(opt);

    // Contiguous blocks of rows, the first n % R ranks one row more.
    std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
    for (int r = 0, at = 0; r < size; ++r) {
        counts[static_cast<std::size_t>(r)] = static_cast<int>(n / size + (r < n % size ? 1 : 0));
        displs[static_cast<std::size_t>(r)] = at;
        at += counts[static_cast<std::size_t>(r)];
    }
    const int mine = counts[static_cast<std::size_t>(rank)];
    meanshift::MatrixF local(mine, k);
    MPI_Datatype row;
    MPI_Type_contiguous(k, MPI_FLOAT, &row);
    MPI_Type_commit(&row);
    if (slices) {
        // Every rank its own rows (the other ranks read the header too: one small read); the
        // bandwidth from the command line (a number, or one per dimension), checked against k.
        err = nullptr;
        try {
            if (rank != 0) layout = read_npy_layout(a.input);
            local = to_float(read_npy_rows(a.input, layout, displs[static_cast<std::size_t>(rank)], mine), a.input);
            bandwidth = make_bandwidth(a, local, bandwidth_description);
        } catch (...) {
            err = std::current_exception();
        }
        try {
            meanshift::mpi::agree(comm, err);
        } catch (...) {
            MPI_Type_free(&row);
            throw;
        }
        h = bandwidth.parameters();
    } else {
        MPI_Scatterv(rank == 0 ? data.data() : nullptr, counts.data(), displs.data(), row, local.data(), mine, row, 0,
                     comm);
    }
    if (per_point) {
        MPI_Datatype row_d;
        MPI_Type_contiguous(k, MPI_DOUBLE, &row_d);
        MPI_Type_commit(&row_d);
        meanshift::MatrixD local_h(mine, k);
        MPI_Scatterv(rank == 0 ? bandwidth.per_point_values().data() : nullptr, counts.data(), displs.data(), row_d,
                     local_h.data(), mine, row_d, 0, comm);
        MPI_Type_free(&row_d);
        opt.bandwidth = meanshift::Bandwidth::per_point(std::move(local_h));
    } else {
        opt.bandwidth = h.size() == 1 ? meanshift::Bandwidth::isotropic(h[0]) : meanshift::Bandwidth::diagonal(h);
    }

    meanshift::mpi::DistributedResult r;
    try {
        const meanshift::mpi::Strategy strategy =
            a.mpi_strategy == "domain"       ? meanshift::mpi::Strategy::DomainDecomposition
            : a.mpi_strategy == "ring"       ? meanshift::mpi::Strategy::Ring
            : a.mpi_strategy == "replicated" ? meanshift::mpi::Strategy::ReplicatedPoints
                                             : meanshift::mpi::Strategy::Auto;
        r = meanshift::mpi::cluster(comm, local, opt, strategy);
    } catch (...) {
        MPI_Type_free(&row);
        throw;
    }

    std::vector<int> labels(rank == 0 ? static_cast<std::size_t>(n) : 0);
    MPI_Gatherv(r.labels.data(), mine, MPI_INT, labels.data(), counts.data(), displs.data(), MPI_INT, 0, comm);
    meanshift::MatrixF modes(rank == 0 && !a.modes_output.empty() ? n : 0, k);
    if (!a.modes_output.empty())
        MPI_Gatherv(r.modes.data(), mine, row, modes.data(), counts.data(), displs.data(), row, 0, comm);
    MPI_Type_free(&row);
    // The slowest rank's ascent (the run's critical path) and the sum of the pairs.
    double ascent_max = 0, pairs = 0;
    MPI_Reduce(&r.distributed.seconds_ascent, &ascent_max, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    MPI_Reduce(&r.timing.pair_interactions, &pairs, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    int iterations = 0;
    MPI_Reduce(&r.timing.iterations, &iterations, 1, MPI_INT, MPI_MAX, 0, comm);

    write_mpi_outputs(a, comm, rank, in, r.centres, labels, modes, out_format, modes_format);
    long long held_max = 0, held = static_cast<long long>(r.local_points_held);
    MPI_Reduce(&held, &held_max, 1, MPI_LONG_LONG, MPI_MAX, 0, comm);
    if (rank != 0) return;
    print_mpi_summary(a, in, r, n, k, size, mine, ascent_max, pairs, iterations, held_max);
    if (!a.modes_output.empty()) std::printf("modes   ->  %s\n", escape_for_terminal(a.modes_output).c_str());
    try {
        flush_stdout();
    } catch (const meanshift::IoError& e) {
        throw meanshift::IoError(std::string(e.what()) + "; no output file was created or changed");
    }
    files->publish();
}
#endif

// Every file of the run: inputs, then outputs, checked against each other before any work.
void run_cluster(const ClusterArgs& a, Mode mode)
{
    const MatrixFormat out_format = format_of(a.output);  // reject a bad output name before the (long) run
    const MatrixFormat modes_format = a.modes_output.empty() ? out_format : format_of(a.modes_output);
    format_of(a.input);
    if (!a.per_point.empty()) format_of(a.per_point);
    if (mode == Mode::CheckOnly) return;
#ifdef MEANSHIFT_CLI_MPI
    if (under_mpi()) return run_cluster_mpi(a);
#endif

    const std::string centres_path = sibling_path(a.output, "centres");
    OutputFiles files;
    files.add_input(a.input, "the input");
    if (!a.per_point.empty()) files.add_input(a.per_point, "the --per-point-bandwidths file");
    const std::size_t labels_slot = files.add_output(a.output, "-o");
    const std::size_t centres_slot = files.add_output(centres_path, "the centres file named after -o " + a.output);
    const std::size_t modes_slot = a.modes_output.empty() ? 0 : files.add_output(a.modes_output, "--modes");

    // The memory the run will need, before the data are read: an NPY header gives n and k; CSV text
    // takes up to ~10 bytes per byte while it is parsed, and n and k are checked once it is.
    const double per_point_bytes = a.per_point.empty() ? 0 : file_size(a.per_point);
    const double input_bytes = file_size(a.input) + per_point_bytes;
    const auto check_memory = [&](double rows, double cols, double file_bytes) {
        const double per_point_h = a.per_point.empty() ? 0 : 16 * rows * cols;  // H_i as read and prepared
        a.memory.check(cluster_memory(rows, cols, file_bytes) + per_point_h,
                       a.input + ": clustering " + sci(rows) + " points of " + sci(cols) + " dimensions",
                       sci(kClusterBytesPerPoint) + " + " + sci(kClusterBytesPerValue) + " x k bytes per point" +
                           (a.per_point.empty() ? "" : " + 16 x k for the per-point bandwidths") +
                           (file_bytes > 0 ? " and the " + format_bytes(file_bytes) + " of input files" : ""),
                       "cluster a subset or a sample of the points");
    };
    if (format_of(a.input) == MatrixFormat::Npy) {
        const NpyLayout layout = read_npy_layout(a.input);
        check_memory(static_cast<double>(layout.rows), static_cast<double>(layout.cols), input_bytes);
    } else {
        a.memory.check(10 * file_size(a.input) + per_point_bytes, a.input + ": reading this CSV file",
                       "about 10 bytes per byte of text", "convert it to NPY, which is read at 8 bytes per value");
    }
    StageReport report;
    // A GPU backend's context is created while the input is read (as `segment` does while decoding).
    meanshift::Options early;
    a.run.apply(early);
    std::future<std::string> backend_ready;
    if (prepare_backend_early(early.backend))
        backend_ready =
            std::async(std::launch::async, meanshift::prepare_backend, early.backend, early.backend_options);
    auto t_stage = std::chrono::steady_clock::now();
    std::optional<meanshift::MatrixF> direct;
    if (format_of(a.input) == MatrixFormat::Npy) direct = read_npy_float32(a.input);
    const meanshift::MatrixF data = direct ? std::move(*direct) : to_float(read_matrix(a.input), a.input);
    direct.reset();
    report.add("read", seconds_since(t_stage));
    const meanshift::Index n = data.rows();
    const int k = static_cast<int>(data.cols());
    check_memory(static_cast<double>(n), k, per_point_bytes);

    meanshift::Options opt;
    std::string bandwidth_description;
    t_stage = std::chrono::steady_clock::now();
    try {
        opt.bandwidth = make_bandwidth(a, data, bandwidth_description);
    } catch (const meanshift::InvalidArgument& e) {
        const std::string what = e.what();
        if (!a.per_point.empty() && what.compare(0, a.per_point.size(), a.per_point) != 0)
            throw meanshift::InvalidArgument(a.per_point + ": " + what);
        throw;
    }
    report.add("bandwidth", seconds_since(t_stage));
    a.run.apply(opt);
    a.conv.apply(opt);
    a.approx.apply(opt);
    a.profile.apply(opt);
    opt.max_memory = a.memory.library_budget();
    // Not waited for: cluster() creates the backend again on a thread while it prepares the data
    // (the registry serialises the two creations; the second finds the driver initialised), and
    // waits at the bind. A finished "auto" is passed resolved, so it is not probed twice.
    if (backend_ready.valid() && backend_ready.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        try {
            opt.backend = backend_ready.get();
        } catch (const std::exception&) {
            // cluster() meets the same error and reports it.
        }
    }
    meanshift::Result r;
    try {
        r = cluster_with_progress(data, opt, a.run.quiet);
    } catch (const meanshift::InvalidArgument& e) {  // the library's word on the data: name the files
        throw meanshift::InvalidArgument(
            a.input + (a.per_point.empty() ? "" : " with --per-point-bandwidths " + a.per_point) + ": " + e.what());
    }

    report.add_library(r.timing);
    t_stage = std::chrono::steady_clock::now();
    files.set(labels_slot, labels_bytes(out_format, r.labels));
    files.set(centres_slot, matrix_bytes(format_of(centres_path), r.centres));
    if (!a.modes_output.empty()) files.set(modes_slot, matrix_bytes(modes_format, r.modes));
    // The outputs are complete in their temporaries; the summary goes out before they are
    // published, so that a summary that cannot be written (`> /dev/full`) leaves no outputs and
    // exit status 1 keeps meaning "no output file was created or changed" (docs/cli.md).
    files.prepare();
    report.add("write", seconds_since(t_stage));

    meanshift::Index not_converged = 0;
    for (bool c : r.converged) not_converged += c ? 0 : 1;
    const meanshift::Timing& t = r.timing;
    std::printf("points      %lld x %d\n", static_cast<long long>(n), k);
    std::printf("bandwidth   %s\n", bandwidth_description.c_str());
    std::printf("backend     %s (%s)\n", r.backend.c_str(), r.topology.to_string().c_str());
    print_method(r, opt.kernel);
    std::printf("clusters    %zu (largest:", r.cluster_sizes.size());
    for (std::size_t c = 0; c < r.cluster_sizes.size() && c < 8; ++c)
        std::printf(" %lld", static_cast<long long>(r.cluster_sizes[c]));
    std::printf("%s)\n", r.cluster_sizes.size() > 8 ? " ..." : "");
    std::printf("iterations  %d (modes not converged: %lld, without support: %lld)\n", t.iterations,
                static_cast<long long>(not_converged - r.modes_without_support),
                static_cast<long long>(r.modes_without_support));
    std::printf("time        %.3f s (prepare %.3f, iterate %.3f, group %.3f)\n", t.seconds_total, t.seconds_prepare,
                t.seconds_iterate, t.seconds_group);
    std::printf("pairs/s     %s\n", sci(t.pairs_per_second()).c_str());
    std::printf("stages      %s\n", report.line().c_str());
    std::printf("labels  ->  %s\ncentres ->  %s\n", escape_for_terminal(a.output).c_str(),
                escape_for_terminal(centres_path).c_str());
    if (!a.modes_output.empty()) std::printf("modes   ->  %s\n", escape_for_terminal(a.modes_output).c_str());
    if (a.json)
        std::printf("%s\n", report
                                .json("cluster", {{"n", std::to_string(n)},
                                                  {"k", std::to_string(k)},
                                                  {"backend", nlohmann::json(r.backend).dump()},
                                                  {"clusters", std::to_string(r.cluster_sizes.size())},
                                                  {"iterations", std::to_string(t.iterations)},
                                                  {"seconds_total", std::to_string(t.seconds_total)},
                                                  {"pair_interactions", nlohmann::json(t.pair_interactions).dump()},
                                                  {"seeding", nlohmann::json(r.seeding).dump()},
                                                  {"search", nlohmann::json(r.search).dump()}})
                                .c_str());
    try {
        flush_stdout();
    } catch (const meanshift::IoError& e) {
        throw meanshift::IoError(std::string(e.what()) + "; no output file was created or changed");
    }
    files.publish();
}

}  // namespace

void add_cluster_command(CLI::App& app, Mode mode)
{
    auto a = std::make_shared<ClusterArgs>();
    CLI::App* sub = app.add_subcommand("cluster", "Cluster the points of a CSV or NPY file (one point per row)");
    sub->add_option("input", a->input, "input matrix, n x k (.csv or .npy)")->required();
    sub->add_option("-o,--output", a->output,
                    "labels file (.csv or .npy); the centres go to the sibling OUT.centres.{csv,npy}")
        ->required();
    sub->add_option("--modes", a->modes_output, "also write each point's mode (n x k) to this file");
    sub->add_flag(
        "--json", a->json,
        "also print the run's stages (seconds), wall time and peak memory as one JSON object on the last line");
#ifdef MEANSHIFT_CLI_MPI
    sub->add_option("--mpi-strategy", a->mpi_strategy,
                    "under mpirun: auto (domain decomposition for the truncated kernel when no rank holds more "
                    "than 75 % of the points), replicated, domain, ring (points stay on their rank, the modes "
                    "travel with their partial sums; any backend) (docs/mpi.md)")
        ->check(CLI::IsMember({"auto", "replicated", "domain", "ring"}))
        ->capture_default_str();
#endif
    auto* h = sub->add_option(
                     "--bandwidth", a->bandwidth,
                     "isotropic bandwidth (Gaussian standard deviation, data units), or a rule: auto "
                     "(= quantile:0.3), quantile:Q (scikit-learn's estimate_bandwidth, halved), scott, "
                     "silverman, scott:per-dim, silverman:per-dim, adaptive[:K[:C]] (per point: "
                     "sigma_i = C * max(1.6 d^-0.8 * distance to the K-th neighbour, 1.1 * self-weight width), d the "
                     "intrinsic dimension; defaults K = sqrt(n) (at least 5), C = 1); see "
                     "docs/bandwidth-selection.md")
                  ->check(bandwidth_spec());
    auto* hs = sub->add_option("--bandwidths", a->bandwidths, "one bandwidth per dimension: h1,h2,...,hk")
                   ->delimiter(',')
                   ->check(positive());
    auto* pp = sub->add_option("--per-point-bandwidths", a->per_point,
                               "file with n x k standard deviations, row i for point i (.csv or .npy)");
    h->excludes(hs)->excludes(pp);
    hs->excludes(pp);
    a->run.add_to(*sub);
    a->conv.add_to(*sub);
    a->approx.add_to(*sub);
    a->profile.add_to(*sub);
    a->memory.add_to(*sub);
    sub->callback([a, h, hs, pp, mode] {
        if (h->count() + hs->count() + pp->count() == 0)
            throw CLI::RequiredError("one of --bandwidth, --bandwidths, --per-point-bandwidths");
        a->run.validate();
        run_cluster(*a, mode);
    });
}

}  // namespace mscli
