#pragma once
// Internal: the one place that includes the OpenCL C++ bindings (OpenCL 1.2 API, exceptions on)
// and turns OpenCL errors into meanshift::DeviceError with the error's name.

#ifndef CL_HPP_TARGET_OPENCL_VERSION
#define CL_HPP_TARGET_OPENCL_VERSION 120
#endif
#ifndef CL_HPP_MINIMUM_OPENCL_VERSION
#define CL_HPP_MINIMUM_OPENCL_VERSION 120
#endif
#ifndef CL_HPP_ENABLE_EXCEPTIONS
#define CL_HPP_ENABLE_EXCEPTIONS
#endif
#include <CL/opencl.hpp>

#include <string>

namespace meanshift::detail {

/// "CL_OUT_OF_RESOURCES" for -5, ...; "CL_UNKNOWN_ERROR(<code>)" for codes not in the table.
std::string cl_error_name(cl_int code);

/// Throws DeviceError("OpenCL: <what> failed: <name> (<code>)[: hint]").
[[noreturn]] void throw_cl_error(cl_int code, const std::string& what);

/// Runs f(); a cl::Error escaping it becomes a DeviceError naming `what` and the error code.
template <class F>
auto cl_call(const std::string& what, F&& f) -> decltype(f())
{
    try {
        return f();
    } catch (const cl::Error& e) {
        throw_cl_error(e.err(), what + " (" + e.what() + ")");
    }
}

}  // namespace meanshift::detail
