#include "backends/factory.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <exception>
#include <mutex>
#include <sstream>
#include <utility>

namespace meanshift {
namespace {

const std::vector<detail::BackendFactory>& factories()
{
    static const std::vector<detail::BackendFactory> all = [] {
        std::vector<detail::BackendFactory> f;
        f.push_back(detail::serial_factory());
#if MEANSHIFT_HAVE_OPENMP
        f.push_back(detail::openmp_factory());
#endif
#if MEANSHIFT_HAVE_OPENCL
        f.push_back(detail::opencl_factory());
#endif
#if MEANSHIFT_HAVE_CUDA
        f.push_back(detail::cuda_factory());
#endif
        return f;
    }();
    return all;
}

const char* const kKnown[] = {"serial", "openmp", "opencl", "cuda"};

// Probing and creating backends is serialised: two threads initialising one driver at once (an
// OpenCL ICD loader and PoCL, a CUDA context) crashed `meanshift cluster`, which prepares its
// backend on a thread while another thread's k-NN search for an adaptive bandwidth made one.
std::recursive_mutex& registry_mutex()
{
    static std::recursive_mutex m;
    return m;
}

BackendStatus probe_safely(const detail::BackendFactory& f)
{
    const std::lock_guard<std::recursive_mutex> lock(registry_mutex());
    try {
        return f.probe();
    } catch (const std::exception& e) {
        BackendStatus s;
        s.name = f.name;
        s.compiled_in = true;
        s.reason = std::string("device probe failed: ") + e.what();
        return s;
    }
}

}  // namespace

std::vector<std::string> compiled_backends()
{
    std::vector<std::string> names;
    for (const auto& f : factories()) names.push_back(f.name);
    return names;
}

std::vector<BackendStatus> list_backends()
{
    std::vector<BackendStatus> out;
    for (const char* name : kKnown) {
        auto it = std::find_if(factories().begin(), factories().end(), [&](const auto& f) { return f.name == name; });
        if (it != factories().end()) {
            out.push_back(probe_safely(*it));
        } else {
            BackendStatus s;
            s.name = name;
            s.reason = "not compiled into this build (see the CMake configuration summary)";
            out.push_back(s);
        }
    }
    return out;
}

namespace {

// Fastest usable first: CUDA, then OpenCL on a GPU, then OpenMP, then the serial oracle (always
// compiled in and usable, so the list is never empty).
std::vector<std::string> auto_order(const std::vector<BackendStatus>& all)
{
    auto usable = [&](const std::string& n, bool need_gpu) {
        for (const auto& s : all) {
            if (s.name != n || !s.usable) continue;
            if (!need_gpu) return true;
            for (const auto& d : s.devices)
                if (d.kind == "gpu") return true;
        }
        return false;
    };
    std::vector<std::string> order;
    for (auto [name, need_gpu] : {std::pair<const char*, bool>{"cuda", false}, {"opencl", true}, {"openmp", false}})
        if (usable(name, need_gpu)) order.push_back(name);
    order.push_back("serial");
    return order;
}

std::string pick_auto(const std::vector<BackendStatus>& all)
{
    return auto_order(all).front();
}

}  // namespace

std::string resolve_auto_backend()
{
    return pick_auto(list_backends());
}

std::unique_ptr<Backend> make_backend(const std::string& requested, const BackendOptions& options)
{
    const std::lock_guard<std::recursive_mutex> lock(registry_mutex());
    // "auto" probes every backend once and picks a usable one: no second probe of the choice.
    const bool is_auto = requested == "auto";
    const std::string name = is_auto ? pick_auto(list_backends()) : requested;
    auto it = std::find_if(factories().begin(), factories().end(), [&](const auto& f) { return f.name == name; });
    if (it == factories().end()) {
        std::ostringstream msg;
        const bool known = std::find(std::begin(kKnown), std::end(kKnown), name) != std::end(kKnown);
        if (known)
            msg << "backend '" << name << "' is not compiled into this build";
        else
            msg << "unknown backend '" << name << "'";
        msg << "; compiled-in backends:";
        for (const auto& f : factories()) msg << ' ' << f.name;
        msg << " (or 'auto')";
        throw BackendUnavailable(msg.str());
    }
    if (!is_auto) {
        const BackendStatus status = probe_safely(*it);
        if (!status.usable) throw BackendUnavailable("backend '" + name + "' is not usable here: " + status.reason);
    }
    return it->create(options);
}

std::unique_ptr<Backend> detail::make_backend_for_profile(const std::string& requested, const BackendOptions& options,
                                                          KernelProfile profile)
{
    const std::lock_guard<std::recursive_mutex> lock(registry_mutex());
    if (requested != "auto") {
        std::unique_ptr<Backend> b = make_backend(requested, options);
        if (!b->supports_profile(profile)) {
            // Which backends have it: created once each here (only on this error path).
            std::string with;
            for (const auto& s : list_backends()) {
                if (!s.usable || s.name == b->name()) continue;
                try {
                    if (make_backend(s.name, options)->supports_profile(profile))
                        with += (with.empty() ? "" : ", ") + s.name;
                } catch (const std::exception&) {
                    // not creatable with these options: not listed
                }
            }
            throw BackendUnavailable("backend '" + b->name() + "' has no kernel profile '" + profile_name(profile) +
                                     "' (backends with it: " + (with.empty() ? "none" : with) + ")");
        }
        return b;
    }
    // "auto": the fastest usable backend that has the profile (the serial oracle has every one).
    std::exception_ptr first_error;
    for (const std::string& name : auto_order(list_backends())) {
        try {
            // The list's names are usable: created without a second probe, as make_backend("auto") does.
            auto it =
                std::find_if(factories().begin(), factories().end(), [&](const auto& f) { return f.name == name; });
            if (it == factories().end()) continue;
            std::unique_ptr<Backend> b = it->create(options);
            if (b->supports_profile(profile)) return b;
        } catch (...) {
            if (!first_error) first_error = std::current_exception();
        }
    }
    if (first_error) std::rethrow_exception(first_error);
    throw BackendUnavailable(std::string("no usable backend has the kernel profile '") + profile_name(profile) + "'");
}

std::string prepare_backend(const std::string& name, const BackendOptions& options)
{
    return make_backend(name, options)->name();
}

}  // namespace meanshift
