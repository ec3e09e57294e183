// A backend being created while the host prepares the data. Creating the CUDA backend initialises
// the driver and a device's primary context (0.1-0.3 s on an H100/H200 host); the driver needs the
// backend only when it binds the prepared data, after validation, seeding and the search
// structure, which take about as long for 10^5-10^7 points. So cluster() and Clusterer start
// that creation on a thread and wait for it at the bind.
#pragma once

#include <meanshift/backend.hpp>

#include <exception>
#include <future>
#include <memory>
#include <string>

namespace meanshift::detail {

class PendingBackend {
public:
    /// Starts make_backend(name, options): on a thread for "cuda" (and "auto" in a build with CUDA),
    /// here for the others (the CPU backends cost a probe; OpenCL's PoCL is kept off helper threads,
    /// whose exit its LLVM signal stack upsets under AddressSanitizer). A name that is not compiled
    /// in throws BackendUnavailable here, as make_backend() does. `profile` (Options::kernel): a named
    /// backend without it throws BackendUnavailable, "auto" takes one that has it
    /// (detail::make_backend_for_profile).
    PendingBackend(const std::string& name, const BackendOptions& options,
                   KernelProfile profile = KernelProfile::Gaussian);
    ~PendingBackend();
    PendingBackend(const PendingBackend&) = delete;
    PendingBackend& operator=(const PendingBackend&) = delete;

    /// The backend; waits for its creation and rethrows what it threw (BackendUnavailable,
    /// DeviceError, InvalidArgument), at every call until it succeeds.
    Backend& get();

    /// Whether the backend has the truncated kernel, without waiting: every backend this build
    /// creates on a thread has it (checked again at get()); the others answer themselves.
    bool supports_cutoff();

private:
    std::unique_ptr<Backend> backend_;
    std::future<std::unique_ptr<Backend>> creating_;
    std::exception_ptr error_;
};

}  // namespace meanshift::detail
