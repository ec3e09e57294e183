#pragma once
// Internal: a host → device copy from pageable memory through a pinned staging block. The driver's
// own pageable path copies into its staging buffers on the calling thread; here each piece is
// copied into the pinned block on the host threads, then sent by DMA. Used by the CUDA binding's
// rebind() (a 100 MP image's band: ~110 MB of points and ~22 MB of grid offsets per band), where the
// modes' pinned staging block is already held.
//
//   void staged_upload(dst, src, bytes, stage, stage_bytes, stream)
//       copies `bytes` from host `src` to device `dst`, stage_bytes (> 0) at a time through the pinned
//       block `stage`; returns when the copy is complete (the stage is free again). Throws DeviceError.

#include "backends/cuda/cuda_check.hpp"
#include "skeleton/src/core/parallel.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace meanshift::cuda {

inline void staged_upload(void* dst, const void* src, std::size_t bytes, void* stage, std::size_t stage_bytes,
                          cudaStream_t stream)
{
    constexpr std::size_t kSlice = std::size_t{1} << 20;  // bytes a thread copies at once
    auto* out = static_cast<char*>(dst);
    const auto* in = static_cast<const char*>(src);
    auto* buf = static_cast<char*>(stage);
    for (std::size_t done = 0; done < bytes;) {
        const std::size_t piece = std::min(stage_bytes, bytes - done);
        const auto slices = static_cast<::meanshift::Index>((piece + kSlice - 1) / kSlice);
        MS_PARALLEL_FOR(static_cast<::meanshift::Index>(piece / 4))
        for (::meanshift::Index j = 0; j < slices; ++j) {
            const std::size_t a = static_cast<std::size_t>(j) * kSlice;
            std::memcpy(buf + a, in + done + a, std::min(kSlice, piece - a));
        }
        MS_CUDA_CHECK(cudaMemcpyAsync(out + done, buf, piece, cudaMemcpyHostToDevice, stream));
        MS_CUDA_CHECK(cudaStreamSynchronize(stream));  // the stage is refilled next
        done += piece;
    }
}

}  // namespace meanshift::cuda
