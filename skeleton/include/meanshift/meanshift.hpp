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
#include <meanshift/kernel_profile.hpp>
#include <meanshift/neighbours.hpp>
#include <meanshift/registry.hpp>
#include <meanshift/topology.hpp>
#include <meanshift/types.hpp>
#include <meanshift/version.hpp>

#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace meanshift {

/// Progress report: iteration number, modes still active, total modes. Return false to cancel
/// (cluster() then throws Error("cancelled")).
using ProgressCallback = std::function<bool(int iteration, Index active, Index total)>;

/// Default Options::cutoff (bandwidth units), chosen from measurements (docs/truncated-kernel.md):
/// labels agree with the exact kernel (ARI ≥ 0.99 on blobs and on a 20,000-pixel photo) while the
/// grid search prunes most pairs.
inline constexpr double kDefaultCutoff = 3.0;

/// Which starting points the ascents use when cluster() gets no explicit seeds.
enum class Seeding {
    /// Every data point is a seed (Alg. 4 as written): each point is labelled by its own ascent.
    AllPoints,
    /// scikit-learn's bin_seeding: the data are binned on a grid of side Options::bin_size
    /// (bandwidth units, prepared coordinates); the mean of the points of every bin holding
    /// ≥ min_bin_count points is a seed. Every point is labelled with the cluster its bin's seed
    /// reached ("the basin of its cell"); points of bins below min_bin_count take the label of the
    /// nearest seed's cluster. Error bound: a point is labelled like its bin, so only points of bins
    /// that straddle a basin boundary can be labelled differently from their own ascent (a bin has
    /// diameter bin_size·√k bandwidths); measured ARI vs exact in docs/truncated-kernel.md.
    Bins,
};

/// Default Options::bin_size (bandwidth units), docs/truncated-kernel.md.
inline constexpr double kDefaultBinSize = 0.5;

struct Options {
    Bandwidth bandwidth;  ///< covariance model H_i (default isotropic h = 1)
    /// Weight profile of the mean-shift step (kernel_profile.hpp): Gaussian (σ = the bandwidth),
    /// the compact Flat / Epanechnikov / Biweight (radius = the bandwidth; exact, cutoff not used)
    /// or VonMisesFisher (unit vectors, isotropic bandwidth, κ = 1/h²). A backend without the
    /// profile -> BackendUnavailable; "auto" picks one that has it.
    KernelProfile kernel = KernelProfile::Gaussian;
    /// Blurring mean shift (Carreira-Perpiñán 2006): the data themselves move, every point to its
    /// mean-shift update over the current (moved) data, each iteration; the iterations stop when
    /// the entropy of the histogram of the points' shifts stops changing or every shift is below
    /// `tolerance`, and the moved points are grouped like modes. false = the standard (non-blurring)
    /// mean shift of Alg. 4, in which the data stay put and only the modes move.
    bool blurring = false;
    std::string backend = "auto";  ///< "serial", "openmp", "opencl", "cuda", "auto"
    BackendOptions backend_options;
    Topology topology;  ///< zeros = backend defaults
    /// Alg. 4: a mode stops when its shift, as a Mahalanobis distance (Alg. 5, in units of the
    /// bandwidth), is ≤ tolerance (t_d), or after max_iterations (m_it) iterations.
    int max_iterations = 100;
    double tolerance = 1e-3;
    /// If set, every mode makes exactly this many iterations (no convergence test), as the
    /// benchmarks of the other papers do.
    std::optional<int> fixed_iterations;
    /// How the modes are grouped into clusters (grouping.hpp). GroupingMethod::None skips it:
    /// Result::modes etc. are filled, Result::labels, centres and cluster_sizes stay empty.
    GroupingMethod grouping = GroupingMethod::Sequential;
    /// ε of Alg. 6 / δ of connected components, as a Mahalanobis distance in bandwidth units.
    double merge_eps = 0.5;
    ProgressCallback progress;

