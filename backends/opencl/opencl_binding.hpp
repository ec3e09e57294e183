#pragma once
// Internal: the OpenCL binding: the data of one run and the modes on one OpenCL device, driven by the
// GPU binding lifecycle (backends/gpu/gpu_binding.hpp). Exposed to the backend's tests and benchmark.

#include "backends/gpu/gpu_binding.hpp"
#include "backends/opencl/cl_devices.hpp"
#include "backends/opencl/kernel_config.hpp"
#include "backends/opencl/pinned_host.hpp"
#include "backends/gpu/tile_layout.hpp"

#include <meanshift/backend.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace meanshift::detail {

/// What a backend and all its bindings share: the device, its context and one profiling queue.
struct ClDeviceState {
    ClDeviceEntry device;
    cl::Context context;
    cl::CommandQueue queue;
    std::size_t max_work_group_size = 0;
    std::size_t max_alloc = 0;  ///< CL_DEVICE_MAX_MEM_ALLOC_SIZE
    unsigned preferred_float_width = 0;  ///< CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT
    bool hardware_fma = false;  ///< CL_FP_FMA in CL_DEVICE_SINGLE_FP_CONFIG
    bool is_gpu() const noexcept { return device.info.kind == "gpu"; }
};

/// The data of one run bound to the device, with the modes on the device: the point records
/// (gpu::TileLayout), all m mode positions (float32), the active list and the per-step report.
/// Shares ownership of the device state and of the PreparedData, so it outlives the backend.
class OpenCLBinding final : public gpu::GpuBinding {
public:
    OpenCLBinding(std::shared_ptr<ClDeviceState> device, std::shared_ptr<const PreparedData> data,
                  const Topology& topology, const KernelConfig& config, int segments);

    /// The step's kernels on positions of its own (query buffers apart from the modes of
    /// set_modes(), which stay untouched): the exact kernels with at least two n-loop segments (the
    /// GEMM kernel: any), so that they leave their sums in the partial buffer and combine_segments
    /// is not run; the range kernels with a sums buffer instead of the finish.
    double accumulate(const double* positions, Index count, double* sums) override;

    /// The kernel configuration (for benchmarks and tests).
    const KernelConfig& kernel_config() const noexcept { return config_; }
    /// n-loop segments per mode block used by the last step().
    int last_segments() const noexcept { return last_segments_; }
    /// Build log of the kernel program (compiler diagnostics, e.g. register use with
    /// OpenCLTuning::extra_build_options = "-cl-nv-verbose" on NVIDIA).
    std::string build_log() const;
    /// The compiled program as the driver returns it (PTX on NVIDIA), for inspection.
    std::string program_binary() const;

protected:
    void load_modes(std::size_t i, const double* positions, Index m, const double* metric) override;
    gpu::ShareStep advance(std::size_t i, Index count, float tol2) override;
    void write_active(std::size_t i, const std::int32_t* list, Index count) override;
    const float* fetch_modes(std::size_t i) const override;

private:
    int choose_segments(int nblocks, Index count) const;
    /// The partial-sum buffer for a step of `count` active modes (approx_mode path) in at least
    /// `min_segments` segments; returns the segments per block and whether combine_segments runs.
    /// The segments are chosen as for max(count, plan) modes (accumulate(): the same for every count up to plan).
    int reserve_partial(Index count, bool& combine, int min_segments = 1, Index plan = 0);
    /// The truncated kernel's step (range_modes): one launch, the finish in the kernel.
    gpu::ShareStep advance_ranges(int count, cl_float tol2f);
    /// The bind-time uploads: the vMF sphere, the exact kernels' point records (tile layout), the
    /// truncated kernel's points and grid; and the step program with its kernels (checked against
    /// the device).
    void upload_sphere();
    void build_kernels();
    void upload_records(gpu::TileLayout& layout);
    void upload_range_points();
    /// Enqueues the range kernel for the `count` slots of `list` (positions in `modes`): it
    /// finishes the modes, or with `sums` (count · accumulators floats) writes their sums there;
    /// then the (non-blocking) read of the pair counts that range_pairs() adds up.
    void enqueue_ranges(const cl::Buffer& modes, const cl::Buffer& list, int count, const cl::Buffer* sums,
                        cl_float tol2f, cl::Event* done);
    double range_pairs() const;
    /// Enqueues the step kernel (and combine_segments when `combine`) for the `count` slots of
    /// `list` (positions in `modes`) in `nblocks` blocks of `segments` n-loop segments on `groups`
    /// work-groups.
    void enqueue_step(const cl::Buffer& modes, const cl::Buffer& list, int count, int nblocks, int segments, int groups,
                      cl_float tol2f, bool retire, bool combine, cl::Event* done, cl::Event* combined);
    /// The arguments of the step kernels (approx_mode*, gemm_modes) from index 0, and of
    /// MS_FINISH_PARAMS (approx_mode_common.clh) from index i (returns the next index).
    void set_step_args(cl::Kernel& kern, const cl::Buffer& modes, const cl::Buffer& list, int count, int nblocks,
                       int segments, cl_float tol2f, bool retire) const;
    int set_finish_args(cl::Kernel& kern, int i, cl_float tol2f, bool retire) const;
    /// KernelConfig::log2_shift: the max pass for the `count` slots of `list` (positions in `modes`)
    /// into log2_shift_, before the step kernels that read it (the GEMM kernel's own pass runs on the
    /// step's nblocks, segments and groups; log2_weight_max ignores them). Nothing otherwise.
    void enqueue_max(const cl::Buffer& modes, const cl::Buffer& list, int count, int nblocks, int segments, int groups);
    /// log2_shift_ for at least `count` slots (at least one: the kernels always take the argument).
    void reserve_log2_shift(Index count);

