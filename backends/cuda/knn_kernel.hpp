#pragma once
// The brute-force k-nearest-neighbour search (kernels/meanshift_knn.h) launched from CUDA host code.
// Plain C++ declarations: the host code includes this without CUDA's device headers.

#include <cuda_runtime_api.h>

namespace meanshift::cuda {

/// out[q · count + i] = the i-th smallest squared distance from query q to the n points, q < m
/// (device pointers, row-major float32; 1 <= count <= gpu::kKnnMaxCount, k <= gpu::kKnnMaxDims,
/// backends/gpu/knn_limits.hpp).
cudaError_t launch_knn(const float* points, int n, const float* queries, long long m, int k, int count, float* out,
                       cudaStream_t stream);

}  // namespace meanshift::cuda
