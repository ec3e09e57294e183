#pragma once
// Internal: the CUDA binding (cuda_binding.cpp), derived from the GPU binding lifecycle
// (backends/gpu/gpu_binding.hpp) and rebindable (backends/gpu/rebindable.hpp).

#include "backends/cuda/cuda_devices.hpp"
#include "backends/cuda/cuda_plan.hpp"

#include <meanshift/backend.hpp>

#include <memory>

namespace meanshift::cuda {

/// Binds `data` on the devices of `ctx` (its modes split among them in contiguous shares) with a
/// resolved topology and the plan make_plan() gave for it. Throws DeviceError when a device lacks
/// the memory for the mode and query buffers (or, for the truncated kernel, for all points).
std::unique_ptr<Binding> make_binding(Contexts ctx, std::shared_ptr<const PreparedData> data, const Topology& topology,
                                      const BackendOptions& options, const Plan& plan);

}  // namespace meanshift::cuda
