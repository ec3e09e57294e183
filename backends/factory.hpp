#pragma once
// Internal: how each backend folder exposes itself to the registry.

#include <meanshift/config.hpp>
#include <meanshift/registry.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace meanshift::detail {

struct BackendFactory {
    std::string name;
    /// Probe devices; never throws. usable=false with a reason when nothing can run.
    std::function<BackendStatus()> probe;
    /// Create an instance; throws BackendUnavailable / DeviceError / InvalidArgument.
    std::function<std::unique_ptr<Backend>(const BackendOptions&)> create;
};

/// Status of a backend that can run whenever it is compiled in (the host backends).
inline BackendStatus usable_status(std::string name, std::vector<DeviceInfo> devices)
{
    BackendStatus s;
    s.name = std::move(name);
    s.compiled_in = true;
    s.usable = true;
    s.devices = std::move(devices);
    return s;
}

/// make_backend() for a run with kernel profile `profile`: a named backend without it throws
/// BackendUnavailable "backend 'cuda' has no kernel profile 'flat' (backends with it: serial,
/// openmp)"; "auto" takes the fastest usable backend that has it (Backend::supports_profile).
std::unique_ptr<Backend> make_backend_for_profile(const std::string& name, const BackendOptions& options,
                                                  KernelProfile profile);

BackendFactory serial_factory();
#if MEANSHIFT_HAVE_OPENMP
BackendFactory openmp_factory();
#endif
#if MEANSHIFT_HAVE_OPENCL
BackendFactory opencl_factory();
#endif
#if MEANSHIFT_HAVE_CUDA
BackendFactory cuda_factory();
#endif

}  // namespace meanshift::detail
