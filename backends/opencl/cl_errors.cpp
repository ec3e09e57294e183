// OpenCL error codes → names (and a hint for the common resource errors).
#include "backends/opencl/cl_common.hpp"

#include <meanshift/errors.hpp>

namespace meanshift::detail {

std::string cl_error_name(cl_int code)
{
    switch (code) {
#define MS_CL_ERR(name)                                                                                                \
    case name: return #name;
        MS_CL_ERR(CL_SUCCESS)
        MS_CL_ERR(CL_DEVICE_NOT_FOUND)
        MS_CL_ERR(CL_DEVICE_NOT_AVAILABLE)
        MS_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
        MS_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        MS_CL_ERR(CL_OUT_OF_RESOURCES)
        MS_CL_ERR(CL_OUT_OF_HOST_MEMORY)
        MS_CL_ERR(CL_PROFILING_INFO_NOT_AVAILABLE)
        MS_CL_ERR(CL_MEM_COPY_OVERLAP)
        MS_CL_ERR(CL_IMAGE_FORMAT_MISMATCH)
        MS_CL_ERR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
        MS_CL_ERR(CL_BUILD_PROGRAM_FAILURE)
        MS_CL_ERR(CL_MAP_FAILURE)
        MS_CL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        MS_CL_ERR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        MS_CL_ERR(CL_COMPILE_PROGRAM_FAILURE)
        MS_CL_ERR(CL_LINKER_NOT_AVAILABLE)
        MS_CL_ERR(CL_LINK_PROGRAM_FAILURE)
        MS_CL_ERR(CL_DEVICE_PARTITION_FAILED)
        MS_CL_ERR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
        MS_CL_ERR(CL_INVALID_VALUE)
        MS_CL_ERR(CL_INVALID_DEVICE_TYPE)
        MS_CL_ERR(CL_INVALID_PLATFORM)
        MS_CL_ERR(CL_INVALID_DEVICE)
        MS_CL_ERR(CL_INVALID_CONTEXT)
        MS_CL_ERR(CL_INVALID_QUEUE_PROPERTIES)
        MS_CL_ERR(CL_INVALID_COMMAND_QUEUE)
        MS_CL_ERR(CL_INVALID_HOST_PTR)
        MS_CL_ERR(CL_INVALID_MEM_OBJECT)
        MS_CL_ERR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
        MS_CL_ERR(CL_INVALID_IMAGE_SIZE)
        MS_CL_ERR(CL_INVALID_SAMPLER)
        MS_CL_ERR(CL_INVALID_BINARY)
        MS_CL_ERR(CL_INVALID_BUILD_OPTIONS)
        MS_CL_ERR(CL_INVALID_PROGRAM)
        MS_CL_ERR(CL_INVALID_PROGRAM_EXECUTABLE)
        MS_CL_ERR(CL_INVALID_KERNEL_NAME)
        MS_CL_ERR(CL_INVALID_KERNEL_DEFINITION)
        MS_CL_ERR(CL_INVALID_KERNEL)
        MS_CL_ERR(CL_INVALID_ARG_INDEX)
        MS_CL_ERR(CL_INVALID_ARG_VALUE)
        MS_CL_ERR(CL_INVALID_ARG_SIZE)
        MS_CL_ERR(CL_INVALID_KERNEL_ARGS)
        MS_CL_ERR(CL_INVALID_WORK_DIMENSION)
        MS_CL_ERR(CL_INVALID_WORK_GROUP_SIZE)
        MS_CL_ERR(CL_INVALID_WORK_ITEM_SIZE)
        MS_CL_ERR(CL_INVALID_GLOBAL_OFFSET)
        MS_CL_ERR(CL_INVALID_EVENT_WAIT_LIST)
        MS_CL_ERR(CL_INVALID_EVENT)
        MS_CL_ERR(CL_INVALID_OPERATION)
        MS_CL_ERR(CL_INVALID_GL_OBJECT)
        MS_CL_ERR(CL_INVALID_BUFFER_SIZE)
        MS_CL_ERR(CL_INVALID_MIP_LEVEL)
        MS_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
        MS_CL_ERR(CL_INVALID_PROPERTY)
        MS_CL_ERR(CL_INVALID_IMAGE_DESCRIPTOR)
        MS_CL_ERR(CL_INVALID_COMPILER_OPTIONS)
        MS_CL_ERR(CL_INVALID_LINKER_OPTIONS)
        MS_CL_ERR(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef MS_CL_ERR
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "CL_UNKNOWN_ERROR(" + std::to_string(code) + ")";
    }
}

void throw_cl_error(cl_int code, const std::string& what)
{
    std::string msg = "OpenCL: " + what + " failed: " + cl_error_name(code) + " (" + std::to_string(code) + ")";
    switch (code) {
    case CL_OUT_OF_RESOURCES:
        msg += "; the device ran out of resources (registers, local memory or a watchdog): try a smaller "
               "work-group size (tau), fewer modes per PU or a smaller preload_size";
        break;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_HOST_MEMORY:
        msg += "; not enough memory for the buffers: reduce n or the number of modes per step";
        break;
    case CL_INVALID_WORK_GROUP_SIZE:
        msg += "; the work-group size (tau) exceeds what this kernel allows on this device";
        break;
    case -1001: msg += "; no OpenCL platform is installed (ICD loader found no vendor .icd)"; break;
    default: break;
    }
    throw DeviceError(msg);
}

}  // namespace meanshift::detail
