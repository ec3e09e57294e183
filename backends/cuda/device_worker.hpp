#pragma once
// One persistent host thread per device (several GPUs): it lives as long as the device context
// that owns it and runs the tasks handed to it in order; a task's exception reaches the caller
// through its std::future (an exception_ptr inside). A single device needs no worker: the
// backend then runs its work inline on the calling thread.

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace meanshift::cuda {

class DeviceWorker {
public:
    /// Starts the thread; it makes `device` current before its first task.
    explicit DeviceWorker(int device);
    /// Runs the tasks still queued, then joins the thread.
    ~DeviceWorker();
    DeviceWorker(const DeviceWorker&) = delete;
    DeviceWorker& operator=(const DeviceWorker&) = delete;

    /// Queues `task`; the future becomes ready when it has run (get() rethrows its exception).
    std::future<void> submit(std::function<void()> task);

private:
    void run();

    int device_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::packaged_task<void()>> tasks_;
    bool stopping_ = false;
    std::thread thread_;  // last member: started once everything it uses exists
};

}  // namespace meanshift::cuda
