#include "skeleton/src/core/pending_backend.hpp"

#include "backends/factory.hpp"

#include <meanshift/errors.hpp>
#include <meanshift/registry.hpp>

#include <algorithm>
#include <exception>

namespace meanshift::detail {
namespace {

bool created_on_a_thread(const std::string& name)
{
    const std::vector<std::string> built = compiled_backends();
    const bool cuda = std::find(built.begin(), built.end(), "cuda") != built.end();
    return cuda && (name == "cuda" || name == "auto");
}

}  // namespace

PendingBackend::PendingBackend(const std::string& name, const BackendOptions& options, KernelProfile profile)
{
    if (created_on_a_thread(name)) {
        creating_ = std::async(std::launch::async,
                               [name, options, profile] { return make_backend_for_profile(name, options, profile); });
    } else {
        backend_ = make_backend_for_profile(name, options, profile);
    }
}

PendingBackend::~PendingBackend()
{
    if (creating_.valid()) creating_.wait();  // never leave the creating thread running
}

Backend& PendingBackend::get()
{
    if (!backend_ && creating_.valid()) {
        try {
            backend_ = creating_.get();
        } catch (...) {
            error_ = std::current_exception();  // the future is spent: keep the error for later calls
        }
    }
    if (!backend_) std::rethrow_exception(error_);
    return *backend_;
}

bool PendingBackend::supports_cutoff()
{
    if (backend_) return backend_->supports_cutoff();
    return true;  // cuda, opencl, openmp and serial all have it; get() users check again
}

}  // namespace meanshift::detail
