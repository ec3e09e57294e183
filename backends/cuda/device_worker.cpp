#include "backends/cuda/device_worker.hpp"

#include <cuda_runtime_api.h>

#include <utility>

namespace meanshift::cuda {

DeviceWorker::DeviceWorker(int device) : device_(device), thread_([this] { run(); }) {}

DeviceWorker::~DeviceWorker()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

std::future<void> DeviceWorker::submit(std::function<void()> task)
{
    std::packaged_task<void()> job(std::move(task));
    std::future<void> done = job.get_future();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        tasks_.push_back(std::move(job));
    }
    wake_.notify_one();
    return done;
}

void DeviceWorker::run()
{
    if (cudaSetDevice(device_) != cudaSuccess) cudaGetLastError();  // tasks set it again and check
    for (;;) {
        std::packaged_task<void()> job;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
            if (tasks_.empty()) return;  // stopping, nothing left
            job = std::move(tasks_.front());
            tasks_.pop_front();
        }
        job();  // exceptions are stored in the job's future
    }
}

}  // namespace meanshift::cuda
