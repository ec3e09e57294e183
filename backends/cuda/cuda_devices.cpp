// The CUDA backend's devices (cuda_devices.hpp): pinned pools, occupancy, the probe.
#include "backends/cuda/cuda_devices.hpp"

#include "backends/cuda/cuda_check.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

namespace meanshift::cuda {

/// The process's pool of pinned staging blocks for `device`: every cluster() call makes its own
/// backend, so a pool per backend would never be reused. The pools themselves are never destroyed
/// (a static's destructor could run after the CUDA runtime has shut down); their blocks are freed
/// by an exit handler registered at the first pool's creation, i.e. after the runtime registered
/// its own, so it runs before the runtime's teardown (memcheck's leak check sees no pinned blocks).
PinnedPool& pinned_pool(int device)
{
    static std::mutex mutex;
    static auto* pools = new std::vector<std::unique_ptr<PinnedPool>>();
    std::lock_guard<std::mutex> lock(mutex);
    static const bool registered = [] {
        return std::atexit([] {
                   for (auto& p : *pools)
                       if (p) p->release_all();
               }) == 0;
    }();
    (void)registered;
    const std::size_t d = static_cast<std::size_t>(device);
    if (pools->size() <= d) pools->resize(d + 1);
    if (!(*pools)[d]) (*pools)[d] = std::make_unique<PinnedPool>();
    return *(*pools)[d];
}

/// Resident blocks per SM of `plan` with `threads` per block, without changing any device state:
/// the occupancy API for the register and thread limits (no dynamic shared memory, so no
/// cudaFuncSetAttribute is needed), the shared-memory limit computed from the device's figures.
int blocks_per_sm(const DeviceContext& c, const Plan& plan, int threads)
{
    DeviceScope scope(c.device);
    int by_regs = 0;
    MS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&by_regs, plan.kernel, threads, 0));
    cudaFuncAttributes fa{};
    MS_CUDA_CHECK(cudaFuncGetAttributes(&fa, plan.kernel));
    const std::size_t smem = plan.smem + fa.sharedSizeBytes;
    if (smem == 0) return by_regs;
    if (smem > static_cast<std::size_t>(c.prop.sharedMemPerBlockOptin)) return 0;
    const std::size_t per_block = smem + c.prop.reservedSharedMemPerBlock;
    const int by_smem = static_cast<int>(c.prop.sharedMemPerMultiprocessor / per_block);
    return std::min(by_regs, by_smem);
}

BackendStatus probe()
{
    BackendStatus st;
    st.name = "cuda";
    st.compiled_in = true;
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();  // clear the (non-sticky) error
        st.reason = "no CUDA device: cudaGetDeviceCount failed: " + error_text(e);
        return st;
    }
    if (count == 0) {
        st.reason = "no CUDA device";
        return st;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp p{};
        const cudaError_t pe = cudaGetDeviceProperties(&p, i);
        if (pe != cudaSuccess) {
            st.reason = "no CUDA device: cudaGetDeviceProperties(" + std::to_string(i) + ") failed: " + error_text(pe);
            st.devices.clear();
            return st;
        }
        st.devices.push_back(describe(i, p));
    }
    st.usable = true;
    return st;
}

}  // namespace meanshift::cuda
