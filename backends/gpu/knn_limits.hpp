#pragma once
// Internal: what both GPU backends' brute-force k-NN search (kernels/meanshift_knn.h) takes, and how
// they split the queries, in one place for CUDA and OpenCL.

#include "skeleton/src/core/host_nearest.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <string>

namespace meanshift::gpu {

/// Largest neighbour count (MS_KNN_MAX: the private array) and dimension count (MS_KNN_TILE: one
/// point must fit the local-memory tile); backends/cuda/knn_kernel.cu asserts they agree.
inline constexpr int kKnnMaxCount = 64;
inline constexpr int kKnnMaxDims = 2048;

/// detail::check_nearest_arguments plus the kernel's limits: k <= kKnnMaxDims, n < 2^31 (32-bit
/// point indices). Throws InvalidArgument naming `who`.
inline void check_knn_arguments(const MatrixF& points, const MatrixF& queries, int count, const std::string& who)
{
    detail::check_nearest_arguments(points, queries, count, kKnnMaxCount, who);
    if (points.cols() > kKnnMaxDims || points.rows() > INT_MAX)
        throw InvalidArgument(who + ": nearest_distances takes up to " + std::to_string(kKnnMaxDims) +
                              " dimensions and 2^31 - 1 points");
}

/// Queries per launch: their m × count float results take at most `cap_bytes` of device memory.
inline Index knn_chunk(Index m, int count, std::size_t cap_bytes)
{
    const auto per_query = static_cast<std::size_t>(count) * sizeof(float);
    return std::min<Index>(m, std::max<Index>(1, static_cast<Index>(cap_bytes / per_query)));
}

}  // namespace meanshift::gpu
