#pragma once
/// @file meanshift.hpp
/// Public entry point of meanshift-skeleton: Gaussian mean shift clustering with per-point
/// diagonal covariances (Malysiak & Handmann, eq. 1-6, Alg. 4) on a backend chosen at run time.
///
/// Minimal use:
/// @code
///   meanshift::Options opt;
///   opt.bandwidth = meanshift::Bandwidth::isotropic(2.0);
///   meanshift::Result r = meanshift::cluster(data, opt);   // data: n × k row-major float
///   // r.labels[i], r.centres.row(c)
/// @endcode

#include <meanshift/backend.hpp>
#include <meanshift/bandwidth.hpp>
#include <meanshift/errors.hpp>
#include <meanshift/grouping.hpp>
#include <meanshift/registry.hpp>
#include <meanshift/topology.hpp>
#include <meanshift/types.hpp>
#include <meanshift/version.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace meanshift {

/// Progress report: iteration number, modes still active, total modes. Return false to cancel
/// (cluster() then throws Error("cancelled")).
using ProgressCallback = std::function<bool(int iteration, Index active, Index total)>;

struct Options {
    Bandwidth bandwidth;                 ///< covariance model H_i (default isotropic h = 1)
    std::string backend = "auto";        ///< "serial", "openmp", "opencl", "cuda", "auto"
    BackendOptions backend_options;
    Topology topology;                   ///< zeros = backend defaults
    /// Alg. 4: a mode stops when its shift, as a Mahalanobis distance (Alg. 5, in units of the
    /// bandwidth), is ≤ tolerance (t_d), or after max_iterations (m_it) iterations.
    int max_iterations = 100;
    double tolerance = 1e-3;
    /// If set, every mode makes exactly this many iterations (no convergence test), as the
    /// benchmarks of the other papers do.
    std::optional<int> fixed_iterations;
    GroupingMethod grouping = GroupingMethod::Sequential;
    /// ε of Alg. 6 / δ of connected components, as a Mahalanobis distance in bandwidth units.
    double merge_eps = 0.5;
    ProgressCallback progress;
};

struct Timing {
    double seconds_total = 0;     ///< cluster() wall time
    double seconds_prepare = 0;   ///< validation, centring, whitening, bind (upload)
    double seconds_iterate = 0;   ///< all backend steps incl. transfers and the final read-back of the modes
    /// Σ of StepReport::kernel_seconds: the pair kernels (GPU: device time of the step's kernels;
    /// host backends: the pair loop). seconds_iterate − seconds_kernels is the host overhead.
    double seconds_kernels = 0;
    double seconds_group = 0;     ///< groupModes
    int iterations = 0;           ///< iterations run (the longest mode)
    double pair_interactions = 0; ///< Σ over iterations of active modes × n
    double pairs_per_second() const { return seconds_iterate > 0 ? pair_interactions / seconds_iterate : 0; }
};

struct Result {
    MatrixF modes;                 ///< m × k converged position of each query (data units)
    MatrixF centres;               ///< c × k cluster centres (data units), largest cluster first
    std::vector<int> labels;       ///< m cluster labels in [0, c)
    std::vector<Index> cluster_sizes;  ///< c
    std::vector<int> iterations;   ///< m iterations made by each mode
    std::vector<bool> converged;   ///< m: shift ≤ tolerance reached (always true in fixed mode for supported modes)
    /// m: the mode had no support (every kernel weight underflowed to 0: a seed far from all
    /// data); it kept its position and is not counted as converged.
    std::vector<bool> no_support;
    Index modes_without_support = 0;  ///< count of true entries in no_support
    Timing timing;
    std::string backend;           ///< backend that ran
    Topology topology;             ///< resolved topology
};

/// Runs Alg. 4 on `data` (n × k row-major float32, n ≥ 1, finite). Queries/seeds default to the
/// data; pass `seeds` (m × k) to start the ascent elsewhere. Throws InvalidArgument (bad input),
/// BackendUnavailable, DeviceError.
MEANSHIFT_API Result cluster(const Eigen::Ref<const MatrixF>& data, const Options& options,
               const Eigen::Ref<const MatrixF>* seeds = nullptr);

/// Raw-pointer overload: `data` is n × k row-major, `seeds` m × k row-major or nullptr.
MEANSHIFT_API Result cluster(const float* data, Index n, int k, const Options& options,
               const float* seeds = nullptr, Index m = 0);

/// Reusable clusterer: keeps the backend (and its compiled programs / device contexts) alive
/// across runs, and the binding of the last fit() (the prepared data on the device), which
/// binding() exposes for further ascents against the fitted data.
class MEANSHIFT_API Clusterer {
public:
    explicit Clusterer(Options options);
    ~Clusterer();
    Clusterer(Clusterer&&) noexcept;
    Clusterer& operator=(Clusterer&&) noexcept;

    Result fit(const Eigen::Ref<const MatrixF>& data, const Eigen::Ref<const MatrixF>* seeds = nullptr);
    const Options& options() const noexcept { return options_; }
    Backend& backend();
    /// The binding of the last fit(): its data (prepared units) stay bound and owned by it, so
    /// set_modes()/step() on it run against the fitted data. Throws Error before the first fit().
    Binding& binding();

private:
    Options options_;
    std::unique_ptr<Backend> backend_;
    std::unique_ptr<Binding> binding_;
};

}  // namespace meanshift
