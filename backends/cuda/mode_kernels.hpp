#pragma once
// The modes on the device (cuda_backend.cpp's binding): positions of a device's share of the modes
// (m × k float32) and the list of its active modes (int32 indices into the share). Per step, for
// each chunk of the active list: gather the active modes into the query buffer, let the pair
// kernels accumulate S0 / S1 into acc (kernel_params.hpp), then finish: Alg. 3 line 20 + Alg. 5 +
// the status through ms_finish_dim / ms_mode_status of kernels/meanshift_device.h (the one device
// copy, shared with OpenCL), positions updated in place, one ModeRecord per active slot. With
// retire, the binding (GpuBinding) uploads the survivors' list from the host; launch_compact (cub,
// order kept) is the device alternative, not used by the binding.
// Plain C++ declarations: the host code includes this without CUDA's device headers.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace meanshift::cuda {

/// What crosses to the host per advanced mode and step (12 bytes).
struct ModeRecord {
    std::int32_t mode;  ///< index in the device's share of the modes
    float shift2;  ///< squared shift in the mode's metric (Alg. 5)
    std::int32_t status;  ///< MS_STATUS_* = meanshift::ModeStatus
};

struct FinishParams {
    float* positions = nullptr;  ///< share × k, updated in place
    const float* metric = nullptr;  ///< share × k, or nullptr (Euclidean: 1 per dimension)
    const std::int32_t* active = nullptr;  ///< count indices of this chunk
    long long count = 0;
    int k = 0;
    int per_point = 0;  ///< accumulator layout (kernel_params.hpp accumulator_stride)
    const float* acc = nullptr;  ///< count × accumulator_stride, S1 relative to the mode
    float tol2 = 0;
    ModeRecord* records = nullptr;  ///< count
    unsigned char* keep = nullptr;  ///< count: 1 when the mode stays active (status Active)
    /// vMF (PreparedData::sphere_radius > 0): [origin_0 .. origin_{k-1}, radius]; each new position
    /// is projected onto that sphere before its shift is measured. nullptr: no projection.
    const float* sphere = nullptr;
};

/// queries[i·k + d] = positions[active[i]·k + d], i < count.
cudaError_t launch_gather(const float* positions, const std::int32_t* active, long long count, int k, float* queries,
                          cudaStream_t stream);
/// active[i] = i, i < count.
cudaError_t launch_iota(std::int32_t* active, long long count, cudaStream_t stream);
cudaError_t launch_finish(const FinishParams& p, cudaStream_t stream);
/// Temporary storage of launch_compact for up to `count` items.
cudaError_t compact_temp_bytes(long long count, std::size_t& bytes);
/// out = the in[i] with keep[i] != 0, in order; *selected (device) = how many.
cudaError_t launch_compact(void* temp, std::size_t temp_bytes, const std::int32_t* in, const unsigned char* keep,
                           std::int32_t* out, std::int32_t* selected, long long count, cudaStream_t stream);

/// The max pass of the per-mode log2 shift (kernels/meanshift_device.h) for the topology and range
/// kernels, in the direct form over the prepared points (n × k row-major, per-point model): for each
/// of the `count` queries (count × k) the largest L c_i − L/2 D² over the points with D² ≤ cut2 goes
/// into out[q] (count ints, filled with MS_SHIFT_EMPTY bytes before) by atomic max on the ordered
/// bits. Queries × point slices make at least `blocks_wanted` blocks where n allows.
cudaError_t launch_log2_max(const float* points, const float* precision, const float* log_weight, long long n, int k,
                            float cut2, const float* queries, long long count, int* out, int blocks_wanted,
                            cudaStream_t stream);

/// Loads the kernels above (CUDA loads lazily at first launch) so that the first step is not slower.
cudaError_t warm_up_mode_kernels(cudaStream_t stream);

}  // namespace meanshift::cuda
