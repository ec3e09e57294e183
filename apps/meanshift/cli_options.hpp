#pragma once
/// @file cli_options.hpp
/// Option groups shared by the subcommands of the `meanshift` tool.

#include <meanshift/bandwidth_selection.hpp>
#include <meanshift/meanshift.hpp>

#include "text.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace mscli {

/// Backend choice, device, tuning and topology (--backend, --device, --devices, --preload,
/// --no-preload, --preload-size, --tune key=value, --threads, --ppus, --tau, --f-vppu, --f-load,
/// --calibration, --calibration-file)
/// and --quiet. With no tuning flags every backend runs its measured fastest defaults.
struct RunOptions {
    std::string backend = "auto";
    std::string device;
    std::vector<int> devices;
    bool preload = false;  ///< --preload: force Alg. 7 preloading on
    bool no_preload = false;  ///< --no-preload: force it off (default: the backend's measured choice)
    int preload_size = 0;
    std::vector<std::string> tune;  ///< --tune key=value (BackendOptions::set)
    int threads = 0;
    int ppus = 0, tau = 0, f_vppu = 0, f_load = 0;
    std::string calibration = "auto";  ///< --calibration auto|off|rerun (BackendOptions::calibration)
    std::string calibration_file;  ///< --calibration-file PATH ("" = the default location)
    bool quiet = false;

    void add_to(CLI::App& app);
    /// Refuses combinations the backend would silently ignore (--device with a backend other than
    /// opencl/auto, --devices with serial/openmp). Throws CLI::ValidationError (exit status 2).
    void validate() const;
    void apply(meanshift::Options& options) const;
};

/// Convergence and grouping (--max-iter, --tol, --fixed-iterations, --merge-eps, --grouping).
struct ConvergenceOptions {
    int max_iterations = 100;
    double tolerance = 1e-3;
    int fixed_iterations = 0;  // 0 = not set
    double merge_eps = 0.5;
    std::string grouping = "sequential";

    void add_to(CLI::App& app);
    void apply(meanshift::Options& options) const;
};

/// The approximations of the truncated-kernel issue (docs/truncated-kernel.md): --exact, --cutoff C,
/// --search, --seeding, --bin-size, --min-bin-count, --data-bin-size, --no-refine. Unset options keep
/// the library's defaults (Options), which pick the fastest method whose error bound holds.
struct ApproximationOptions {
    bool exact = false;
    std::string cutoff;  ///< "" = default; a number > 0 or "inf"
    std::string search = "auto";
    std::string seeding = "bins";
    double bin_size = 0;  ///< 0 = default
    long long min_bin_count = 0;  ///< 0 = default
    std::string data_bin_size;  ///< "" = default (auto); "off", or a side > 0
    bool no_refine = false;

    void add_to(CLI::App& app);
    void apply(meanshift::Options& options) const;
};

/// The kernel profile and the mean-shift variant (--kernel NAME, --blurring): Options::kernel (the
/// library's parse_profile() names: gaussian, flat, epanechnikov, biweight, vmf) and Options::blurring.
struct ProfileOptions {
    std::string kernel = "gaussian";
    bool blurring = false;

    void add_to(CLI::App& app);
    void apply(meanshift::Options& options) const;
};

/// The lines saying which method ran (search, seeding, cutoff), as `cluster` and `segment` print them.
void print_method(const meanshift::Result& r, meanshift::KernelProfile profile = meanshift::KernelProfile::Gaussian);

/// --bandwidth VALUE: a number (isotropic Gaussian σ, data units) or a rule computed from the data
/// (bandwidth_selection.hpp): auto (= quantile:0.3), quantile:Q (scikit-learn's estimate_bandwidth
/// halved: its flat radius as a Gaussian σ), scott, silverman (isotropic; scott:per-dim and
/// silverman:per-dim give one σ per dimension), adaptive[:K[:C]] (per-point σ_i = C · max(a d̂^−β d_K(x_i), b s_i): adaptive_bandwidths()),
/// abramson[:C[:P]] (per-point h_i = C · σ_p · (f̂(x_i)/g)^(-1/2), Abramson's pilot-density law,
/// pilot σ_p = P or Silverman's isotropic rule).
struct BandwidthSpec {
    enum class Kind { Number, Quantile, Scott, Silverman, Adaptive, Abramson } kind = Kind::Number;
    double value = 0;  ///< the number, or Q for Quantile
    bool per_dimension = false;
    meanshift::AdaptiveBandwidthOptions adaptive;
    meanshift::AbramsonOptions abramson;

    /// Parses `text`; returns an error message ("" if fine).
    static std::string parse(const std::string& text, BandwidthSpec& out);
    /// The bandwidth for these data and one line saying which rule ran and its value.
    meanshift::Bandwidth resolve(const meanshift::MatrixF& data, std::string& description) const;
};

/// CLI11 validator for --bandwidth (BandwidthSpec::parse).
CLI::Validator bandwidth_spec();

/// CLI11 validators with short messages ("must be > 0, got -1"); CLI11 2.1's own print the
/// full double range.
CLI::Validator positive();
CLI::Validator non_negative();
/// "must be at most LIMIT (why), got X": for values that a narrower type or a derived count must hold.
CLI::Validator at_most(double limit, const std::string& why);

/// float64 matrix -> float32 matrix for cluster(); throws InvalidArgument naming `what`, the row
/// and the column if a value does not fit in float32.
meanshift::MatrixF to_float(const meanshift::MatrixD& m, const std::string& what);

/// Whether to create the backend on a thread while the input is read: only where a CUDA context is
/// there to be made ("cuda", or "auto" in a build with CUDA). Probing OpenCL on that thread gains
/// little, and PoCL's LLVM leaves its own signal stack on the thread, which AddressSanitizer then
/// fails to unmap when the thread ends.
bool prepare_backend_early(const std::string& backend);

}  // namespace mscli
