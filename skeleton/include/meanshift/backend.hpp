#pragma once
/// @file backend.hpp
/// The interface a backend implements. The skeleton (driver, convergence, grouping, validation)
/// lives once in the library; a backend binds the data (Backend::bind) and its Binding advances
/// the active modes by one iteration of Alg. 3 (approxMode) over the n data points, keeping the
/// modes on the device; it also reports the devices it sees.

#include <meanshift/export.hpp>
#include <meanshift/kernel_profile.hpp>
#include <meanshift/neighbours.hpp>
#include <meanshift/topology.hpp>
#include <meanshift/tuning.hpp>
#include <meanshift/types.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace meanshift {

/// Which kernel form the backend must evaluate (compile-time option of the device kernels).
enum class KernelModel {
    /// One shared diagonal H for all points. The skeleton has already whitened the data
    /// (divided dimension d by h_d), so the kernel is the unit Gaussian:
    ///   e_i = exp(-|y - x_i|² / 2),  y' = Σ e_i x_i / Σ e_i.
    Shared,
    /// Per-point diagonal H_i (eq. 5-6). With w_id = 1/H_i,dd ("precision") and
    /// c_i = log|H_i|^{-1/2} - max_j log|H_j|^{-1/2} ("log_weight"):
    ///   e_i = exp(c_i - ½ Σ_d w_id (y_d - x_id)²),
    ///   y'_d = Σ_i e_i w_id x_id / Σ_i e_i w_id      (eq. 1 with H_h from eq. 4).
    PerPoint,
};

/// Data prepared by the skeleton once per run and bound to a backend (uploaded once).
/// All matrices are row-major n × k; coordinates are centred (the data's bounding-box centre is
/// subtracted, so data far from the origin keep float32 precision) and, for KernelModel::Shared,
/// whitened to unit bandwidth. float64 and float32 copies hold the same values.
struct MEANSHIFT_API PreparedData {
    KernelModel model = KernelModel::Shared;
    /// Weight profile g(q) of every pair (kernel_profile.hpp); KernelModel says which bandwidths.
    /// Compact profiles come with cutoff2 = 1 (their support), so a pair beyond it weighs 0 exactly.
    KernelProfile profile = KernelProfile::Gaussian;
    /// KernelProfile::VonMisesFisher: after each step a mode y is projected onto the sphere
    /// |y − sphere_origin| = sphere_radius (prepared units: the unit sphere of the caller's
    /// coordinates, which centring moved to sphere_origin and whitening scaled to 1/h), i.e.
    /// y' = sphere_origin + sphere_radius · (y − sphere_origin) / |y − sphere_origin|.
    /// sphere_radius = 0: no projection (every other profile); sphere_origin then empty.
    VectorD sphere_origin;
    double sphere_radius = 0;
    MatrixD points;  ///< n × k
    MatrixD precision;  ///< n × k, 1/H_i,dd in prepared units (PerPoint only, else 0 × 0)
    VectorD log_weight;  ///< n, c_i ≤ 0 (PerPoint only, else empty)
    MatrixF points_f;  ///< float32 copy of points
    MatrixF precision_f;  ///< float32 copy of precision
    VectorF log_weight_f;  ///< float32 copy of log_weight

    /// Truncated kernel: a pair whose Mahalanobis D² (prepared units; PerPoint: with the point's own
    /// precision, Σ_d w_id (y_d − x_id)²) exceeds cutoff2 gets weight 0. inf = the exact kernel.
    /// Backends that do not report Backend::supports_cutoff() are always given inf.
    double cutoff2 = std::numeric_limits<double>::infinity();
    /// Prepared row -> the caller's row (the search sorts the points by grid cell or tree leaf); empty = identity.
    std::vector<Index> original;
    /// The neighbour-search grid (rows sorted by its cells), or none. Backends reach it through
    /// search() (search()->cell_grid() where device kernels walk its cells), not directly.
    std::optional<CellGrid> grid;
    /// The kd-tree search (rows sorted by its leaves), or none. Never set together with `grid`.
    /// Backends reach it through search() only; the GPU backends run brute force with it.
    std::optional<KdTree> tree;

    Index n() const noexcept { return points.rows(); }
    int k() const noexcept { return static_cast<int>(points.cols()); }

    /// The search contract (NeighbourRanges) of the chosen search: the grid's, the tree's, or brute
    /// force over [0, n) when neither is set. It refers to `grid` / `tree` of this object: valid
    /// while this PreparedData lives at its address unchanged (a Binding asks once, at bind time,
    /// holding the data). Throws InvalidArgument when both `grid` and `tree` are set.
    std::unique_ptr<const NeighbourRanges> search() const;

