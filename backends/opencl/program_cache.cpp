#include "backends/opencl/program_cache.hpp"

#include "backends/opencl/cl_devices.hpp"

#include <meanshift/errors.hpp>

#include <functional>
#include <map>
#include <mutex>
#include <tuple>

namespace meanshift::detail {
namespace {

// Key: context, device, options, and the source text itself (not a hash: no false hits).
using Key = std::tuple<cl_context, cl_device_id, std::string, std::string>;

struct Cache {
    std::mutex m;
    std::map<Key, cl::Program> programs;  // a cl::Program retains its context: the key stays valid
    std::size_t compiled = 0;
};

Cache& cache()
{
    static auto* c = new Cache();  // never destroyed, see shared_cl_context
    return *c;
}

}  // namespace

cl::Program cached_cl_program(const cl::Context& context, const cl::Device& device,
                              const std::vector<std::string>& sources, const std::string& options)
{
    std::string text;
    for (const auto& s : sources) text += s;
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.m);
    Key key{context(), device(), options, text};
    auto it = c.programs.find(key);
    if (it != c.programs.end()) return it->second;

    cl::Program program = cl_call("creating an OpenCL program", [&] { return cl::Program(context, text); });
    try {
        program.build(std::vector<cl::Device>{device}, options.c_str());
    } catch (const cl::Error& e) {
        std::string log;
        try {
            log = program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(device);
        } catch (const cl::Error&) {
            log = "(no build log available)";
        }
        if (e.err() == CL_BUILD_PROGRAM_FAILURE || e.err() == CL_INVALID_BUILD_OPTIONS)
            throw DeviceError("OpenCL: building the kernel program failed: " + cl_error_name(e.err()) +
                                  " (options: " + options + ")\nbuild log:\n" + log,
                              log);
        throw_cl_error(e.err(), "building the kernel program (options: " + options + ")");
    }
    ++c.compiled;
    c.programs.emplace(std::move(key), program);
    return program;
}

std::size_t cl_programs_compiled()
{
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.m);
    return c.compiled;
}

void compile_cl_source_for_test(const std::string& device_spec, const std::string& source, const std::string& options)
{
    const ClDeviceEntry dev = select_cl_device(device_spec);
    cached_cl_program(shared_cl_context(dev.handle), dev.handle, {source}, options);
}

}  // namespace meanshift::detail
