#pragma once
// Internal: OpenCL platform/device discovery and selection ("P:D", default first GPU else first
// device), and one shared context per device.

#include "backends/opencl/cl_common.hpp"

#include <meanshift/backend.hpp>

#include <string>
#include <vector>

namespace meanshift::detail {

struct ClDeviceEntry {
    int platform = 0;  ///< P of "P:D"
    int device = 0;  ///< D of "P:D"
    std::string platform_name;
    cl::Device handle;
    DeviceInfo info;  ///< info.index is the flat index over all platforms
};

/// All devices of all platforms. Throws DeviceError (CL_PLATFORM_NOT_FOUND_KHR etc.) when the
/// ICD loader finds no platform.
std::vector<ClDeviceEntry> enumerate_cl_devices();

/// Picks the device for `spec` ("P:D"; empty = the first GPU, else the first device). Throws InvalidArgument for a malformed or out-of-range spec (the
/// message lists the devices), BackendUnavailable when there is no device.
ClDeviceEntry select_cl_device(const std::string& spec);

/// One context per device for the whole process, so compiled programs are reused across
/// backend instances (program_cache.hpp keys on the context).
cl::Context shared_cl_context(const cl::Device& device);

}  // namespace meanshift::detail
