// meanshift cluster IN.{csv,npy} (--bandwidth H|RULE | --bandwidths h1,..,hk | --per-point-bandwidths F) -o OUT
#include "cli_options.hpp"
#include "commands.hpp"
#include "io_matrix.hpp"
#include "output_files.hpp"
#include "progress.hpp"

#include <meanshift/meanshift.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

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
};

meanshift::Bandwidth make_bandwidth(const ClusterArgs& a, const meanshift::MatrixF& data, std::string& description)
{
    const meanshift::Index n = data.rows();
    const int k = static_cast<int>(data.cols());
    if (!a.per_point.empty()) {
        meanshift::MatrixD h = read_matrix(a.per_point);
        if (h.rows() != n || h.cols() != k)
            throw meanshift::InvalidArgument(a.per_point + ": --per-point-bandwidths must be " + std::to_string(n) +
                                             " x " + std::to_string(k) + " (one row of standard deviations per "
                                             "point), got " + std::to_string(h.rows()) + " x " +
                                             std::to_string(h.cols()));
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
    try {
        return spec.resolve(data, description);
    } catch (const meanshift::InvalidArgument& e) {
        throw meanshift::InvalidArgument("--bandwidth " + a.bandwidth + ": " + e.what());
    }
}

// Every file of the run: inputs, then outputs, checked against each other before any work.
void run_cluster(const ClusterArgs& a, Mode mode)
{
    const MatrixFormat out_format = format_of(a.output);  // reject a bad output name before the (long) run
    const MatrixFormat modes_format = a.modes_output.empty() ? out_format : format_of(a.modes_output);
    format_of(a.input);
    if (!a.per_point.empty()) format_of(a.per_point);
    if (mode == Mode::CheckOnly) return;

    const std::string centres_path = sibling_path(a.output, "centres");
    OutputFiles files;
    files.add_input(a.input, "the input");
    if (!a.per_point.empty()) files.add_input(a.per_point, "the --per-point-bandwidths file");
    const std::size_t labels_slot = files.add_output(a.output, "-o");
    const std::size_t centres_slot = files.add_output(centres_path, "the centres file named after -o " + a.output);
    const std::size_t modes_slot = a.modes_output.empty() ? 0 : files.add_output(a.modes_output, "--modes");

    const meanshift::MatrixF data = to_float(read_matrix(a.input), a.input);
    const meanshift::Index n = data.rows();
    const int k = static_cast<int>(data.cols());

    meanshift::Options opt;
    std::string bandwidth_description;
    try {
        opt.bandwidth = make_bandwidth(a, data, bandwidth_description);
    } catch (const meanshift::InvalidArgument& e) {
        const std::string what = e.what();
        if (!a.per_point.empty() && what.compare(0, a.per_point.size(), a.per_point) != 0)
            throw meanshift::InvalidArgument(a.per_point + ": " + what);
        throw;
    }
    a.run.apply(opt);
    a.conv.apply(opt);
    meanshift::Result r;
    try {
        r = cluster_with_progress(data, opt, a.run.quiet);
    } catch (const meanshift::InvalidArgument& e) {  // the library's word on the data: name the files
        throw meanshift::InvalidArgument(
            a.input + (a.per_point.empty() ? "" : " with --per-point-bandwidths " + a.per_point) + ": " + e.what());
    }

    files.set(labels_slot, labels_bytes(out_format, r.labels));
    files.set(centres_slot, matrix_bytes(format_of(centres_path), r.centres));
    if (!a.modes_output.empty()) files.set(modes_slot, matrix_bytes(modes_format, r.modes));
    files.commit();

    meanshift::Index not_converged = 0;
    for (bool c : r.converged) not_converged += c ? 0 : 1;
    const meanshift::Timing& t = r.timing;
    std::printf("points      %lld x %d\n", static_cast<long long>(n), k);
    std::printf("bandwidth   %s\n", bandwidth_description.c_str());
    std::printf("backend     %s (%s)\n", r.backend.c_str(), r.topology.to_string().c_str());
    std::printf("clusters    %zu (largest:", r.cluster_sizes.size());
    for (std::size_t c = 0; c < r.cluster_sizes.size() && c < 8; ++c)
        std::printf(" %lld", static_cast<long long>(r.cluster_sizes[c]));
    std::printf("%s)\n", r.cluster_sizes.size() > 8 ? " ..." : "");
    std::printf("iterations  %d (modes not converged: %lld, without support: %lld)\n", t.iterations,
                static_cast<long long>(not_converged - r.modes_without_support),
                static_cast<long long>(r.modes_without_support));
    std::printf("time        %.3f s (prepare %.3f, iterate %.3f, group %.3f)\n", t.seconds_total,
                t.seconds_prepare, t.seconds_iterate, t.seconds_group);
    std::printf("pairs/s     %s\n", sci(t.pairs_per_second()).c_str());
    std::printf("labels  ->  %s\ncentres ->  %s\n", escape_for_terminal(a.output).c_str(),
                escape_for_terminal(centres_path).c_str());
    if (!a.modes_output.empty()) std::printf("modes   ->  %s\n", escape_for_terminal(a.modes_output).c_str());
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
    auto* h = sub->add_option("--bandwidth", a->bandwidth,
                              "isotropic bandwidth (Gaussian standard deviation, data units), or a rule: auto "
                              "(= quantile:0.3), quantile:Q (scikit-learn's estimate_bandwidth, halved), scott, "
                              "silverman, scott:per-dim, silverman:per-dim, adaptive[:K[:C]] (per point: "
                              "sigma_i = C * distance to the K-th neighbour / sqrt(dimensions); defaults K = sqrt(n) "
                              "in [5, 50], C = 1.5); see docs/bandwidth-selection.md")
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
    sub->callback([a, h, hs, pp, mode] {
        if (h->count() + hs->count() + pp->count() == 0)
            throw CLI::RequiredError("one of --bandwidth, --bandwidths, --per-point-bandwidths");
        run_cluster(*a, mode);
    });
}

}  // namespace mscli
