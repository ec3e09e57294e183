#pragma once
// Internal: compiled OpenCL programs cached per (context, device, build options, source).

#include "backends/opencl/cl_common.hpp"

#include <string>
#include <vector>

namespace meanshift::detail {

/// Returns the program built from the concatenation of `sources` with `options` for `device`,
/// compiling it on first use. A build failure throws DeviceError whose what() and build_log()
/// carry the compiler's log.
cl::Program cached_cl_program(const cl::Context& context, const cl::Device& device,
                              const std::vector<std::string>& sources, const std::string& options);

/// Number of programs compiled so far (for tests of the cache).
std::size_t cl_programs_compiled();

/// Test hook: compiles `source` with `options` for the device chosen by `device_spec` (as the
/// backend does) through the same cache. Throws like cached_cl_program.
void compile_cl_source_for_test(const std::string& device_spec, const std::string& source, const std::string& options);

}  // namespace meanshift::detail
