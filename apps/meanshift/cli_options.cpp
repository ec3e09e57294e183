#include "cli_options.hpp"

#include <meanshift/registry.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace mscli {

void RunOptions::add_to(CLI::App& app)
{
    app.add_option("--backend,-b", backend,
                   "serial, openmp, opencl, cuda, or auto (fastest usable; see `meanshift backends`)")
        ->capture_default_str();
    app.add_option("--device", device, "OpenCL device as P:D (platform:device index; opencl or auto backend)")
        ->check([](const std::string& t) -> std::string {
            const std::size_t colon = t.find(':');
            const auto digits = [](const std::string& s) {
                return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
            };
            if (colon == std::string::npos || !digits(t.substr(0, colon)) || !digits(t.substr(colon + 1)))
                return "must be P:D, two indices >= 0 such as 0:1 (see `meanshift backends`), got '" + clip(t) + "'";
            return {};
        });
    app.add_option("--devices", devices, "device indices for multi-device backends (cuda), e.g. 0,1")
        ->delimiter(',')
        ->check(non_negative());
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
    app.add_option("--ppus", ppus, "z: processing units (SMs/compute units/cores); 0 = all")->check(non_negative());
    app.add_option("--tau", tau, "tau: PUs per PPU (work-group/block size); 0 = backend default")
        ->check(non_negative());
    app.add_option("--f-vppu", f_vppu, "PUs per vPPU (must divide tau); 0 = backend default")->check(non_negative());
    app.add_option("--f-load", f_load, "PUs of a vPPU sharing the loop over points (1..f_vppu); 0 = f_vppu")
        ->check(non_negative());
    app.add_option("--calibration", calibration,
                   "crossovers measured on this machine (openmp: direct vs GEMM form): auto (cached, measured once), "
                   "off (fixed default rule), rerun (measure again); docs/tuning.md")
        ->check(CLI::IsMember({"auto", "off", "rerun"}))
        ->capture_default_str();
    app.add_option("--calibration-file", calibration_file,
                   "calibration cache (default: $XDG_CACHE_HOME/meanshift/calibration.json, else "
                   "~/.cache/meanshift/calibration.json)");
    app.add_flag("--quiet,-q", quiet, "no progress display");
}

void RunOptions::validate() const
{
    // A device option that the chosen backend would ignore is a mistake on the command line.
    const bool cpu = backend == "serial" || backend == "openmp";
    if (!device.empty() && backend != "opencl" && backend != "auto")
        throw CLI::ValidationError("--device " + clip(device),
                                   "selects an OpenCL device, but --backend is " + clip(backend) +
                                       " (use --backend opencl or auto" +
                                       (backend == "cuda" ? "; CUDA devices are chosen with --devices" : "") + ")");
    if (!devices.empty() && cpu)
        throw CLI::ValidationError("--devices", "selects GPUs, but --backend " + backend + " runs on the CPU");
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
    o.backend_options.set("calibration", calibration);
    o.backend_options.calibration_file = calibration_file;
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
                   "sequential (Alg. 6: join the first group within eps), components (transitive) or sklearn "
                   "(scikit-learn's: modes ranked by support, near ones dropped, points to the nearest kept mode)")
        ->check(CLI::IsMember({"sequential", "components", "sklearn"}))
        ->capture_default_str();
}

void ConvergenceOptions::apply(meanshift::Options& o) const
{
    o.max_iterations = max_iterations;
    o.tolerance = tolerance;
    if (fixed_iterations > 0) o.fixed_iterations = fixed_iterations;
    o.merge_eps = merge_eps;
    o.grouping = grouping == "components" ? meanshift::GroupingMethod::ConnectedComponents
                 : grouping == "sklearn"  ? meanshift::GroupingMethod::ScikitLearn
                                          : meanshift::GroupingMethod::Sequential;
}

void ApproximationOptions::add_to(CLI::App& app)
{
    auto* exact_flag =
        app.add_flag("--exact", exact,
                     "the exact kernel and no approximation: no cutoff, brute force, every point a seed, no binning "
                     "(O(n^2) pair interactions per iteration)");
    auto* cutoff_option =
        app.add_option("--cutoff", cutoff,
                       "truncated kernel: pairs beyond this Mahalanobis radius (bandwidth units) get weight 0; inf = "
                       "exact kernel (default " +
                           std::to_string(meanshift::kDefaultCutoff).substr(0, 4) + ")")
            ->check([](const std::string& t) -> std::string {
                if (t == "inf") return {};
                char* end = nullptr;
                const double v = std::strtod(t.c_str(), &end);
                if (end == t.c_str() || *end != '\0' || !(v > 0)) return "must be a number > 0 or inf, got " + clip(t);
                return {};
            });
    exact_flag->excludes(cutoff_option);  // --exact means no cutoff: the two contradict each other
    app.add_option("--search", search, "neighbour search of the truncated kernel")
        ->check(CLI::IsMember({"auto", "grid", "tree", "brute"}))
        ->capture_default_str();
    app.add_option("--seeding", seeding, "bins (scikit-learn's bin_seeding) or all (every point a seed)")
        ->check(CLI::IsMember({"bins", "all"}))
        ->capture_default_str();
    app.add_option("--bin-size", bin_size, "bin side for seeding, bandwidth units (0 = default)")
        ->check(non_negative());
    app.add_option("--min-bin-count", min_bin_count, "bins with fewer points seed nothing (0 = default)")
        ->check(non_negative());
    app.add_option("--data-bin-size", data_bin_size,
                   "ascend on the data binned on cells of this side (bandwidth units); off = never; default automatic")
        ->check([](const std::string& t) -> std::string {
            if (t == "off" || t == "auto") return {};
            char* end = nullptr;
            const double v = std::strtod(t.c_str(), &end);
            if (end == t.c_str() || *end != '\0' || !(v > 0))
                return "must be a number > 0, auto or off, got " + clip(t);
            return {};
        });
    app.add_flag("--no-refine", no_refine, "every point takes its bin's label (no boundary refinement)");
}

