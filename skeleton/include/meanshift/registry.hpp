#pragma once
/// @file registry.hpp
/// Backends are chosen by name at run time: "serial", "openmp", "opencl", "cuda", or "auto"
/// (the fastest usable one: cuda, then an OpenCL GPU, then openmp, then serial).
/// "Compiled in" and "usable now" are kept apart: a compiled-in backend without a device is
/// listed with the reason.

#include <meanshift/export.hpp>
#include <meanshift/backend.hpp>

#include <memory>
#include <string>
#include <vector>

namespace meanshift {

struct BackendStatus {
    std::string name;
    bool compiled_in = false;
    bool usable = false;
    std::string reason;  ///< why it is not usable (empty when usable)
    std::vector<DeviceInfo> devices;  ///< what it sees
};

/// Every backend this library knows, compiled in or not, with its status. Probing devices may
/// take a moment (OpenCL/CUDA initialisation); never throws.
MEANSHIFT_API std::vector<BackendStatus> list_backends();

/// Names of the backends compiled into this build, e.g. {"serial", "openmp"}.
MEANSHIFT_API std::vector<std::string> compiled_backends();

/// Create a backend by name ("auto" allowed). Throws BackendUnavailable for an unknown name
/// (listing the known ones) or an unusable backend (with the reason).
MEANSHIFT_API std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options = {});

/// The name "auto" resolves to on this machine.
MEANSHIFT_API std::string resolve_auto_backend();

/// Creates the backend `name` ("auto" allowed) once and discards it, so that its process-wide state
/// exists before the first cluster() of the process: the CUDA backend's primary contexts (created
/// on first use, ~0.1 s per device; they live until the process ends), the OpenCL platform and
/// driver. Made to run on another thread while the caller reads its input (`meanshift segment`
/// does while the image decodes). For the CPU backends it is only the probe (microseconds).
/// Returns the backend's name ("auto" resolved). Throws what make_backend() throws.
MEANSHIFT_API std::string prepare_backend(const std::string& name, const BackendOptions& options = {});

}  // namespace meanshift
