#pragma once
// Internal: the compile-time configuration of one OpenCL kernel build (the -D options), the
// choice of the preload batch, and the checks of a configuration against the device's limits.

#include <meanshift/backend.hpp>
#include <meanshift/tuning.hpp>

#include <cstddef>
#include <string>

namespace meanshift::detail {

/// Largest k the OpenCL kernels are built for. Each PU keeps the state of the r modes it carries
/// in private memory (S0, S1, the tile's raw sums and query terms: about 4k + 2·NS0 floats a mode,
/// NS0 = 1 or k) plus a private copy of one point record (STRIDE floats), and the program is
/// specialised with -D K=k. At k = 10^6 that is tens of MB per work-item: PoCL spent 407 s
/// compiling and then crashed. Measured on PoCL 3 (2 cores, n = 2, one step): per-point H runs at
/// k = 3072 (96 KiB private a work-item, bind + step 1.0 s) and crashes at k = 4096 (128 KiB);
/// shared H runs at k = 4096 (80 KiB). The limits keep a margin below that: k ≤ kMaxDimensions
/// (per-point state at r = 1: 64 KiB) and private state ≤ kMaxPrivateBytes for any r.
/// resolve_topology() refuses larger values with InvalidArgument before any program build.
constexpr int kMaxDimensions = 2048;
constexpr std::size_t kMaxPrivateBytes = 72 * 1024;

struct KernelConfig {
    int k = 0;
    bool per_point = false;        ///< KernelModel::PerPoint
    ExponentForm form = ExponentForm::Expanded;
    bool preload = false;          ///< Alg. 7 (approx_modes_preload) instead of Alg. 3
    bool ranges = false;           ///< truncated kernel over the cell grid's ranges (range_modes.cl); r = 1, no preload
    bool range_wide = false;       ///< also build range_modes_wide (32 PUs a mode, for steps with few modes)
    int tile = 128;                ///< TILE: points per tile / preload batch
    int tau = 128;                 ///< work-group size
    int f_vppu = 1;
    int f_load = 1;
    int modes_per_pu = 1;          ///< r: modes each PU carries (f_vppu == 1 only)
    bool nv_ex2 = false;           ///< NVIDIA: exp2 as inline PTX ex2.approx.ftz (one MUFU op)
    std::string extra_build_options;  ///< appended to build_options()

    /// Floats per point record (gpu::record_stride: the one definition).
    int stride() const noexcept;
    /// Modes one work-group handles per block: (tau / f_vppu) · r.
    int modes_per_block() const noexcept { return tau / f_vppu * modes_per_pu; }
    /// Accumulators per mode: S0 (1 or k) + S1 (k).
    int accumulators() const noexcept { return (per_point ? k : 1) + k; }
    /// Floats of the vPPU reduction buffer: tau PUs x accumulators.
    int reduction_floats() const noexcept { return tau * accumulators(); }
    /// Bytes of the reduction buffer (only declared when f_load > 1).
    std::size_t reduction_bytes() const noexcept;
    /// Private memory one work-item uses (estimate of the kernels' arrays: r modes' state and one
    /// record copy), checked against kMaxPrivateBytes.
    std::size_t private_bytes() const noexcept;
    /// Local memory the kernel declares: the preload batch and the reduction buffer.
    std::size_t local_bytes() const noexcept;
    /// Kernel function name.
    const char* kernel_name() const noexcept
    {
        return ranges ? "range_modes" : preload ? "approx_modes_preload" : "approx_mode";
    }
    /// "-D K=3 -D STRIDE=4 ... -cl-fast-relaxed-math ..."
    std::string build_options() const;
};

/// Checks the OpenCL tuning fields (BackendOptions::opencl): modes_per_pu 0..16, segments
/// 0..2^20. Throws InvalidArgument naming the field.
void validate_tuning(const OpenCLTuning& t);

/// Default r for f_vppu == 1, from the registers one mode's state needs (measured on the H200:
/// k = 3 gives r = 4 for a shared H, and for per-point H r = 2 with preloading, 4 without).
int default_modes_per_pu(int k, bool per_point, bool preload);

/// Local memory a default batch leaves for what the OpenCL compiler adds to the declared arrays.
constexpr std::size_t kImplicitLocalBytes = 256;

/// Largest preload batch (points) of at most `want` whose records fit in `local_mem_size` bytes
/// (less kImplicitLocalBytes) next to the reduction buffer of `cfg` (cfg.tile is ignored): a power
/// of two when it has to shrink; 0 when not even one record fits.
int largest_fitting_batch(const KernelConfig& cfg, int want, std::size_t local_mem_size);

/// Checks `cfg` against the device: work-group size ≤ max_work_group_size, local memory ≤
/// local_mem_size, private memory ≤ kMaxPrivateBytes. Throws InvalidArgument naming the limit and the device value.
void check_against_device(const KernelConfig& cfg, std::size_t max_work_group_size,
                          std::size_t local_mem_size, const std::string& device_name);

}  // namespace meanshift::detail
