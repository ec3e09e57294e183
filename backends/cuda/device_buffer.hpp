#pragma once
// Owning device allocation (cudaMalloc/cudaFree) for one device; an out-of-memory failure is a
// DeviceError naming the size.

#include "backends/cuda/cuda_check.hpp"

#include <cstddef>
#include <utility>

namespace meanshift::cuda {

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes) { allocate(bytes); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept
    {
        if (this != &o) {
            release();
            ptr_ = std::exchange(o.ptr_, nullptr);
            bytes_ = std::exchange(o.bytes_, 0);
        }
        return *this;
    }
    ~DeviceBuffer() { release(); }

    /// Allocates on the current device (the caller has called cudaSetDevice).
    void allocate(std::size_t bytes)
    {
        release();
        if (bytes == 0) return;
        const cudaError_t e = cudaMalloc(&ptr_, bytes);
        if (e != cudaSuccess) {
            ptr_ = nullptr;
            throw DeviceError("cuda backend: cudaMalloc of " + std::to_string(bytes) +
                              " bytes failed: " + error_text(e));
        }
        bytes_ = bytes;
    }
    void release() noexcept
    {
        if (ptr_) cudaFree(ptr_);  // errors on teardown are ignored: nothing useful to do
        ptr_ = nullptr;
        bytes_ = 0;
    }
    float* f() const noexcept { return static_cast<float*>(ptr_); }
    std::size_t bytes() const noexcept { return bytes_; }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

}  // namespace meanshift::cuda
