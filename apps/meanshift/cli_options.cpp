#include "cli_options.hpp"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace mscli {

void RunOptions::add_to(CLI::App& app)
{
    app.add_option("--backend,-b", backend,
                   "serial, openmp, opencl, cuda, or auto (fastest usable; see `meanshift backends`)")
        ->capture_default_str();
    app.add_option("--device", device, "OpenCL device as P:D (platform:device index)");
    app.add_option("--devices", devices, "device indices for multi-device backends, e.g. 0,1")->delimiter(',');
    auto* on = app.add_flag("--preload", preload,
                            "force Alg. 7 local-memory preloading on (OpenCL, CUDA; default: the measured fastest)");
    auto* off = app.add_flag("--no-preload", no_preload, "force Alg. 7 preloading off");
    on->excludes(off);
    app.add_option("--preload-size", preload_size, "points per preload batch / tile width (0 = backend default)")
        ->check(non_negative());
    std::string keys;
    for (const auto& k : meanshift::BackendOptions::keys()) keys += (keys.empty() ? "" : ", ") + k;
    app.add_option("--tune", tune, "backend tuning override key=value (repeatable); keys: " + keys);
    app.add_option("--threads", threads, "OpenMP threads (0 = all)")->check(non_negative());
    app.add_option("--ppus", ppus, "z: processing units (SMs/compute units/cores); 0 = all")
        ->check(non_negative());
    app.add_option("--tau", tau, "tau: PUs per PPU (work-group/block size); 0 = backend default")
        ->check(non_negative());
    app.add_option("--f-vppu", f_vppu, "PUs per vPPU (must divide tau); 0 = backend default")
        ->check(non_negative());
    app.add_option("--f-load", f_load, "PUs of a vPPU sharing the loop over points (1..f_vppu); 0 = f_vppu")
        ->check(non_negative());
    app.add_flag("--quiet,-q", quiet, "no progress display");
}

void RunOptions::apply(meanshift::Options& o) const
{
    o.backend = backend;
    o.backend_options.device_spec = device;
    o.backend_options.devices = devices;
    if (preload) o.backend_options.preload = meanshift::Preload::On;
    if (no_preload) o.backend_options.preload = meanshift::Preload::Off;
    o.backend_options.preload_size = preload_size;
    o.backend_options.threads = threads;
    o.topology.ppus = ppus;
    o.topology.pus_per_ppu = tau;
    o.topology.f_vppu = f_vppu;
    o.topology.f_load = f_load;
    for (const std::string& t : tune) o.backend_options.set(t);  // last: overrides; InvalidArgument names the key
}

void ConvergenceOptions::add_to(CLI::App& app)
{
    app.add_option("--max-iter", max_iterations, "at most this many iterations per mode")
        ->check(positive())
        ->capture_default_str();
    app.add_option("--tol", tolerance, "stop a mode when its shift is <= this (in bandwidth units)")
        ->check(non_negative())
        ->capture_default_str();
    app.add_option("--fixed-iterations", fixed_iterations,
                   "run exactly N iterations per mode, no convergence test (benchmarks)")
        ->check(positive());
    app.add_option("--merge-eps", merge_eps, "modes closer than this (bandwidth units) form one cluster")
        ->check(non_negative())
        ->capture_default_str();
    app.add_option("--grouping", grouping,
                   "sequential (Alg. 6: join the first group within eps) or components (transitive)")
        ->check(CLI::IsMember({"sequential", "components"}))
        ->capture_default_str();
}

void ConvergenceOptions::apply(meanshift::Options& o) const
{
    o.max_iterations = max_iterations;
    o.tolerance = tolerance;
    if (fixed_iterations > 0) o.fixed_iterations = fixed_iterations;
    o.merge_eps = merge_eps;
    o.grouping = grouping == "components" ? meanshift::GroupingMethod::ConnectedComponents
                                          : meanshift::GroupingMethod::Sequential;
}

namespace {

CLI::Validator number_check(bool allow_zero)
{
    return CLI::Validator(
        [allow_zero](std::string& text) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (end == text.c_str() || *end != '\0' || !std::isfinite(v))
                return "'" + clip(text) + "' is not a number";
            if (v < 0 || (!allow_zero && v == 0))
                return std::string("must be ") + (allow_zero ? ">= 0" : "> 0") + ", got " + clip(text);
            return {};
        },
        allow_zero ? "NONNEGATIVE" : "POSITIVE");
}

}  // namespace

CLI::Validator positive() { return number_check(false); }
CLI::Validator non_negative() { return number_check(true); }

meanshift::MatrixF to_float(const meanshift::MatrixD& m, const std::string& what)
{
    for (meanshift::Index i = 0; i < m.rows(); ++i) {
        for (meanshift::Index d = 0; d < m.cols(); ++d) {
            if (std::fabs(m(i, d)) > FLT_MAX)
                throw meanshift::InvalidArgument(what + ": row " + std::to_string(i + 1) + ", column " +
                                                 std::to_string(d + 1) + ": value " + sci(m(i, d)) +
                                                 " does not fit in float32 (|x| <= " + sci(FLT_MAX) + ")");
        }
    }
    return m.cast<float>();
}

}  // namespace mscli
