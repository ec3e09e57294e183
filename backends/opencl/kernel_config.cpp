#include "backends/opencl/kernel_config.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace meanshift::detail {

int KernelConfig::stride() const noexcept
{
    const int raw = per_point ? 1 + 2 * k : k + 1;
    return (raw + 3) / 4 * 4;
}

std::size_t KernelConfig::local_bytes() const noexcept
{
    std::size_t bytes = 0;
    if (preload) bytes += static_cast<std::size_t>(tile) * static_cast<std::size_t>(stride()) * sizeof(float);
    if (f_load > 1) bytes += static_cast<std::size_t>(reduction_floats()) * sizeof(float);
    return bytes;
}

std::string KernelConfig::build_options() const
{
    std::ostringstream o;
    o << "-D K=" << k << " -D STRIDE=" << stride() << " -D TILE=" << tile << " -D TAU=" << tau
      << " -D F_VPPU=" << f_vppu << " -D F_LOAD=" << f_load << " -D MODES_PER_PU=" << modes_per_pu
      << " -D MODEL_PER_POINT=" << (per_point ? 1 : 0)
      << " -D EXPANDED=" << (form == ExponentForm::Expanded ? 1 : 0) << (nv_ex2 ? " -D MS_NV_EX2=1" : "")
      // exp2 through the hardware unit, denormals flushed (weights below 2^-126 are noise);
      // the padding records use a finite log-weight, so finite-math is safe.
      << " -cl-fast-relaxed-math -cl-mad-enable -cl-denorms-are-zero";
    if (!extra_build_options.empty()) o << ' ' << extra_build_options;
    return o.str();
}

KernelTuning KernelTuning::from_environment()
{
    KernelTuning t;
    if (const char* r = std::getenv("MEANSHIFT_OPENCL_MODES_PER_PU"); r && *r) {
        char* end = nullptr;
        const long v = std::strtol(r, &end, 10);
        if (*end != '\0' || v < 0 || v > 16)
            throw InvalidArgument(std::string("MEANSHIFT_OPENCL_MODES_PER_PU must be 0 (automatic) .. 16, got '") + r + "'");
        t.modes_per_pu = static_cast<int>(v);
    }
    if (const char* g = std::getenv("MEANSHIFT_OPENCL_SEGMENTS"); g && *g) {
        char* end = nullptr;
        const long v = std::strtol(g, &end, 10);
        if (*end != '\0' || v < 0 || v > (1 << 20))
            throw InvalidArgument(std::string("MEANSHIFT_OPENCL_SEGMENTS must be 0 (automatic) .. 1048576, got '") + g + "'");
        t.segments = static_cast<int>(v);
    }
    if (const char* b = std::getenv("MEANSHIFT_OPENCL_BUILD_OPTIONS"); b) t.extra_build_options = b;
    if (const char* x = std::getenv("MEANSHIFT_OPENCL_NV_EX2"); x && *x) t.nv_ex2 = std::string(x) != "0";
    if (const char* f = std::getenv("MEANSHIFT_OPENCL_EXPONENT"); f && *f) {
        const std::string s = f;
        if (s == "expanded")
            t.form = ExponentForm::Expanded;
        else if (s == "direct")
            t.form = ExponentForm::Direct;
        else
            throw InvalidArgument("MEANSHIFT_OPENCL_EXPONENT must be 'expanded' or 'direct', got '" + s + "'");
    }
    return t;
}

int default_modes_per_pu(int k, bool per_point, bool preload)
{
    const int state = per_point ? 6 * k : 3 * k + 3;  // registers one mode needs, roughly
    // Without preloading every PU loads the per-point records (2 float4) from global memory
    // itself: more modes per load pay off (H200, k = 3: r = 4 1.48e12 vs r = 2 0.94e12 pairs/s).
    const int budget = per_point && !preload ? 96 : 48;
    return std::clamp(budget / state, 1, 4);
}

void check_against_device(const KernelConfig& cfg, std::size_t max_work_group_size,
                          std::size_t local_mem_size, const std::string& device_name)
{
    if (static_cast<std::size_t>(cfg.tau) > max_work_group_size)
        throw InvalidArgument("opencl: tau (work-group size) " + std::to_string(cfg.tau) +
                              " exceeds CL_DEVICE_MAX_WORK_GROUP_SIZE = " + std::to_string(max_work_group_size) +
                              " of " + device_name);
    if (cfg.local_bytes() > local_mem_size) {
        std::ostringstream o;
        o << "opencl: the kernel needs " << cfg.local_bytes() << " bytes of local memory";
        if (cfg.preload)
            o << " (preload batch " << cfg.tile << " points x " << cfg.stride() << " floats";
        if (cfg.f_load > 1)
            o << (cfg.preload ? " + " : " (") << "vPPU reduction buffer " << cfg.tau << " PUs x "
              << cfg.reduction_floats() / cfg.tau << " accumulators";
        o << ") but CL_DEVICE_LOCAL_MEM_SIZE = " << local_mem_size << " bytes on " << device_name;
        const std::size_t red = cfg.f_load > 1 ? cfg.reduction_floats() * sizeof(float) : 0;
        if (cfg.preload && red < local_mem_size)
            o << "; use a smaller tau or preload_size <= " << (local_mem_size - red) / (cfg.stride() * sizeof(float));
        else
            o << "; use a smaller tau (work-group size)";
        throw InvalidArgument(o.str());
    }
}

}  // namespace meanshift::detail