void ApproximationOptions::apply(meanshift::Options& o) const
{
    o.exact = exact;
    if (cutoff == "inf")
        o.cutoff = std::numeric_limits<double>::infinity();
    else if (!cutoff.empty())
        o.cutoff = std::strtod(cutoff.c_str(), nullptr);
    o.search = search == "grid"    ? meanshift::NeighbourSearch::Grid
               : search == "tree"  ? meanshift::NeighbourSearch::Tree
               : search == "brute" ? meanshift::NeighbourSearch::BruteForce
                                   : meanshift::NeighbourSearch::Auto;
    o.seeding = seeding == "all" ? meanshift::Seeding::AllPoints : meanshift::Seeding::Bins;
    if (bin_size > 0) o.bin_size = bin_size;
    if (min_bin_count > 0) o.min_bin_count = min_bin_count;
    if (data_bin_size == "off")
        o.data_bin_size = -1;
    else if (!data_bin_size.empty() && data_bin_size != "auto")
        o.data_bin_size = std::strtod(data_bin_size.c_str(), nullptr);
    if (no_refine) o.refine_boundaries = false;
}

void ProfileOptions::add_to(CLI::App& app)
{
    std::string names, compact;
    for (meanshift::KernelProfile p : meanshift::kernel_profiles()) {
        names += (names.empty() ? "" : ", ") + std::string(meanshift::profile_name(p));
        if (meanshift::is_compact(p))
            compact += (compact.empty() ? "" : ", ") + std::string(meanshift::profile_name(p));
    }
    app.add_option("--kernel", kernel,
                   "kernel profile: " + names + " (gaussian: bandwidth = sigma; the compact ones (" + compact +
                       "): bandwidth = radius, exact, no cutoff; vmf: unit vectors, isotropic bandwidth, "
                       "kappa = 1/h^2)")
        ->check([](const std::string& t) -> std::string {
            try {
                meanshift::parse_profile(t);
            } catch (const std::exception& e) {
                return e.what();
            }
            return {};
        })
        ->capture_default_str();
    app.add_flag("--blurring", blurring,
                 "blurring mean shift: the data themselves move every iteration (Carreira-Perpinan 2006)");
}

void ProfileOptions::apply(meanshift::Options& o) const
{
    o.kernel = meanshift::parse_profile(kernel);
    o.blurring = blurring;
}

void print_method(const meanshift::Result& r, meanshift::KernelProfile profile)
{
    if (meanshift::is_compact(profile))
        std::printf("kernel      %s, radius 1 bandwidth (exact)\n", meanshift::profile_name(profile));
    else if (profile == meanshift::KernelProfile::VonMisesFisher && std::isfinite(r.cutoff))
        std::printf("kernel      truncated vmf, cutoff %g bandwidths\n", r.cutoff);
    else if (profile == meanshift::KernelProfile::VonMisesFisher)
        std::printf("kernel      exact vmf\n");
    else if (std::isfinite(r.cutoff))
        std::printf("kernel      truncated Gaussian, cutoff %g bandwidths\n", r.cutoff);
    else
        std::printf("kernel      exact Gaussian\n");
    std::printf("search      %s\n", r.search.c_str());
    std::printf("seeding     %s\n", r.seeding.c_str());
}

namespace {

CLI::Validator number_check(bool allow_zero)
{
    return CLI::Validator(
        [allow_zero](std::string& text) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (end == text.c_str() || *end != '\0' || !std::isfinite(v)) return "'" + clip(text) + "' is not a number";
            if (v < 0 || (!allow_zero && v == 0))
                return std::string("must be ") + (allow_zero ? ">= 0" : "> 0") + ", got " + clip(text);
            return {};
        },
        allow_zero ? "NONNEGATIVE" : "POSITIVE");
}

}  // namespace

