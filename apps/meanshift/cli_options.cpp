#include "cli_options.hpp"

#include <algorithm>
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

namespace {

bool parse_number(const std::string& t, double& v)
{
    char* end = nullptr;
    v = std::strtod(t.c_str(), &end);
    return !t.empty() && end != t.c_str() && *end == '\0' && std::isfinite(v);
}

}  // namespace

std::string BandwidthSpec::parse(const std::string& text, BandwidthSpec& out)
{
    out = BandwidthSpec{};
    const std::string usage =
        "; use a number (Gaussian sigma, data units), auto, scott, silverman, scott:per-dim, silverman:per-dim, "
        "quantile:Q with 0 < Q <= 1, or adaptive[:K[:C]]";
    double v = 0;
    if (parse_number(text, v)) {
        if (v <= 0) return "must be > 0, got " + clip(text);
        out.value = v;
        return {};
    }
    const std::size_t colon = text.find(':');
    const std::string name = text.substr(0, colon);
    const std::string arg = colon == std::string::npos ? "" : text.substr(colon + 1);
    if ((name == "scott" || name == "silverman") && (arg.empty() || arg == "per-dim") &&
        (colon == std::string::npos || !arg.empty())) {
        out.kind = name == "scott" ? Kind::Scott : Kind::Silverman;
        out.per_dimension = !arg.empty();
        return {};
    }
    if (text == "auto") {
        out.kind = Kind::Quantile;
        out.value = 0.3;  // scikit-learn's default quantile
        return {};
    }
    if (name == "quantile") {
        if (!parse_number(arg, v) || !(v > 0 && v <= 1)) return "'" + clip(text) + "': Q must be in (0, 1]" + usage;
        out.kind = Kind::Quantile;
        out.value = v;
        return {};
    }
    if (name == "adaptive") {
        out.kind = Kind::Adaptive;
        if (colon == std::string::npos) return {};
        const std::size_t c2 = arg.find(':');
        const std::string ks = arg.substr(0, c2);
        if (!parse_number(ks, v) || v < 1 || v != std::floor(v) || v > 1e9)
            return "'" + clip(text) + "': K must be an integer >= 1" + usage;
        out.adaptive.k = int(v);
        if (c2 != std::string::npos) {
            if (!parse_number(arg.substr(c2 + 1), v) || v <= 0) return "'" + clip(text) + "': C must be > 0" + usage;
            out.adaptive.c = v;
        }
        return {};
    }
    return "'" + clip(text) + "' is not a number or a bandwidth rule" + usage;
}

meanshift::Bandwidth BandwidthSpec::resolve(const meanshift::MatrixF& data, std::string& description) const
{
    char buf[200];
    switch (kind) {
    case Kind::Number:
        std::snprintf(buf, sizeof buf, "%.6g (given)", value);
        description = buf;
        return meanshift::Bandwidth::isotropic(value);
    case Kind::Quantile: {
        const double r = meanshift::estimate_bandwidth(data, value);
        if (!(r > 0))
            throw meanshift::InvalidArgument("--bandwidth quantile:" + sci(value) +
                                             ": the estimate is 0 (more than that share of the points are duplicates); "
                                             "use a larger quantile or a number");
        const double h = r * meanshift::kFlatRadiusToSigma;
        std::snprintf(buf, sizeof buf, "%.6g (quantile %.3g: scikit-learn's estimate_bandwidth %.6g, halved)", h, value, r);
        description = buf;
        return meanshift::Bandwidth::isotropic(h);
    }
    case Kind::Scott:
    case Kind::Silverman: {
        const auto rule = kind == Kind::Scott ? meanshift::BandwidthRule::Scott : meanshift::BandwidthRule::Silverman;
        const char* name = kind == Kind::Scott ? "Scott's rule" : "Silverman's rule";
        if (!per_dimension) {
            const double h = meanshift::rule_bandwidth(data, rule);
            std::snprintf(buf, sizeof buf, "%.6g (%s)", h, name);
            description = buf;
            return meanshift::Bandwidth::isotropic(h);
        }
        std::vector<double> h = meanshift::rule_bandwidths(data, rule);
        description.clear();
        for (double x : h) {
            std::snprintf(buf, sizeof buf, "%s%.4g", description.empty() ? "" : ",", x);
            description += buf;
        }
        description += std::string(" (") + name + ", per dimension)";
        return meanshift::Bandwidth::diagonal(std::move(h));
    }
    case Kind::Adaptive: {
        meanshift::AdaptiveBandwidthOptions o = adaptive;
        if (o.k == 0) o.k = meanshift::default_adaptive_k(data.rows());
        meanshift::MatrixD h = meanshift::adaptive_bandwidths(data, o);
        std::vector<double> c(static_cast<std::size_t>(h.rows()));
        for (meanshift::Index i = 0; i < h.rows(); ++i) c[std::size_t(i)] = h(i, 0);
        std::sort(c.begin(), c.end());
        std::snprintf(buf, sizeof buf, "per point, sigma_i = %.3g * d_%d(x_i) / sqrt(%d): min %.4g, median %.4g, max %.4g (adaptive)",
                      o.c, o.k, int(data.cols()), c.front(), c[c.size() / 2], c.back());
        description = buf;
        return meanshift::Bandwidth::per_point(std::move(h));
    }
    }
    return {};
}

CLI::Validator bandwidth_spec()
{
    return CLI::Validator(
        [](std::string& text) -> std::string {
            BandwidthSpec s;
            return BandwidthSpec::parse(text, s);
        },
        "H|RULE");
}

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