    /// Truncated Gaussian kernel: Mahalanobis radius c in bandwidth units. A pair (mode y, point x_i)
    /// with D² = Σ_d (y_d − x_id)²/H_i,dd > c² gets weight 0. infinity() = the exact kernel.
    /// Must be > 0 (NaN, ≤ 0 -> InvalidArgument).
    ///
    /// Error bound. Per pair the neglected weight is at most e^{−c²/2} of the weight of a point at
    /// distance 0 (c = 3: 1.1e-2, 3.5: 2.2e-3, 4: 3.4e-4). For one mean-shift step from y, let W be
    /// the total (exact) kernel weight, W_out the part of it carried by the points beyond c,
    /// ε = W_out / W, μ_out their weighted mean and m_c the truncated mean. The exact mean is
    ///     m = m_c + ε · (μ_out − m_c)                 (an identity: per dimension for per-point H_i),
    /// so |m − m_c| = ε·|μ_out − m_c|. For a shared H (distances in bandwidth units, c ≥ 1), since
    /// r·e^{−r²/2} ≤ c·e^{−c²/2} for r ≥ c and |m_c − y| ≤ c:
    ///     |m − m_c| ≤ 2 c e^{−c²/2} · U_out / W,
    /// where U_out is the sum of the prior weights (sample weights, 1 by default) of the points
    /// beyond c. Both are tested (tests/test_truncated.cpp). For locally uniform data ε is the
    /// χ²_k tail P(χ²_k > c²) and μ_out − m_c ≈ 0 by symmetry: shifts are largest at a density's
    /// edge, and fixed points move by at most the step bound / (1 − contraction).
    double cutoff = kDefaultCutoff;
    /// true: the exact kernel and no approximation at all (cutoff = inf, brute force, every point a
    /// seed, no binning): today's answer (the CLI's --exact).
    bool exact = false;
    /// Neighbour search for a finite cutoff (neighbours.hpp).
    NeighbourSearch search = NeighbourSearch::Auto;
    /// The data are an image's pixels (neighbours.hpp, PixelLattice): Auto and Lattice then search
    /// the pixel window of each mode instead of a cell grid (segment_image sets it).
    std::optional<PixelLattice> lattice;
    /// Seeds when cluster() gets none (explicit seeds are always used as given).
    Seeding seeding = Seeding::Bins;
    double bin_size = kDefaultBinSize;  ///< Seeding::Bins and bin_data: bin side, bandwidth units, > 0
    Index min_bin_count = 1;  ///< Seeding::Bins: bins with fewer points seed nothing (≥ 1)
    /// Replace the data by the means of their bins (side bin_size) weighted by their counts (times
    /// the sample weights) before the ascent; every point is labelled like its bin. Off by default.
    bool bin_data = false;
    /// Seeding::Bins: the points of bins on a basin boundary (a neighbouring bin's seed joined another
    /// cluster) are re-seeded on bins of side bin_size/4 that ascend too, each stopping as soon as its
    /// trajectory enters a bin off the boundaries (docs/truncated-kernel.md: what it costs and the
    /// ARI against the exact answer it buys). false = every point takes its bin's label.
    bool refine_boundaries = true;
    /// Seeding::Bins: the ascents (the seeds' and the boundary refinement's) run on the data binned
    /// on cells of side data_bin_size (bandwidth units), each occupied cell replaced by the mean of its
    /// points with weight = its count (times the sample weights); the seeds and the labelling of every
    /// point (bins of bin_size, boundary refinement) are unchanged. 0 = automatic: bin_size/4 when that
    /// leaves at most n/4 weighted points, else the raw data; < 0 or infinity = never; > 0 = always, at
    /// that side. NaN -> InvalidArgument. Not applied with exact, bin_data, explicit seeds, a pixel
    /// lattice or a per-point bandwidth. Result::seeding says whether it ran and how many points it left.
    ///
    /// Error bound: a point moves to its cell's mean, by at most the cell's diagonal δ = s·√k
    /// bandwidths (s = the side), so within the cutoff c each kernel weight changes by a factor within
    /// e^{±(c·δ + δ²/2)}. The bin's weighted mean cancels the first-order term of that change summed
    /// over its points: a bin's total weight and weighted sum are off by O(c²·s²) relative (s = 0.125,
    /// c = 3: ~1 %), below the cutoff's own e^{−c²/2} ≈ 1.1 %. Measured in docs/truncated-kernel.md.
    double data_bin_size = 0;
    /// Memory budget of one run in bytes. Before the working set is allocated, cluster() estimates
    /// it (estimate_memory(): the prepared data, the neighbour search, the seeds and modes, the
    /// backend's copies) and throws OutOfMemory naming the estimate and the budget when it is
    /// larger. 0 = the machine's available physical memory (available_memory(); no check where that
    /// is unknown); SIZE_MAX = no check. The caller's own input is not counted.
    std::size_t max_memory = 0;
};

