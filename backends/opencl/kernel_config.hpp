#pragma once
// Internal: the compile-time configuration of one OpenCL kernel build (the -D options) and the
// checks of a configuration against the device's limits.

#include <meanshift/backend.hpp>

#include <cstddef>
#include <string>

namespace meanshift::detail {

/// Exponent form evaluated per pair (see kernels/meanshift_device.h).
enum class ExponentForm { Direct, Expanded };

struct KernelConfig {
    int k = 0;
    bool per_point = false;        ///< KernelModel::PerPoint
    ExponentForm form = ExponentForm::Expanded;
    bool preload = false;          ///< Alg. 7 (approx_modes_preload) instead of Alg. 3
    int tile = 128;                ///< TILE: points per tile / preload batch
    int tau = 128;                 ///< work-group size
    int f_vppu = 1;
    int f_load = 1;
    int modes_per_pu = 1;          ///< r: modes each PU carries (f_vppu == 1 only)
    bool nv_ex2 = false;           ///< NVIDIA: exp2 as inline PTX ex2.approx.ftz (one MUFU op)

    /// Floats per point record, padded to a multiple of 4 (float4 loads).
    int stride() const noexcept;
    /// Modes one work-group handles per block: (tau / f_vppu) · r.
    int modes_per_block() const noexcept { return tau / f_vppu * modes_per_pu; }
    /// Floats of the vPPU reduction buffer: tau PUs x (S0 + S1) accumulators.
    int reduction_floats() const noexcept { return tau * ((per_point ? k : 1) + k); }
    /// Local memory the kernel declares: the preload batch and the reduction buffer.
    std::size_t local_bytes() const noexcept;
    /// Kernel function name.
    const char* kernel_name() const noexcept { return preload ? "approx_modes_preload" : "approx_mode"; }
    /// "-D K=3 -D STRIDE=4 ... -cl-fast-relaxed-math ..."
    std::string build_options() const;
    std::string extra_build_options;  ///< appended to build_options()
};

/// Backend-level choices the Topology does not carry, read once from the environment (for
/// experiments and benchmarks; docs/backend-opencl.md):
///   MEANSHIFT_OPENCL_MODES_PER_PU   r, modes per PU when f_vppu = 1 (0/unset = automatic)
///   MEANSHIFT_OPENCL_EXPONENT       "expanded" (default) or "direct"
///   MEANSHIFT_OPENCL_SEGMENTS       n-loop segments per mode block (0/unset = automatic)
///   MEANSHIFT_OPENCL_BUILD_OPTIONS  appended to the kernel build options (e.g. -cl-nv-verbose)
///   MEANSHIFT_OPENCL_NV_EX2         0: on NVIDIA use native_exp2 instead of inline PTX ex2
/// Throws InvalidArgument for bad values.
struct KernelTuning {
    int modes_per_pu = 0;
    ExponentForm form = ExponentForm::Expanded;
    int segments = 0;
    bool nv_ex2 = true;
    std::string extra_build_options;
    static KernelTuning from_environment();
};

/// Default r for f_vppu == 1, from the registers one mode's state needs (measured on the H200:
/// k = 3 gives r = 4 for a shared H, and for per-point H r = 2 with preloading, 4 without).
int default_modes_per_pu(int k, bool per_point, bool preload);

/// Checks `cfg` against the device: work-group size ≤ max_work_group_size, local memory ≤
/// local_mem_size. Throws InvalidArgument naming the limit and the device value.
void check_against_device(const KernelConfig& cfg, std::size_t max_work_group_size,
                          std::size_t local_mem_size, const std::string& device_name);

}  // namespace meanshift::detail
