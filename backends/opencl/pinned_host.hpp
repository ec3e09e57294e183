#pragma once
// Internal: page-locked host memory for the OpenCL backend's device-to-host reads.

#include "backends/opencl/cl_common.hpp"

#include <cstddef>

namespace meanshift::detail {

/// Host memory the driver allocates page-locked (CL_MEM_ALLOC_HOST_PTR), mapped for the object's
/// lifetime and unmapped by its destructor. Reads into it run at DMA speed; reads into pageable
/// memory (a fresh std::vector) go through a driver staging copy and page faults (H200, NVIDIA
/// OpenCL, 2026-11-24: 1,048,576 × 5 modes read in 23.5 ms pageable, 7.4 ms with CUDA's pinned
/// buffer; docs/backend-opencl.md).
class PinnedHost {
public:
    PinnedHost() = default;
    PinnedHost(const PinnedHost&) = delete;
    PinnedHost& operator=(const PinnedHost&) = delete;
    ~PinnedHost() { release(); }

    /// At least `bytes` of mapped host memory (kept when already large enough). Throws DeviceError.
    void reserve(const cl::Context& context, const cl::CommandQueue& queue, std::size_t bytes)
    {
        if (bytes <= bytes_ && ptr_) return;
        release();
        queue_ = queue;
        cl_call("allocating pinned host memory", [&] {
            buffer_ = cl::Buffer(context, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, bytes);
            ptr_ = queue_.enqueueMapBuffer(buffer_, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes);
            return 0;
        });
        bytes_ = bytes;
    }

    template <class T>
    T* as() const noexcept
    {
        return static_cast<T*>(ptr_);
    }
    std::size_t bytes() const noexcept { return bytes_; }

private:
    void release() noexcept
    {
        if (!ptr_) return;
        try {
            queue_.enqueueUnmapMemObject(buffer_, ptr_);
            queue_.finish();
        } catch (...) {  // a destructor must not throw; the context's release frees the memory
        }
        ptr_ = nullptr;
        bytes_ = 0;
    }

    cl::Buffer buffer_;
    cl::CommandQueue queue_;
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

}  // namespace meanshift::detail