struct Timing {
    double seconds_total = 0;  ///< cluster() wall time
    double seconds_prepare = 0;  ///< validation, centring, whitening, seeds, search, bind (upload)
    double seconds_search = 0;  ///< of seconds_prepare: building the neighbour search (grid, lattice, kd-tree)
    /// of seconds_prepare: Backend::bind and Binding::set_modes (device buffers and layouts,
    /// uploads of the points and the modes; host backends: their copies)
    double seconds_bind = 0;
    double seconds_iterate = 0;  ///< all backend steps incl. transfers and the final read-back of the modes
    /// Σ of StepReport::kernel_seconds: the pair kernels (GPU: device time of the step's kernels;
    /// host backends: the pair loop). seconds_iterate − seconds_kernels is the host overhead.
    double seconds_kernels = 0;
    double seconds_group = 0;  ///< groupModes (Alg. 6) and the labelling of the points (below)
    /// The stages of seconds_prepare, in the order they run (each ⊂ seconds_prepare):
    double seconds_validate = 0;  ///< checks of data, options and bandwidths; centring and whitening (prepare)
    double seconds_seeding = 0;  ///< choice of the seeds: bins (keys, radix sort, means), binned data
    double seconds_order = 0;  ///< the modes' Morton / cell order and their gathers into it
    /// The stages of seconds_group:
    double seconds_grouping = 0;  ///< group_modes() alone
    /// boundary refinement (its ascents included) and labels of every point by its seed's mode
    double seconds_label = 0;
    /// Peak resident memory of the process when cluster() returned (bytes; getrusage's ru_maxrss,
    /// 0 where the platform does not report it). A whole-process figure: it includes the caller's data.
    std::size_t peak_memory_bytes = 0;
    int iterations = 0;  ///< iterations run (the longest mode)
    /// Σ over iterations of the candidate (mode, point) pairs evaluated (StepReport::pairs): active
    /// modes × n for brute force, fewer with a neighbour grid; boundary refinement included.
    double pair_interactions = 0;
    double pairs_per_second() const { return seconds_iterate > 0 ? pair_interactions / seconds_iterate : 0; }
    /// Every stage with its seconds, in run order (validate, seeding, search, bind, order, iterate,
    /// grouping, label), for reports and the JSON forms of the CLI and Python.
    std::vector<std::pair<const char*, double>> stages() const
    {
        return {{"validate", seconds_validate}, {"seeding", seconds_seeding}, {"search", seconds_search},
                {"bind", seconds_bind},         {"order", seconds_order},     {"iterate", seconds_iterate},
                {"grouping", seconds_grouping}, {"label", seconds_label}};
    }
};

struct Result {
    MatrixF modes;  ///< m × k converged position of each query (data units)
    MatrixF centres;  ///< c × k cluster centres (data units), largest cluster first; 0 × k for GroupingMethod::None
    std::vector<int> labels;  ///< m cluster labels in [0, c); empty for GroupingMethod::None
    std::vector<Index> cluster_sizes;  ///< c; empty for GroupingMethod::None
    std::vector<int> iterations;  ///< m iterations made by each mode
    std::vector<bool> converged;  ///< m: shift ≤ tolerance reached (always true in fixed mode for supported modes)
    /// m: the mode had no support (every kernel weight underflowed to 0: a seed far from all
    /// data); it kept its position and is not counted as converged.
    std::vector<bool> no_support;
    Index modes_without_support = 0;  ///< count of true entries in no_support
    Timing timing;
    std::string backend;  ///< backend that ran
    Topology topology;  ///< resolved topology
    /// Neighbour search that ran: "brute force", "grid over dims {0,1}, 40 x 38 cells", "exact
    /// (backend has no truncated kernel yet)", with the reason when a grid was declined.
    std::string search;
    double cutoff = std::numeric_limits<double>::infinity();  ///< cutoff that ran (inf = exact kernel)
    /// Seeds the ascents started from (= number of points for Seeding::AllPoints), and how they
    /// were chosen: "all points", "bins of 0.5 bandwidths (1234 seeds)", "explicit".
    Index seed_count = 0;
    std::string seeding;
};

