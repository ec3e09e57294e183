// meanshift calibrate [--k 1,2,4,...] [--per-point] [--backend openmp] [--threads N] [--calibration-file PATH]
// Measures the backend's machine-dependent crossovers (calibration.hpp; openmp: direct vs GEMM form,
// AMX vs Eigen products) for each k bucket, stores them in the calibration cache and prints the table.
#include "cli_options.hpp"
#include "commands.hpp"

#include <meanshift/calibration.hpp>
#include <meanshift/meanshift.hpp>
#include <meanshift/registry.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace mscli {
namespace {

struct CalibrateArgs {
    RunOptions run;
    std::vector<int> ks = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
    bool per_point = false;
    bool cached = false;
};

void run_calibrate(const CalibrateArgs& a)
{
    meanshift::Options o;
    a.run.apply(o);
    // The command's job is to measure; --cached shows the file's entries (measuring only the missing ones).
    o.backend_options.calibration = a.cached ? meanshift::Calibration::Auto : meanshift::Calibration::Rerun;
    const std::string backend_name = a.run.backend == "auto" ? "openmp" : a.run.backend;
    const std::string name = meanshift::make_backend(backend_name, o.backend_options)->name();
    const std::string path = o.backend_options.calibration_file.empty() ? meanshift::default_calibration_file()
                                                                        : o.backend_options.calibration_file;
    std::printf("machine     %s\nbuild       %s\nbackend     %s\nfile        %s\n",
                meanshift::calibration_machine().c_str(), meanshift::calibration_build().c_str(), name.c_str(),
                path.empty() ? "(none: $XDG_CACHE_HOME and $HOME unset)" : path.c_str());
    std::printf("%-8s %-10s %-40s %-8s %s\n", "k<=", "model", "device", "default",
                "seconds per step (lower is faster)");
    int rows = 0;
    for (int k : a.ks) {
        const auto e =
            meanshift::calibrate(name, o.backend_options, k,
                                 a.per_point ? meanshift::KernelModel::PerPoint : meanshift::KernelModel::Shared);
        if (!e) continue;
        std::string times;
        for (const meanshift::CalibrationTiming& t : e->timings) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%s%s %.4g", times.empty() ? "" : ", ", t.form.c_str(), t.seconds);
            times += buf;
        }
        std::printf("%-8d %-10s %-40s %-8s %s\n", e->k_bucket, e->model.c_str(), e->device.c_str(), e->choice.c_str(),
                    times.c_str());
        ++rows;
    }
    if (rows == 0) std::printf("(backend %s has no calibrated crossover)\n", name.c_str());
}

}  // namespace

void add_calibrate_command(CLI::App& app, Mode mode)
{
    auto a = std::make_shared<CalibrateArgs>();
    CLI::App* sub = app.add_subcommand(
        "calibrate", "Measure the backend's crossovers on this machine (openmp: direct vs GEMM form) for each k, "
                     "store them in the calibration cache and print the table (docs/tuning.md, \"Calibration\")");
    sub->add_option("--k", a->ks, "dimensions to calibrate (each stands for its power-of-two bucket)")
        ->delimiter(',')
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
    sub->add_flag("--per-point", a->per_point, "the per-point bandwidth kernel (else one shared bandwidth)");
    sub->add_flag("--cached", a->cached, "print the cached entries, measuring only the missing ones");
    a->run.add_to(*sub);
    sub->callback([a, mode] {
        a->run.validate();
        if (a->run.calibration == "off") throw CLI::ValidationError("--calibration off", "calibrate measures; drop it");
        if (mode == Mode::Run) run_calibrate(*a);
    });
}

}  // namespace mscli
