#pragma once
/// @file backend.hpp
/// The interface a backend implements. The skeleton (driver, convergence, grouping, validation)
/// lives once in the library; a backend only advances a set of active modes by one iteration of
/// Alg. 3 (approxMode) over all n data points, and reports the devices it sees.

#include <meanshift/topology.hpp>
#include <meanshift/types.hpp>

#include <memory>
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
struct PreparedData {
    KernelModel model = KernelModel::Shared;
    MatrixD points;       ///< n × k
    MatrixD precision;    ///< n × k, 1/H_i,dd in prepared units (PerPoint only, else 0 × 0)
    VectorD log_weight;   ///< n, c_i ≤ 0 (PerPoint only, else empty)
    MatrixF points_f;     ///< float32 copy of points
    MatrixF precision_f;  ///< float32 copy of precision
    VectorF log_weight_f; ///< float32 copy of log_weight

    Index n() const noexcept { return points.rows(); }
    int k() const noexcept { return static_cast<int>(points.cols()); }

    /// Derives everything that follows from `model`, `points` and (PerPoint) `precision`:
    /// log_weight c_i = ½ Σ_d log precision_id − max_j c_j (= log|H_i|^{-1/2} up to a common shift,
    /// which cancels in eq. 5-6), and the float32 copies. The skeleton calls it; code that builds
    /// PreparedData by hand (tests, benchmarks) calls it instead of repeating the derivation.
    void finalize();
};

/// Optional truncated-kernel candidate list (CSR): for active query q, only data points
/// indices[offsets[q] .. offsets[q+1]) are visited. Backends that do not support it throw
/// NotSupported when it is non-null.
struct CandidateList {
    std::vector<Index> offsets;  ///< count + 1 entries
    std::vector<Index> indices;  ///< data point indices
};

/// One iteration of Alg. 3 for `count` active modes.
struct StepRequest {
    const double* positions = nullptr;  ///< count × k row-major, current y_p (prepared units)
    double* out = nullptr;              ///< count × k row-major, receives the new y_p
    Index count = 0;
    const CandidateList* candidates = nullptr;  ///< nullptr = all n points (exact Gaussian)
};

/// Per-backend options chosen by the user at run time.
struct BackendOptions {
    std::vector<int> devices;   ///< device indices to use (multi-device backends); empty = default
    std::string device_spec;    ///< OpenCL "P:D" (platform:device); empty = first GPU, else first
    bool preload = false;       ///< Alg. 7 local-memory preloading (OpenCL, CUDA)
    int preload_size = 0;       ///< points staged per batch / tile width; 0 = backend default
    int threads = 0;            ///< OpenMP threads (z); 0 = all
};

/// A device as a backend sees it.
struct DeviceInfo {
    int index = 0;
    std::string name;           ///< e.g. "NVIDIA H200", "pthread-AVX512 (PoCL)", "2 threads, AVX-512"
    std::string kind;           ///< "cpu", "gpu", "accelerator"
    int compute_units = 0;      ///< PPUs (SMs, compute units, cores)
    int pus_per_ppu = 0;        ///< default τ
    std::size_t global_memory = 0;  ///< bytes
    std::size_t local_memory = 0;   ///< bytes per PPU (work-group / block), 0 if none
};

/// Abstract backend. Instances are created by the registry (registry.hpp).
class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    /// The devices this instance will use.
    virtual std::vector<DeviceInfo> devices() const = 0;
    /// Fill zero fields of `requested` with this backend's defaults for `data`, then validate
    /// (generic rules via validate_topology plus backend limits). Throws InvalidArgument.
    virtual Topology resolve_topology(const Topology& requested, const PreparedData& data) const = 0;
    /// Bind the data (upload once) and the resolved topology for the following step() calls.
    /// `data` stays alive and unchanged until the next bind() or destruction.
    virtual void bind(const PreparedData& data, const Topology& topology) = 0;
    /// Advance request.count modes by one iteration (Alg. 3 for each). A mode with no support
    /// (Σ e_i underflows to 0) keeps its position.
    virtual void step(const StepRequest& request) = 0;
};

}  // namespace meanshift
