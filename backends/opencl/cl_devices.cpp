#include "backends/opencl/cl_devices.hpp"

#include <meanshift/errors.hpp>

#include <map>
#include <mutex>
#include <sstream>

namespace meanshift::detail {
namespace {

std::string kind_of(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU) return "gpu";
    if (t & CL_DEVICE_TYPE_CPU) return "cpu";
    return "accelerator";
}

std::string trim(std::string s)
{
    while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
    return s;
}

std::string device_list(const std::vector<ClDeviceEntry>& all)
{
    std::ostringstream o;
    for (const auto& e : all)
        o << "\n  " << e.platform << ':' << e.device << "  " << e.info.name << " [" << e.info.kind << ']';
    return o.str();
}

}  // namespace

std::vector<ClDeviceEntry> enumerate_cl_devices()
{
    return cl_call("listing OpenCL platforms and devices", [] {
        std::vector<cl::Platform> platforms;
        cl::Platform::get(&platforms);  // throws CL_PLATFORM_NOT_FOUND_KHR when there is none
        std::vector<ClDeviceEntry> out;
        for (std::size_t p = 0; p < platforms.size(); ++p) {
            std::vector<cl::Device> devices;
            try {
                platforms[p].getDevices(CL_DEVICE_TYPE_ALL, &devices);
            } catch (const cl::Error& e) {
                if (e.err() == CL_DEVICE_NOT_FOUND) continue;  // a platform without devices
                throw;
            }
            const std::string pname = trim(platforms[p].getInfo<CL_PLATFORM_NAME>());
            for (std::size_t d = 0; d < devices.size(); ++d) {
                ClDeviceEntry e;
                e.platform = static_cast<int>(p);
                e.device = static_cast<int>(d);
                e.platform_name = pname;
                e.handle = devices[d];
                e.info.index = static_cast<int>(out.size());
                e.info.spec = std::to_string(p) + ":" + std::to_string(d);
                e.info.name = trim(devices[d].getInfo<CL_DEVICE_NAME>()) + " (" + pname + ", " + std::to_string(p) +
                              ":" + std::to_string(d) + ")";
                e.info.kind = kind_of(devices[d].getInfo<CL_DEVICE_TYPE>());
                e.info.compute_units = static_cast<int>(devices[d].getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>());
                e.info.pus_per_ppu = static_cast<int>(devices[d].getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>());
                e.info.global_memory = static_cast<std::size_t>(devices[d].getInfo<CL_DEVICE_GLOBAL_MEM_SIZE>());
                e.info.local_memory = static_cast<std::size_t>(devices[d].getInfo<CL_DEVICE_LOCAL_MEM_SIZE>());
                out.push_back(std::move(e));
            }
        }
        return out;
    });
}

ClDeviceEntry select_cl_device(const std::string& spec)
{
    const std::string source = "BackendOptions::device_spec";
    const std::vector<ClDeviceEntry> all = enumerate_cl_devices();
    if (all.empty()) throw BackendUnavailable("opencl: the OpenCL platforms have no devices");
    if (spec.empty()) {
        for (const auto& e : all)
            if (e.info.kind == "gpu") return e;
        return all.front();
    }
    int p = -1, d = -1;
    char colon = 0, extra = 0;
    std::istringstream in(spec);
    if (!(in >> p >> colon >> d) || colon != ':' || (in >> extra) || p < 0 || d < 0)
        throw InvalidArgument("opencl: bad device spec '" + spec + "' (from " + source +
                              "): expected \"P:D\" (platform:device indices), available:" + device_list(all));
    for (const auto& e : all)
        if (e.platform == p && e.device == d) return e;
    throw InvalidArgument("opencl: device spec '" + spec + "' (from " + source +
                          ") names no device; available:" + device_list(all));
}

cl::Context shared_cl_context(const cl::Device& device)
{
    // Deliberately never destroyed: releasing OpenCL objects from static destructors can run
    // after the vendor driver has been unloaded at process exit.
    static std::mutex m;
    static auto* contexts = new std::map<cl_device_id, cl::Context>();
    std::lock_guard<std::mutex> lock(m);
    auto it = contexts->find(device());
    if (it != contexts->end()) return it->second;
    cl::Context ctx = cl_call("creating an OpenCL context", [&] { return cl::Context(device); });
    contexts->emplace(device(), ctx);
    return ctx;
}

}  // namespace meanshift::detail
