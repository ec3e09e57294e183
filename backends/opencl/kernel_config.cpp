#include "backends/opencl/kernel_config.hpp"

#include "backends/gpu/tile_layout.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <sstream>

namespace meanshift::detail {

int KernelConfig::stride() const noexcept { return gpu::record_stride(k, per_point); }

std::size_t KernelConfig::reduction_bytes() const noexcept
{
    return f_load > 1 ? static_cast<std::size_t>(reduction_floats()) * sizeof(float) : 0;
}

std::size_t KernelConfig::private_bytes() const noexcept
{
    const int ns0 = per_point ? k : 1;
    const std::size_t per_mode = static_cast<std::size_t>(2 * ns0 + 4 * k + 2);  // S0, s0, S1, s1, q, qx, cq, idx
    return (static_cast<std::size_t>(modes_per_pu) * per_mode + static_cast<std::size_t>(stride())) * sizeof(float);
}

std::size_t KernelConfig::local_bytes() const noexcept
{
    // range_modes adds the group's box: 2 · 16 ints (MS_MAX_GRID_DIMS of meanshift_ranges.h).
    return (preload ? gpu::tile_bytes(k, per_point, tile) : 0) + reduction_bytes() + (ranges ? 128 : 0);
}

std::string KernelConfig::build_options() const
{
    std::ostringstream o;
    o << "-D K=" << k << " -D STRIDE=" << stride() << " -D TILE=" << tile << " -D TAU=" << tau
      << " -D F_VPPU=" << f_vppu << " -D F_LOAD=" << f_load << " -D MODES_PER_PU=" << modes_per_pu
      << " -D MODEL_PER_POINT=" << (per_point ? 1 : 0)
      << " -D EXPANDED=" << (form == ExponentForm::Expanded ? 1 : 0) << (nv_ex2 ? " -D MS_NV_EX2=1" : "")
      << (range_wide ? " -D MS_RANGE_WIDE=1" : "")
      // exp2 through the hardware unit, denormals flushed (weights below 2^-126 are noise);
      // the padding records use a finite log-weight, so finite-math is safe.
      << " -cl-fast-relaxed-math -cl-mad-enable -cl-denorms-are-zero";
    if (!extra_build_options.empty()) o << ' ' << extra_build_options;
    return o.str();
}

void validate_tuning(const OpenCLTuning& t)
{
    if (t.modes_per_pu < 0 || t.modes_per_pu > 16)
        throw InvalidArgument("opencl: tuning opencl.modes_per_pu must be 0 (automatic) .. 16, got " +
                              std::to_string(t.modes_per_pu));
    if (t.segments < 0 || t.segments > (1 << 20))
        throw InvalidArgument("opencl: tuning opencl.segments must be 0 (automatic) .. 1048576, got " +
                              std::to_string(t.segments));
    if (t.exponent != ExponentForm::Expanded && t.exponent != ExponentForm::Direct)
        throw InvalidArgument("opencl: tuning opencl.exponent must be Expanded or Direct");
}

int default_modes_per_pu(int k, bool per_point, bool preload)
{
    const int state = per_point ? 6 * k : 3 * k + 3;  // registers one mode needs, roughly
    // Without preloading every PU loads the per-point records (2 float4) from global memory
    // itself: more modes per load pay off (H200, k = 3: r = 4 1.48e12 vs r = 2 0.94e12 pairs/s).
    const int budget = per_point && !preload ? 96 : 48;
    return std::clamp(budget / state, 1, 4);
}

int largest_fitting_batch(const KernelConfig& cfg, int want, std::size_t local_mem_size)
{
    // Compilers add a little local memory of their own (NVIDIA's OpenCL: 16 bytes on the H200, so a
    // batch that filled the 48 KiB exactly failed at bind()); the default batch leaves room for it.
    const std::size_t usable = local_mem_size > kImplicitLocalBytes ? local_mem_size - kImplicitLocalBytes : 0;
    const std::size_t red = cfg.reduction_bytes();
    if (red >= usable) return 0;
    const std::size_t record = gpu::tile_bytes(cfg.k, cfg.per_point, 1);
    const std::size_t fit = (usable - red) / record;
    if (fit >= static_cast<std::size_t>(want)) return want;
    if (fit == 0) return 0;
    int p = 1;
    while (static_cast<std::size_t>(p) * 2 <= fit) p *= 2;
    return p;
}

void check_against_device(const KernelConfig& cfg, std::size_t max_work_group_size,
                          std::size_t local_mem_size, const std::string& device_name)
{
    if (static_cast<std::size_t>(cfg.tau) > max_work_group_size)
        throw InvalidArgument("opencl: tau (work-group size) " + std::to_string(cfg.tau) +
                              " exceeds CL_DEVICE_MAX_WORK_GROUP_SIZE = " + std::to_string(max_work_group_size) +
                              " of " + device_name);
    if (cfg.private_bytes() > kMaxPrivateBytes)
        throw InvalidArgument("opencl: " + std::to_string(cfg.modes_per_pu) + " modes per PU at k = " + std::to_string(cfg.k) +
                              " need about " + std::to_string(cfg.private_bytes()) +
                              " bytes of private memory per work-item, more than the kernels' limit of " +
                              std::to_string(kMaxPrivateBytes) + "; use fewer modes per PU (opencl.modes_per_pu)");
    if (cfg.local_bytes() > local_mem_size) {
        std::ostringstream o;
        o << "opencl: the kernel needs " << cfg.local_bytes() << " bytes of local memory";
        if (cfg.preload)
            o << " (preload batch " << cfg.tile << " points x " << cfg.stride() << " floats";
        if (cfg.f_load > 1)
            o << (cfg.preload ? " + " : " (") << "vPPU reduction buffer " << cfg.tau << " PUs x "
              << cfg.accumulators() << " accumulators";
        o << ") but CL_DEVICE_LOCAL_MEM_SIZE = " << local_mem_size << " bytes on " << device_name;
        const std::size_t red = cfg.reduction_bytes();
        if (cfg.preload && red < local_mem_size)
            o << "; use a smaller tau or preload_size <= " << (local_mem_size - red) / (cfg.stride() * sizeof(float));
        else
            o << "; use a smaller tau (work-group size)";
        throw InvalidArgument(o.str());
    }
}

}  // namespace meanshift::detail
