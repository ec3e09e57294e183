#pragma once
// Internal: the OpenCL backend (Alg. 3 / Alg. 7 on any OpenCL 1.2 device): device selection, plan
// (topology and kernel configuration) and bind(); the binding is opencl_binding.hpp.
// Exposed to the backend's own tests and benchmark (kernel configuration, build log);
// applications use make_backend("opencl").

#include "backends/opencl/opencl_binding.hpp"

#include <meanshift/backend.hpp>

#include <memory>
#include <vector>

namespace meanshift::detail {

class OpenCLBackend final : public Backend {
public:
    /// Selects the device (BackendOptions::device_spec, see select_cl_device) and creates a
    /// profiling command queue on the process-wide context of that device. Throws
    /// InvalidArgument for bad options (preload_size < 0, OpenCLTuning out of range).
    explicit OpenCLBackend(const BackendOptions& options);

    std::string name() const override { return "opencl"; }
    bool supports_cutoff() const override { return true; }
    /// Every profile: compact ones on the range kernels (never GEMM), vMF anywhere (the finish projects).
    bool supports_profile(KernelProfile) const override { return true; }
    std::vector<DeviceInfo> devices() const override { return {dev_->device.info}; }
    /// Brute-force k-NN (kernels/knn.cl, the body shared with CUDA in meanshift_knn.h).
    int max_neighbours() const override;
    MatrixD nearest_distances(const MatrixF& points, const MatrixF& queries, int count) override;
    Topology resolve_topology(const Topology& requested, const PreparedData& data) const override;
    std::unique_ptr<Binding> bind(std::shared_ptr<const PreparedData> data, const Topology& topology) override;
    /// bind() with the concrete type (tests and bench_opencl read the kernel configuration).
    std::unique_ptr<OpenCLBinding> bind_opencl(std::shared_ptr<const PreparedData> data, const Topology& topology);

    /// Whether Alg. 7 preloading is used: BackendOptions::preload, Auto = on for GPUs, off for CPU
    /// and accelerator devices (docs/tuning.md).
    bool preload() const noexcept;
    /// The kernel configuration bind() would use for this resolved topology.
    KernelConfig make_config(const Topology& t, const PreparedData& data) const;
    /// Whether topology `t` (requested or resolved) runs the GEMM kernel (gemm_modes.cl):
    /// PairForm::Gemm, or Auto with k >= the crossover, f_vppu = f_load = 1 and a usable tau.
    bool gemm_for(const Topology& t, const PreparedData& data) const;

    /// Vector width of the CPU shape (approx_mode_cpu) for topology `t` (requested or
    /// resolved), 0 for the GPU shape: CPU and accelerator devices with a preferred float width
    /// >= 4, the exact kernel, the expanded exponent, f_vppu = f_load = 1, no preloading asked
    /// for, not the GEMM kernel.
    int cpu_shape_width(const Topology& t, const PreparedData& data) const;

private:
    /// The CPU shape's conditions except the GEMM choice (gemm_for asks this one).
    bool cpu_shape_possible(const Topology& t, const PreparedData& data) const;
    Topology resolve_gemm_topology(const Topology& requested, const PreparedData& data) const;
    BackendOptions options_;
    std::shared_ptr<ClDeviceState> dev_;
};

}  // namespace meanshift::detail
