// meanshift bench --n N --dims K --iterations I --backend B [--bandwidth-model isotropic|diagonal]
//                 [--kernel gaussian|flat|epanechnikov|biweight|vmf]
// Synthetic Gaussian blobs, a fixed number of iterations for every mode (no convergence test, as
// the other papers' benchmarks do), one JSON line on stdout.
#include "cli_options.hpp"
#include "commands.hpp"
#include "memory.hpp"
#include "progress.hpp"
#include "synthetic.hpp"

#include <meanshift/meanshift.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <memory>

namespace mscli {
namespace {

struct BenchArgs {
    long long n = 10000;
    int dims = 2;
    int iterations = 10;
    std::string model = "isotropic";  ///< --bandwidth-model
    double bandwidth = 1.0;
    int blobs = 8;
    unsigned long long seed = 1;
    RunOptions run;
    ApproximationOptions approx;
    ProfileOptions profile;
    MemoryOption memory;
    bool group = false;
};

void run_bench(const BenchArgs& a)
{
    // Before the points are drawn: --n x --dims against the memory budget.
    const double n = static_cast<double>(a.n), k = a.dims;
    const bool diagonal = a.model == "diagonal";
    a.memory.check(cluster_memory(n, k, 0) + (diagonal ? 16 * n * k : 0),
                   "bench --n " + std::to_string(a.n) + " --dims " + std::to_string(a.dims),
                   sci(kClusterBytesPerPoint) + " + " + sci(kClusterBytesPerValue) + " x k bytes per point" +
                       (diagonal ? " + 16 x k for the per-point bandwidths" : ""),
                   "use a smaller --n");
    meanshift::MatrixF data = make_blobs(a.n, a.dims, a.blobs, a.seed);
    if (a.profile.kernel == "vmf")  // the von Mises-Fisher profile takes unit vectors: the blobs' directions
        for (meanshift::Index i = 0; i < data.rows(); ++i) {
            const float norm = data.row(i).norm();
            if (norm > 0)
                data.row(i) /= norm;
            else
                data(i, 0) = 1.0f;
        }
    meanshift::Options opt;
    opt.bandwidth = diagonal ? meanshift::Bandwidth::per_point(make_point_bandwidths(a.n, a.dims, a.bandwidth, a.seed))
                             : meanshift::Bandwidth::isotropic(a.bandwidth);
    a.run.apply(opt);
    a.approx.apply(opt);
    a.profile.apply(opt);
    opt.fixed_iterations = a.iterations;
    // The iterations are timed; grouping (Alg. 6 is O(m² k) for m modes: minutes at m = 262,144)
    // is not part of the step and is skipped unless asked for.
    if (!a.group) opt.grouping = meanshift::GroupingMethod::None;
    const meanshift::Result r = cluster_with_progress(data, opt, a.run.quiet);

    const meanshift::Timing& t = r.timing;
    nlohmann::ordered_json j = {
        {"backend", r.backend},
        {"n", a.n},
        {"k", a.dims},
        {"bandwidth_model", a.model},
        {"kernel", meanshift::profile_name(opt.kernel)},
        {"iterations", a.iterations},
        {"seconds", t.seconds_iterate},
        {"seconds_total", t.seconds_total},
        {"seconds_prepare", t.seconds_prepare},
        {"pairs", t.pair_interactions},
        {"pairs_per_s", t.pairs_per_second()},
        {"seconds_kernels", t.seconds_kernels},
        {"pairs_per_s_kernels", t.seconds_kernels > 0 ? t.pair_interactions / t.seconds_kernels : 0.0},
        {"clusters", a.group ? nlohmann::ordered_json(r.cluster_sizes.size()) : nlohmann::ordered_json()},
        {"cutoff", std::isfinite(r.cutoff) ? nlohmann::ordered_json(r.cutoff) : nlohmann::ordered_json("inf")},
        {"search", r.search},
        {"seeding", r.seeding},
        {"topology", r.topology.to_string()},
        {"preload", opt.backend_options.preload == meanshift::Preload::On    ? "on"
                    : opt.backend_options.preload == meanshift::Preload::Off ? "off"
                                                                             : "auto"}};
    std::printf("%s\n", j.dump().c_str());
}

}  // namespace

void add_bench_command(CLI::App& app, Mode mode)
{
    auto a = std::make_shared<BenchArgs>();
    CLI::App* sub = app.add_subcommand(
        "bench", "Time a fixed number of iterations on synthetic Gaussian blobs; prints one JSON line");
    sub->add_option("--n", a->n, "number of points")->check(positive())->capture_default_str();
    sub->add_option("--dims,-k", a->dims, "dimensions k")->check(positive())->capture_default_str();
    sub->add_option("--iterations,-i", a->iterations, "iterations per mode")->check(positive())->capture_default_str();
    sub->add_option("--bandwidth-model", a->model,
                    "isotropic (one shared h) or diagonal (per-point diagonal covariance, Bandwidth::per_point)")
        ->check(CLI::IsMember({"isotropic", "diagonal"}))
        ->capture_default_str();
    sub->add_option("--bandwidth", a->bandwidth, "h (for diagonal: per-point values uniform in [h/2, 3h/2])")
        ->check(positive())
        ->capture_default_str();
    sub->add_option("--blobs", a->blobs, "number of Gaussian blobs")->check(positive())->capture_default_str();
    sub->add_option("--seed", a->seed, "random seed")->capture_default_str();
    a->run.add_to(*sub);
    a->approx.add_to(*sub);
    a->profile.add_to(*sub);
    a->memory.add_to(*sub);
    sub->add_flag("--group", a->group, "also group the modes into clusters (reported as \"clusters\")");
    sub->callback([a, mode] {
        a->run.validate();
        if (mode == Mode::Run) run_bench(*a);
    });
}

}  // namespace mscli