    /// Derives everything that follows from `model`, `points` and (PerPoint) `precision`:
    /// log_weight c_i = ½ Σ_d log precision_id − max_j c_j (= log|H_i|^{-1/2} up to a common shift,
    /// which cancels in eq. 5-6), and the float32 copies. The skeleton calls it; code that builds
    /// PreparedData by hand (tests, benchmarks) calls it instead of repeating the derivation.
    void finalize();
};

/// What became of one mode in a step (StepReport::status).
enum class ModeStatus : std::uint8_t {
    Active = 0,  ///< moved by more than the tolerance: stays in the active set
    Converged = 1,  ///< squared shift ≤ tol² (Alg. 4/5): left the active set
    NoSupport = 2,  ///< Σ e_i underflowed to 0 (no point within reach): kept its position, left the active set
};

/// What one Binding::step() reports, one entry per mode it advanced (in no particular order).
struct StepReport {
    std::vector<Index> mode;  ///< index of the mode in [0, m) (the order given to set_modes)
    std::vector<double> shift2;  ///< its squared shift in the metric given to set_modes (Alg. 5)
    std::vector<ModeStatus> status;  ///< Active, Converged or NoSupport
    double kernel_seconds =
        -1;  ///< time of the step's kernels (GPU: device time; host backends: wall time of the pair loop); < 0 when not measured
    /// Candidate (mode, point) pairs the step evaluated: Σ over the advanced modes of the rows they
    /// visited (active × n without a neighbour grid); < 0 when the backend does not count them
    /// (the driver then counts active × n).
    double pairs = -1;
    void clear()
    {
        pairs = -1;
        mode.clear();
        shift2.clear();
        status.clear();
        kernel_seconds = -1;
    }
};

/// Data bound to a backend together with the modes being advanced over it: the state of one
/// mean-shift run on a device. A Binding owns what it uses: it holds shared ownership of the
/// PreparedData, of the device context it runs on and of its device buffers (points, modes,
/// active set) and tuning, so it stays valid after the Backend or the caller's data are gone.
/// Modes live where the data are (device memory for GPU backends, in the backend's precision:
/// float32 on GPUs, float64 in the serial oracle); only per-mode shifts and statuses cross to
/// the host each step, and the final positions once (read_modes()).
class MEANSHIFT_API Binding {
public:
    Binding() = default;
    virtual ~Binding();
    Binding(const Binding&) = delete;
    Binding& operator=(const Binding&) = delete;

    /// The bound data (prepared units).
    virtual const PreparedData& data() const noexcept = 0;
    /// The resolved topology the binding runs with.
    virtual const Topology& topology() const noexcept = 0;

    /// Places m ≥ 1 modes at `positions` (m × k row-major, prepared units) and makes them all
    /// active. `metric` (m × k, or nullptr = Euclidean in prepared units): per-mode weights of the
    /// squared shift Σ_d metric_qd (y'_d − y_d)² that step() reports (Alg. 5 with the seed's own
    /// H_i⁻¹ when the seeds are the data points). Throws InvalidArgument (m < 1), DeviceError
    /// (device out of memory).
    virtual void set_modes(const double* positions, Index m, const double* metric = nullptr) = 0;

    /// Number of modes set by set_modes().
    virtual Index mode_count() const noexcept = 0;
    /// Modes still in the active set.
    virtual Index active_count() const noexcept = 0;

    /// One iteration of Alg. 3 for every active mode. A mode whose squared shift is ≤ tol2 leaves
    /// the active set as Converged; a mode with no support keeps its position and leaves as
    /// NoSupport. With retire = false (fixed-iteration runs) no mode leaves; statuses are still
    /// reported. `report` is cleared and filled with one entry per mode advanced. Throws Error
    /// before set_modes(), DeviceError on a device failure.
    virtual void step(double tol2, bool retire, StepReport& report) = 0;

    /// Current positions of all m modes (m × k row-major, prepared units) into `out`.
    virtual void read_modes(double* out) const = 0;

