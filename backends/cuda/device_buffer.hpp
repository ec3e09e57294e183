#pragma once
// RAII owners of the CUDA resources of the backend, one small class each: the current device of a
// scope (DeviceScope), a device allocation (DeviceBuffer), a pinned host allocation (PinnedBuffer),
// a stream (Stream) and an event (Event). Each is move-only and releases its resource in its
// destructor on the device it was created on, so a throw half-way through building a larger
// object (a member constructor failing) releases what the earlier members acquired. Allocation
// failures are DeviceError naming the size; teardown errors are ignored (nothing useful to do).

#include "backends/cuda/cuda_check.hpp"

#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace meanshift::cuda {

/// Makes `device` current for the calling thread during the scope and restores the previous one.
/// The throwing form checks the calls; the quiet form (destructors) ignores failures.
class DeviceScope {
public:
    explicit DeviceScope(int device)
    {
        MS_CUDA_CHECK(cudaGetDevice(&previous_));
        if (previous_ != device) {
            MS_CUDA_CHECK(cudaSetDevice(device));
            changed_ = true;
        }
    }
    struct Quiet {};
    DeviceScope(int device, Quiet) noexcept
    {
        if (device < 0) return;
        if (cudaGetDevice(&previous_) != cudaSuccess) {
            cudaGetLastError();
            return;
        }
        if (previous_ != device) changed_ = cudaSetDevice(device) == cudaSuccess;
    }
    ~DeviceScope()
    {
        if (changed_) cudaSetDevice(previous_);
    }
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;

private:
    int previous_ = 0;
    bool changed_ = false;
};

inline int current_device()
{
    int d = 0;
    MS_CUDA_CHECK(cudaGetDevice(&d));
    return d;
}

/// Owning device allocation (cudaMalloc / cudaFree) on the device current at allocate().
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept
        : ptr_(std::exchange(o.ptr_, nullptr)),
          bytes_(std::exchange(o.bytes_, 0)),
          device_(std::exchange(o.device_, -1))
    {
    }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept
    {
        if (this != &o) {
            release();
            ptr_ = std::exchange(o.ptr_, nullptr);
            bytes_ = std::exchange(o.bytes_, 0);
            device_ = std::exchange(o.device_, -1);
        }
        return *this;
    }
    ~DeviceBuffer() { release(); }

    /// Frees the old allocation, then allocates `bytes` on the current device (0: stays empty).
    void allocate(std::size_t bytes)
    {
        release();
        if (bytes == 0) return;
        const int device = current_device();
        void* p = nullptr;
        const cudaError_t e = cudaMalloc(&p, bytes);
        if (e != cudaSuccess) {
            cudaGetLastError();
            throw DeviceError("cuda backend: cudaMalloc of " + std::to_string(bytes) + " bytes on device " +
                              std::to_string(device) + " failed: " + error_text(e));
        }
        ptr_ = p;
        bytes_ = bytes;
        device_ = device;
    }
    /// Keeps the allocation when it already holds ≥ `bytes` on the current device (a binding
    /// refilled band after band: no cudaFree / cudaMalloc pair each time), else allocate(bytes).
    void reserve(std::size_t bytes)
    {
        if (ptr_ && bytes_ >= bytes && device_ == current_device()) return;
        allocate(bytes);
    }
    void release() noexcept
    {
        if (ptr_) {
            DeviceScope scope(device_, DeviceScope::Quiet{});
            cudaFree(ptr_);
        }
        ptr_ = nullptr;
        bytes_ = 0;
        device_ = -1;
    }
    float* f() const noexcept { return static_cast<float*>(ptr_); }
    template <class T>
    T* as() const noexcept
    {
        return static_cast<T*>(ptr_);
    }
    std::size_t bytes() const noexcept { return bytes_; }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
    int device_ = -1;
};