    std::shared_ptr<ClDeviceState> dev_;
    KernelConfig config_;
    int tuned_segments_ = 0;
    int ntiles_ = 0;
    cl::Program program_;
    cl::Kernel kernel_, combine_;
    // KernelConfig::log2_shift: the max pass (gemm_modes of max_program_, or log2_weight_max of
    // program_ over points_, precision_, log_weight_ with point i, dim d at i · max_ps_ + d · max_ds_)
    // and the per-slot ordered maxima it leaves for the step (also bound, unused, without the shift).
    cl::Program max_program_;
    cl::Kernel max_kernel_;
    cl::Buffer log2_shift_;
    cl::Buffer sphere_;  ///< vMF: [origin, radius] (MS_SPHERE), else one unused float
    std::size_t log2_shift_capacity_ = 0;  // bytes
    int max_ps_ = 0, max_ds_ = 0;
    cl::Buffer records_, centres_, radii_;
    cl::Buffer lcw_;  // GEMM kernel: L c_i per record slot (per-point H with a cutoff), else 1 float
    // truncated kernel: points in the prepared (cell-sorted) order and the grid (g = 0: none)
    cl::Buffer points_, precision_, log_weight_, grid_start_, grid_i_, grid_f_;
    int g_ = 0;
    // range_modes_wide (f_vppu = f_load = 32) for steps with too few modes to fill the device;
    // null when KernelConfig::range_wide is off.
    cl::Kernel wide_kernel_;
    cl::Buffer group_pairs_;  // per work-group candidate pairs of a step (cl_long)
    std::size_t group_pairs_capacity_ = 0;
    std::vector<cl_long> host_group_pairs_;
    // modes on the device
    bool has_metric_ = false;
    cl::Buffer modes_, metric_, active_list_, next_list_, report_, counter_, partial_;
    std::size_t partial_capacity_ = 0;  // bytes
    // accumulate(): its positions, their slots 0 .. capacity - 1 and (range kernels) their sums
    cl::Buffer queries_, query_list_, query_sums_;
    Index query_capacity_ = 0;
    int last_segments_ = 1;
    // Pinned host memory for the step's report (3 · count ints) and read_modes (m · k floats),
    // allocated by set_modes so that the first step pays no allocation or page faults.
    PinnedHost staging_;
};

}  // namespace meanshift::detail