    /// Partial sums of Alg. 3 over the bound points, for `count` positions (count × k row-major,
    /// prepared units), without moving or reporting any mode: adds to `sums` (count × sum_width(),
    /// row-major) per position [S0 | S1], where S1_d = Σ_i e_i (w_id) x_id and S0 = Σ_i e_i
    /// (Shared: one value) or S0_d = Σ_i e_i w_id (PerPoint: k values), e_i = exp(c_i − ½D²) the
    /// kernel weight of point i (0 beyond the cutoff); y'_d = S1_d / S0_d is then Alg. 3 line 20.
    /// Sums of disjoint point sets add up, which is what the MPI ring strategy relies on (docs/mpi.md).
    /// Independent of set_modes() (the modes set there are neither moved nor needed). Returns the
    /// (position, point) pairs visited (count × n without a neighbour search). The host backends
    /// (serial, openmp) sum in float64; the GPU backends (cuda, opencl) run their step's kernels, so
    /// their sums are float32 terms accumulated in float32, converted to float64 here. The default
    /// (a backend that does not override it) throws NotSupported.
    virtual double accumulate(const double* positions, Index count, double* sums);
    /// Columns per position of accumulate()'s sums: 1 + k (Shared) or 2k (PerPoint).
    Index sum_width() const noexcept;

    /// Convenience for tests and benchmarks: one step of `count` modes at `positions` into `out`
    /// (count × k each, prepared units), i.e. set_modes + step(retire = false) + read_modes.
    void step_once(const double* positions, double* out, Index count, StepReport* report = nullptr);
};

/// A device as a backend sees it.
struct DeviceInfo {
    int index = 0;
    std::string name;  ///< e.g. "NVIDIA H200", "pthread-AVX512 (PoCL)", "2 threads, AVX-512"
    std::string kind;  ///< "cpu", "gpu", "accelerator"
    int compute_units = 0;  ///< PPUs (SMs, compute units, cores)
    int pus_per_ppu = 0;  ///< default τ
    std::size_t global_memory = 0;  ///< bytes
    std::size_t local_memory = 0;  ///< bytes per PPU (work-group / block), 0 if none
    /// How BackendOptions names this device: BackendOptions::device_spec ("P:D") for OpenCL;
    /// empty where BackendOptions::devices takes `index` (CUDA) or there is one device.
    std::string spec;
};

/// Abstract backend: device discovery, topology rules and binding. Instances are created by the
/// registry (registry.hpp); the steps run on the Binding that bind() returns.
class MEANSHIFT_API Backend {
public:
    Backend() = default;
    virtual ~Backend();
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    virtual std::string name() const = 0;
    /// The devices this instance will use.
    virtual std::vector<DeviceInfo> devices() const = 0;
    /// Fill zero fields of `requested` with this backend's defaults for `data`, then validate
    /// (generic rules via validate_topology plus backend limits, e.g. the largest k it runs).
    /// Changes no device state. Throws InvalidArgument.
    virtual Topology resolve_topology(const Topology& requested, const PreparedData& data) const = 0;
    /// Uploads `data` once and returns the binding that runs steps on it with `topology` (resolved
    /// first, so zero fields take the defaults). The binding shares ownership of `data` and of this
    /// backend's device context. Throws InvalidArgument, DeviceError.
    virtual std::unique_ptr<Binding> bind(std::shared_ptr<const PreparedData> data, const Topology& topology) = 0;
    /// Whether the binding honours PreparedData::cutoff2 (masks pairs beyond it) and may use
    /// PreparedData::grid. A backend returning false is given cutoff2 = inf and no grid by the
    /// driver (the exact kernel).
    virtual bool supports_cutoff() const { return false; }
    /// Whether bindings evaluate PreparedData::profile (and its sphere projection). cluster() throws
    /// BackendUnavailable for a profile the chosen backend lacks, and "auto" skips such backends.
    virtual bool supports_profile(KernelProfile profile) const { return profile == KernelProfile::Gaussian; }

    /// Largest `count` that nearest_distances() takes on this backend (0: none; every backend of
    /// the library has one). The k-nearest-neighbour search of the bandwidth selection
    /// (bandwidth_selection.hpp) runs here: serial and openmp search a kd-tree (nanoflann,
    /// up to 16 dimensions; brute force above) on one thread or all of them, cuda and opencl by
    /// brute force on the GPU (kernels/meanshift_knn.h, one source).
    virtual int max_neighbours() const { return 0; }
    /// For each of the m rows of `queries` (m × k row-major), the `count` smallest squared
    /// Euclidean distances to the n rows of `points` (n × k row-major, same k), ascending: m × count
    /// (squared data units; float32 arithmetic on GPUs, float64 on the host backends). A query
    /// that is also a row of `points` finds itself at distance 0. Needs finite data, n ≥ 1, m ≥ 1,
    /// 1 ≤ count ≤ min(n, max_neighbours()). Throws InvalidArgument, DeviceError.
    virtual MatrixD nearest_distances(const MatrixF& points, const MatrixF& queries, int count);
};

}  // namespace meanshift