/// Page-locked host blocks kept for reuse (cudaMallocHost pins every page: a photo's two staging
/// buffers cost milliseconds per binding, the same again in cudaFreeHost). A PinnedBuffer made
/// with a pool takes the smallest kept block that is large enough and hands its block back on
/// release; at most kMaxKept blocks and kMaxKeptBytes are kept, the rest are freed. Thread-safe.
/// The pool must outlive the buffers made from it (the cuda backend's pools live as long as the
/// process: cuda_backend.cpp, pinned_pool()).
class PinnedPool {
public:
    static constexpr std::size_t kMaxKept = 8;
    static constexpr std::size_t kMaxKeptBytes = std::size_t{256} << 20;
    PinnedPool() = default;
    PinnedPool(const PinnedPool&) = delete;
    PinnedPool& operator=(const PinnedPool&) = delete;
    ~PinnedPool() { release_all(); }
    /// Frees every kept block (blocks taken by live buffers come back later and are kept again).
    void release_all() noexcept
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const Block& b : kept_) cudaFreeHost(b.ptr);
        kept_.clear();
    }
    /// A block of at least `bytes` (> 0): a kept one, else a new cudaMallocHost (DeviceError on failure).
    std::pair<void*, std::size_t> take(std::size_t bytes)
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            std::size_t best = kept_.size();
            for (std::size_t i = 0; i < kept_.size(); ++i)
                if (kept_[i].bytes >= bytes && (best == kept_.size() || kept_[i].bytes < kept_[best].bytes)) best = i;
            if (best < kept_.size()) {
                const Block b = kept_[best];
                kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(best));
                return {b.ptr, b.bytes};
            }
        }
        void* p = nullptr;
        const cudaError_t e = cudaMallocHost(&p, bytes);
        if (e != cudaSuccess) {
            cudaGetLastError();
            throw DeviceError("cuda backend: cudaMallocHost of " + std::to_string(bytes) +
                              " bytes failed: " + error_text(e));
        }
        return {p, bytes};
    }
    /// Keeps the block (or frees the smallest kept one when full).
    void give(void* ptr, std::size_t bytes) noexcept
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (bytes > kMaxKeptBytes) {
            cudaFreeHost(ptr);
            return;
        }
        kept_.push_back({ptr, bytes});
        std::size_t total = 0;
        for (const Block& b : kept_) total += b.bytes;
        // Over the limits: free the oldest blocks first (the newest fits the next run best).
        while (kept_.size() > kMaxKept || total > kMaxKeptBytes) {
            total -= kept_.front().bytes;
            cudaFreeHost(kept_.front().ptr);
            kept_.erase(kept_.begin());
        }
    }

private:
    struct Block {
        void* ptr;
        std::size_t bytes;
    };
    std::mutex mutex_;
    std::vector<Block> kept_;
};

/// Owning page-locked host allocation of `count` T (cudaMallocHost / cudaFreeHost, or a block of
/// a PinnedPool): the staging buffers of truly asynchronous copies.
template <class T>
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    PinnedBuffer(PinnedBuffer&& o) noexcept
        : ptr_(std::exchange(o.ptr_, nullptr)),
          count_(std::exchange(o.count_, 0)),
          bytes_(std::exchange(o.bytes_, 0)),
          pool_(std::exchange(o.pool_, nullptr))
    {
    }
    PinnedBuffer& operator=(PinnedBuffer&& o) noexcept
    {
        if (this != &o) {
            release();
            ptr_ = std::exchange(o.ptr_, nullptr);
            count_ = std::exchange(o.count_, 0);
            bytes_ = std::exchange(o.bytes_, 0);
            pool_ = std::exchange(o.pool_, nullptr);
        }
        return *this;
    }
    ~PinnedBuffer() { release(); }

    /// `pool` (may be null: a private cudaMallocHost) must outlive this buffer.
    void allocate(std::size_t count, PinnedPool* pool = nullptr)
    {
        release();
        if (count == 0) return;
        if (pool) {
            const auto block = pool->take(count * sizeof(T));
            ptr_ = static_cast<T*>(block.first);
            bytes_ = block.second;
        } else {
            void* p = nullptr;
            const cudaError_t e = cudaMallocHost(&p, count * sizeof(T));
            if (e != cudaSuccess) {
                cudaGetLastError();
                throw DeviceError("cuda backend: cudaMallocHost of " + std::to_string(count * sizeof(T)) +
                                  " bytes failed: " + error_text(e));
            }
            ptr_ = static_cast<T*>(p);
            bytes_ = count * sizeof(T);
        }
        pool_ = pool;
        count_ = count;
    }
    void release() noexcept
    {
        if (ptr_) {
            if (pool_)
                pool_->give(ptr_, bytes_);
            else
                cudaFreeHost(ptr_);
        }
        ptr_ = nullptr;
        count_ = bytes_ = 0;
        pool_ = nullptr;
    }
    T* get() const noexcept { return ptr_; }
    std::size_t size() const noexcept { return count_; }

private:
    T* ptr_ = nullptr;
    std::size_t count_ = 0;
    std::size_t bytes_ = 0;  // of the block (≥ count · sizeof(T) when it came from a pool)
    PinnedPool* pool_ = nullptr;
};

/// A non-blocking stream on `device`.
class Stream {
public:
    explicit Stream(int device) : device_(device)
    {
        DeviceScope scope(device);
        MS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    }
    ~Stream()
    {
        if (!stream_) return;
        DeviceScope scope(device_, DeviceScope::Quiet{});
        cudaStreamDestroy(stream_);
    }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    cudaStream_t get() const noexcept { return stream_; }

private:
    int device_;
    cudaStream_t stream_ = nullptr;
};

/// A timing event on `device`.
class Event {
public:
    explicit Event(int device) : device_(device)
    {
        DeviceScope scope(device);
        MS_CUDA_CHECK(cudaEventCreate(&event_));
    }
    ~Event()
    {
        if (!event_) return;
        DeviceScope scope(device_, DeviceScope::Quiet{});
        cudaEventDestroy(event_);
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    cudaEvent_t get() const noexcept { return event_; }

private:
    int device_;
    cudaEvent_t event_ = nullptr;
};

}  // namespace meanshift::cuda