namespace {

// An integer limit in full ("23169", not "2.32e+04").
std::string sci_exact(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
}

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
        "quantile:Q with 0 < Q <= 1, adaptive[:K[:C]] (K may be empty: adaptive::C), or abramson[:C[:P]]";
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
        // An empty K (adaptive::C) keeps the default K.
        if (!ks.empty()) {
            if (!parse_number(ks, v) || v < 1 || v != std::floor(v) || v > 1e9)
                return "'" + clip(text) + "': K must be an integer >= 1 (or empty for the default)" + usage;
            out.adaptive.k = int(v);
        }
        if (c2 != std::string::npos) {
            if (!parse_number(arg.substr(c2 + 1), v) || v <= 0) return "'" + clip(text) + "': C must be > 0" + usage;
            out.adaptive.c = v;
        }
        return {};
    }
    if (name == "abramson") {
        out.kind = Kind::Abramson;
        if (colon == std::string::npos) return {};
        const std::size_t c2 = arg.find(':');
        if (!parse_number(arg.substr(0, c2), v) || v <= 0) return "'" + clip(text) + "': C must be > 0" + usage;
        out.abramson.c = v;
        if (c2 != std::string::npos) {
            if (!parse_number(arg.substr(c2 + 1), v) || v <= 0)
                return "'" + clip(text) + "': the pilot bandwidth P must be > 0" + usage;
            out.abramson.pilot = v;
        }
        return {};
    }
    return "'" + clip(text) + "' is not a number or a bandwidth rule" + usage;
}

meanshift::Bandwidth BandwidthSpec::resolve(const meanshift::MatrixF& data, std::string& description) const
{
    char buf[512];
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
        std::snprintf(buf, sizeof buf, "%.6g (quantile %.3g: scikit-learn's estimate_bandwidth %.6g, halved)", h, value,
                      r);
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
        meanshift::AdaptiveBandwidths a = meanshift::adaptive_bandwidths_detailed(data, o);
        std::vector<double> c(static_cast<std::size_t>(a.sigma.rows()));
        for (meanshift::Index i = 0; i < a.sigma.rows(); ++i) c[std::size_t(i)] = a.sigma(i, 0);
        std::sort(c.begin(), c.end());
        std::snprintf(buf, sizeof buf,
                      "per point, sigma_i = %.3g * max(%.3g * d_%d(x_i), %.3g * s_i), intrinsic dimension %.3g "
                      "(the self-weight width s_i decides for %.0f %%): min %.4g, median %.4g, max %.4g (adaptive",
                      o.c,
                      meanshift::kAdaptiveDensityFactor *
                          std::pow(a.intrinsic_dimension, -meanshift::kAdaptiveDimensionExponent),
                      o.k, meanshift::kAdaptiveSelfWeightFactor, a.intrinsic_dimension, 100.0 * a.self_weight_share,
                      c.front(), c[c.size() / 2], c.back());
        description = buf;
        // Above sample_k the neighbours come from a sample (AdaptiveBandwidthOptions::sample_k): say so.
        description += a.sampled ? "; d_" + std::to_string(o.k) + " estimated on a sample, " +
                                       std::to_string(o.sample_k) + "-th neighbours"
                                 : "";
        description += "; k-NN search on backend " + o.backend + ")";
        return meanshift::Bandwidth::per_point(std::move(a.sigma));
    }
    case Kind::Abramson: {
        meanshift::AbramsonOptions o = abramson;
        const bool silverman = o.pilot == 0;
        if (silverman) o.pilot = meanshift::rule_bandwidth(data, meanshift::BandwidthRule::Silverman);
        meanshift::MatrixD h = meanshift::abramson_bandwidths(data, o);
        std::vector<double> c(static_cast<std::size_t>(h.rows()));
        for (meanshift::Index i = 0; i < h.rows(); ++i) c[std::size_t(i)] = h(i, 0);
        std::sort(c.begin(), c.end());
        std::snprintf(buf, sizeof buf,
                      "per point, h_i = %.3g * %.4g (%s pilot) * (f(x_i)/g)^-0.5: min %.4g, median %.4g, "
                      "max %.4g (abramson)",
                      o.c, o.pilot, silverman ? "Silverman" : "given", c.front(), c[c.size() / 2], c.back());
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

CLI::Validator at_most(double limit, const std::string& why)
{
    return CLI::Validator(
        [limit, why](std::string& text) -> std::string {
            const double v = std::strtod(text.c_str(), nullptr);
            if (v > limit) return "must be at most " + sci_exact(limit) + " (" + why + "), got " + clip(text);
            return {};
        },
        "");
}

CLI::Validator positive()
{
    return number_check(false);
}
CLI::Validator non_negative()
{
    return number_check(true);
}

bool prepare_backend_early(const std::string& backend)
{
    if (backend == "cuda") return true;
    if (backend != "auto") return false;
    const std::vector<std::string> built = meanshift::compiled_backends();
    return std::find(built.begin(), built.end(), "cuda") != built.end();
}

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