/// Runs Alg. 4 on `data` (n × k row-major float32, n ≥ 1, finite). Queries/seeds default to the
/// data; pass `seeds` (m × k) to start the ascent elsewhere. Throws InvalidArgument (bad input),
/// BackendUnavailable, DeviceError.
MEANSHIFT_API Result cluster(const Eigen::Ref<const MatrixF>& data, const Options& options,
                             const Eigen::Ref<const MatrixF>* seeds = nullptr);

/// Raw-pointer overload: `data` is n × k row-major, `seeds` m × k row-major or nullptr.
MEANSHIFT_API Result cluster(const float* data, Index n, int k, const Options& options, const float* seeds = nullptr,
                             Index m = 0);

/// Weighted points (sample weights, eq. 1 with a weight per point): `weights` holds n
/// non-negative finite values, not all zero (else InvalidArgument); nullptr = all 1. A point of
/// weight 0 contributes nothing but is still labelled. Implemented as the per-point model's
/// log-weight (a shared bandwidth with weights runs as KernelModel::PerPoint with unit
/// precisions), so every backend supports it, at the per-point kernel's speed.
MEANSHIFT_API Result cluster(const float* data, Index n, int k, const Options& options, const float* weights,
                             const float* seeds, Index m);
MEANSHIFT_API Result cluster(const Eigen::Ref<const MatrixF>& data, const Options& options, const float* weights,
                             const Eigen::Ref<const MatrixF>* seeds = nullptr);

/// Bytes a run of cluster() on n points of k dimensions with these options needs beyond the
/// caller's input, estimated from the sizes alone before anything is allocated: the prepared data
/// (float64 + float32, twice with per-point bandwidths or sample weights), the neighbour search's
/// copy and index, the backend's copy of the points, and the seeds/modes (m seeds; 0 = one per
/// point, the most that bin seeding can give) in the driver, the backend and the result. Meant to
/// err on the high side of the peak (docs/usage.md gives a measurement); saturates at SIZE_MAX.
MEANSHIFT_API std::size_t estimate_memory(Index n, int k, const Options& options, Index m = 0, bool weighted = false);

/// The machine's available physical memory in bytes (Linux: MemAvailable of /proc/meminfo, else
/// the free physical pages); 0 when unknown. Options::max_memory = 0 uses it.
MEANSHIFT_API std::size_t available_memory();

/// The process's peak resident memory in bytes (getrusage's ru_maxrss; 0 where the platform does
/// not report it). Timing::peak_memory_bytes is this value when cluster() returns.
MEANSHIFT_API std::size_t peak_memory_bytes() noexcept;

namespace detail {
class PendingBackend;
}

/// Reusable clusterer: keeps the backend (and its compiled programs / device contexts) alive
/// across runs, and the binding of the last fit() (the prepared data on the device), which
/// binding() exposes for further ascents against the fitted data.
/// The CUDA backend (also "auto" in a build with CUDA) is created on a thread from the constructor
/// on, so that its driver and context start while fit() prepares the data; fit() and backend() wait
/// for it and throw what its creation threw (BackendUnavailable, DeviceError). Other backends are
/// created in the constructor, which throws for them. An unknown or not compiled-in name throws
/// BackendUnavailable in the constructor either way.
class MEANSHIFT_API Clusterer {
public:
    explicit Clusterer(Options options);
    ~Clusterer();
    Clusterer(Clusterer&&) noexcept;
    Clusterer& operator=(Clusterer&&) noexcept;

    Result fit(const Eigen::Ref<const MatrixF>& data, const Eigen::Ref<const MatrixF>* seeds = nullptr);
    /// fit() with sample weights (n values, see cluster(); nullptr = all 1).
    Result fit(const Eigen::Ref<const MatrixF>& data, const float* weights, const Eigen::Ref<const MatrixF>* seeds);
    const Options& options() const noexcept { return options_; }
    Backend& backend();
    /// The binding of the last fit(): its data (prepared units) stay bound and owned by it, so
    /// set_modes()/step() on it run against the fitted data. Throws Error before the first fit().
    Binding& binding();

private:
    Options options_;
    std::unique_ptr<detail::PendingBackend> backend_;  // created on a thread for CUDA, waited for at the bind
    std::unique_ptr<Binding> binding_;
};

}  // namespace meanshift
