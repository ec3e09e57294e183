#pragma once
// Every CUDA runtime call of the backend goes through MS_CUDA_CHECK: a failure (out of memory,
// launch failure, no driver) becomes meanshift::DeviceError carrying cudaGetErrorName and
// cudaGetErrorString, never a crash or a silent wrong answer.

#include <meanshift/errors.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace meanshift::cuda {

/// "cudaErrorMemoryAllocation (out of memory)".
inline std::string error_text(cudaError_t e)
{
    return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

[[noreturn]] inline void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line)
{
    throw DeviceError("cuda backend: " + std::string(call) + " failed: " + error_text(e) + " at " + file + ":" +
                      std::to_string(line));
}

}  // namespace meanshift::cuda

#define MS_CUDA_CHECK(call)                                                                                            \
    do {                                                                                                               \
        const cudaError_t ms_cuda_err_ = (call);                                                                       \
        if (ms_cuda_err_ != cudaSuccess) ::meanshift::cuda::throw_cuda_error(ms_cuda_err_, #call, __FILE__, __LINE__); \
    } while (0)

/// After a kernel launch: a bad configuration shows up in cudaGetLastError at once.
#define MS_CUDA_CHECK_LAUNCH(what) MS_CUDA_CHECK(((void)(what), cudaGetLastError()))
