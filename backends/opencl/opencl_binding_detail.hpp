#pragma once
// Internal to the OpenCL binding's source files: the step program's sources and small helpers.

#include "backends/opencl/cl_common.hpp"
#include "backends/opencl/embedded_sources.hpp"
#include "backends/opencl/kernel_config.hpp"

#include <string>
#include <vector>

namespace meanshift::detail {

/// The device header and the weight profiles' headers (kernels/profiles/, profiles.h last: it
/// includes the others only where their text is not there yet), the start of every step program.
inline std::string profile_sources()
{
    std::string text = opencl_sources::device_header();
    text.append("\n").append(opencl_sources::profile_gaussian());
    // Each compact profile's header, and MS_PROFILE_FACTOR_<value>(q) naming its factor (profiles.h).
#define MS_PROFILE_TEXT_ROW(E, n, N, v, c, a)                                                                          \
    MS_PROFILE_IF(c, text.append("\n").append(opencl_sources::profile_##n());                                          \
                  text.append("\n#define MS_PROFILE_FACTOR_" #v "(q) MS_FACTOR_" #N "(q)\n");)
    MS_PROFILE_LIST(MS_PROFILE_TEXT_ROW, ~)
#undef MS_PROFILE_TEXT_ROW
    text.append("\n").append(opencl_sources::profile_list()).append("\n").append(opencl_sources::profiles_header());
    return text;
}

inline std::vector<std::string> program_sources(const KernelConfig& c)
{
    if (c.gemm)
        return {profile_sources(), "\n", opencl_sources::approx_mode_common(), "\n",
                c.gemm_wide ? opencl_sources::gemm_wide() : opencl_sources::gemm_modes()};
    if (c.ranges)
        return {profile_sources(),
                "\n",
                opencl_sources::approx_mode_common(),
                "\n",
                opencl_sources::ranges_header(),
                "\n",
                opencl_sources::range_modes(),
                "\n",
                opencl_sources::range_modes_cpu()};
    return {profile_sources(), "\n", opencl_sources::approx_mode_common(), "\n",
            c.preload ? opencl_sources::approx_modes_preload() : opencl_sources::approx_mode()};
}

/// Grid dims the range kernel's box holds (MS_MAX_GRID_DIMS of kernels/meanshift_ranges.h).
constexpr int kMaxRangeGridDims = 16;

/// Seconds between a profiled event's start and end.
inline double event_seconds(const cl::Event& e)
{
    return 1e-9 * static_cast<double>(e.getProfilingInfo<CL_PROFILING_COMMAND_END>() -
                                      e.getProfilingInfo<CL_PROFILING_COMMAND_START>());
}

}  // namespace meanshift::detail
