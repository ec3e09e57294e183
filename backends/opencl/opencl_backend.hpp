#pragma once
// Internal: the OpenCL backend (Alg. 3 / Alg. 7 on any OpenCL 1.2 device). Exposed to the
// backend's own tests and benchmark (kernel timings); applications use make_backend("opencl").

#include "backends/opencl/cl_devices.hpp"
#include "backends/opencl/kernel_config.hpp"

#include <meanshift/backend.hpp>

#include <optional>
#include <vector>

namespace meanshift::detail {

class OpenCLBackend final : public Backend {
public:
    /// Selects the device (BackendOptions::device_spec, see select_cl_device) and creates a
    /// profiling command queue on the process-wide context of that device.
    explicit OpenCLBackend(const BackendOptions& options);

    std::string name() const override { return "opencl"; }
    std::vector<DeviceInfo> devices() const override { return {device_.info}; }
    Topology resolve_topology(const Topology& requested, const PreparedData& data) const override;
    void bind(const PreparedData& data, const Topology& topology) override;
    void step(const StepRequest& request) override;

    /// The kernel configuration of the last bind() (for benchmarks and tests).
    const KernelConfig& kernel_config() const;
    /// Seconds the kernels themselves ran in the last step(), from OpenCL profiling events.
    double last_kernel_seconds() const noexcept { return last_kernel_seconds_; }
    /// n-loop segments per mode block used by the last step().
    int last_segments() const noexcept { return last_segments_; }
    /// Build log of the kernel program of the last bind() (compiler diagnostics, e.g. register
    /// use with MEANSHIFT_OPENCL_BUILD_OPTIONS=-cl-nv-verbose on NVIDIA).
    std::string build_log() const;
    /// The compiled program as the driver returns it (PTX on NVIDIA), for inspection.
    std::string program_binary() const;

private:
    KernelConfig make_config(const Topology& t, const PreparedData& data) const;
    void ensure_mode_buffers(Index count);
    int choose_segments(int nblocks, Index count) const;

    BackendOptions options_;
    KernelTuning tuning_;
    ClDeviceEntry device_;
    cl::Context context_;
    cl::CommandQueue queue_;
    std::size_t max_work_group_size_ = 0;

    std::optional<KernelConfig> config_;
    Topology topology_;
    int k_ = 0;
    int ntiles_ = 0;
    cl::Program program_;
    cl::Kernel kernel_, combine_;
    cl::Buffer records_, refs_, queries_, out_, partial_;
    Index mode_capacity_ = 0;
    std::size_t partial_capacity_ = 0;  // bytes
    int last_segments_ = 1;
    std::vector<float> host_in_, host_out_;
    double last_kernel_seconds_ = 0;
};

}  // namespace meanshift::detail
