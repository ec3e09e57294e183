#pragma once
// Internal: the Binding lifecycle of the GPU backends (CUDA, OpenCL), run once here for all of them.
// The modes live on the device, split into contiguous shares (one per device; OpenCL: one). Per step:
//   advance(share)  the backend's one hook per share: gather the active modes, the pair kernels'
//                   sums, the finish (new positions, shift², support) on the device, and the records
//                   (mode, shift², status) of the advanced modes downloaded into host memory
//   report          the records unpacked into the StepReport (step_report.hpp), pairs and timing added
//   compact         with retire: the survivors of each share (its Active records, in the active list's
//                   order, which stays the increasing mode order) become its new active list,
//                   uploaded by write_active(); nothing is uploaded when none retired
// set_modes() checks and splits the modes and hands each share to load_modes(); read_modes() converts
// what fetch_modes() downloads. A backend implements device memory, uploads, downloads and launches.

#include <meanshift/backend.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace meanshift::gpu {

/// What a backend's advance() leaves for the base: `count` records of 3 × 32-bit words (mode within
/// the share, shift² as float32 bits, status) in host memory, valid until the next call on the share.
struct ShareStep {
    const std::int32_t* records = nullptr;
    double pairs = -1;  ///< candidate pairs visited (< 0: not counted, the report then says count × n)
    double kernel_seconds = -1;  ///< the share's kernels (< 0: not measured)
};

class GpuBinding : public Binding {
public:
    const PreparedData& data() const noexcept override { return *data_; }
    const Topology& topology() const noexcept override { return topology_; }
    /// Checks the modes (m >= 1, positions given, m · max(k, 3) per share below 2^31: the kernels'
    /// 32-bit indices), splits them into contiguous shares and loads each. Throws InvalidArgument.
    void set_modes(const double* positions, Index m, const double* metric = nullptr) override;
    Index mode_count() const noexcept override { return m_; }
    Index active_count() const noexcept override;
    /// One iteration of every active mode (the lifecycle above). Throws Error before set_modes() and
    /// for a record the kernels left unwritten; DeviceError from the backend's hooks.
    void step(double tol2, bool retire, StepReport& report) override;
    /// All m positions (m × k float64, prepared units). Throws Error before set_modes().
    void read_modes(double* out) const override;

protected:
    /// `who` prefixes the error messages ("opencl", "cuda backend"); `shares` devices share the modes.
    GpuBinding(std::shared_ptr<const PreparedData> data, const Topology& topology, std::string who, std::size_t shares);
    ~GpuBinding() override = default;

    /// One device's contiguous share [m0, m0 + m) of the modes and how many of them are active.
    struct Share {
        Index m0 = 0, m = 0, active = 0;
    };
    const Share& share(std::size_t i) const { return shares_[i]; }
    std::size_t share_count() const noexcept { return shares_.size(); }
    /// Forgets the modes (rebind: new data, set_modes() follows).
    void drop_modes();

    /// Runs f(i) for every share i: sequentially here; a multi-device backend runs them on its devices
    /// in parallel (and makes device i current). Rethrows the first failure after all have finished.
    virtual void for_each_share(const std::function<void(std::size_t)>& f) const;
    /// Uploads share i's m modes (m × k float64, prepared units; metric m × k or null = Euclidean) and
    /// makes them all active in mode order (the list 0 .. m - 1). Called only for m >= 1.
    virtual void load_modes(std::size_t i, const double* positions, Index m, const double* metric) = 0;
    /// Advances the `count` active modes of share i by one iteration (finish on the device, no
    /// retirement) and downloads their records; `tol2` is the float32 convergence threshold.
    virtual ShareStep advance(std::size_t i, Index count, float tol2) = 0;
    /// Uploads share i's new active list: `count` >= 1 indices within the share, increasing.
    virtual void write_active(std::size_t i, const std::int32_t* list, Index count) = 0;
    /// Downloads share i's positions (m × k float32) into host memory and returns them.
    virtual const float* fetch_modes(std::size_t i) const = 0;

    std::shared_ptr<const PreparedData> data_;
    Topology topology_;
    std::string who_;
    int k_ = 0;

private:
    std::vector<Share> shares_;
    Index m_ = 0;
    bool has_modes_ = false;
};

}  // namespace meanshift::gpu
