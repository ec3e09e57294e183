#pragma once
// Internal (benchmarks): device time of the kernels of the last step() of a cuda backend, measured
// with CUDA events around the launches (transfers and host work excluded); the slowest device
// when several run. Returns -1 for a backend that is not the cuda backend.

#include <meanshift/backend.hpp>

namespace meanshift::cuda {

double last_step_kernel_seconds(const Backend& backend);

}  // namespace meanshift::cuda
