#pragma once
// Internal: the CUDA backend's devices: one context per device (shared by the backend and its
// bindings), the process's pinned staging pools, multi-device dispatch on the devices' workers,
// occupancy, and the probe.

#include "backends/cuda/cuda_plan.hpp"
#include "backends/cuda/device_buffer.hpp"
#include "backends/cuda/device_worker.hpp"

#include <meanshift/backend.hpp>
#include <meanshift/registry.hpp>

#include <cuda_runtime_api.h>

#include <exception>
#include <future>
#include <memory>
#include <vector>

namespace meanshift::cuda {

/// One device as the backend and its bindings share it (std::shared_ptr): a binding stays valid
/// after the Backend is gone. With several devices each has a persistent worker thread.
struct DeviceContext {
    int device = 0;
    cudaDeviceProp prop{};
    std::unique_ptr<DeviceWorker> worker;  // null for a single device: work runs inline
};

/// The process's pool of pinned staging blocks for `device`: every cluster() call makes its own
/// backend, so a pool per backend would never be reused. The pools themselves are never destroyed
/// (a static's destructor could run after the CUDA runtime has shut down); their blocks are freed
/// by an exit handler registered at the first pool's creation, i.e. after the runtime registered
/// its own, so it runs before the runtime's teardown (memcheck's leak check sees no pinned blocks).
PinnedPool& pinned_pool(int device);
using Contexts = std::vector<std::shared_ptr<DeviceContext>>;

/// Runs f(i) for every device i with that device current: inline for one device, else on the
/// devices' workers in parallel. Waits for all of them, then rethrows the first failure.
template <class F>
void on_devices(const Contexts& ctx, F&& f)
{
    if (ctx.size() == 1) {
        DeviceScope scope(ctx[0]->device);
        f(std::size_t{0});
        return;
    }
    std::vector<std::future<void>> done;
    done.reserve(ctx.size());
    std::exception_ptr error;
    try {
        for (std::size_t i = 0; i < ctx.size(); ++i) {
            const int device = ctx[i]->device;
            done.push_back(ctx[i]->worker->submit([&f, i, device] {
                DeviceScope scope(device);
                f(i);
            }));
        }
    } catch (...) {
        error = std::current_exception();
    }
    for (auto& d : done) {
        try {
            d.get();
        } catch (...) {
            if (!error) error = std::current_exception();
        }
    }
    if (error) std::rethrow_exception(error);
}

/// Resident blocks per SM of `plan` with `threads` per block, without changing any device state:
/// the occupancy API for the register and thread limits (no dynamic shared memory, so no
/// cudaFuncSetAttribute is needed), the shared-memory limit computed from the device's figures.
int blocks_per_sm(const DeviceContext& c, const Plan& plan, int threads);

/// The backend's status: the CUDA devices, or why there are none.
BackendStatus probe();

}  // namespace meanshift::cuda
