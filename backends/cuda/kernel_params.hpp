#pragma once
// Launch parameters shared by the host code (cuda_backend.cpp, plain C++) and the kernels (.cu).
// Plain structs passed by value to cudaLaunchKernel; no CUDA headers needed here.

namespace meanshift::cuda {

/// Accumulator layout written by every kernel, per query: [S0 (1 value for the shared model,
/// k for per-point), S1 (k values)], with S1 *relative to the query*:
///   shared:    S0 = Σ e_i,      S1_d = Σ e_i (x_id - y_d)
///   per-point: S0_d = Σ e_i w_id, S1_d = Σ e_i w_id (x_id - y_d)
/// so the new mode is y_d + S1_d / S0_d (the shift keeps float32 accuracy even for data far
/// from the origin). Kernels add into it (atomicAdd), so point chunks and point slices of
/// several launches sum up.
///
/// Per-point weights beyond float32's range (detail::needs_log2_shift): the topology, range and GEMM
/// kernels take `log2_shift` (count ints, the ordered maxima of the max pass, kernels/meanshift_device.h
/// "per-mode log2 shift") and weigh by 2^(L c_i − L/2 D² − m_q), so the sums above carry a factor
/// 2^-m_q per query (the ratio does not; Binding::accumulate undoes it). nullptr: no shift. The fast
/// kernels have none: such data run the topology kernels instead.
inline int accumulator_stride(int k, bool per_point)
{
    return per_point ? 2 * k : k + 1;
}

/// "Fast" family: f_vppu = 1, each PU (thread) carries r modes (register blocking), points in
/// the tile-record layout of backends/gpu/tile_layout.hpp (tile-centred, expanded exponent; the
/// record stride is gpu::record_stride, which FastLayout in fast_kernel.cuh mirrors at compile time).
struct FastParams {
    const float* data = nullptr;  ///< tiles × tile × stride floats (gpu::TileLayout::records, 16-byte aligned rows)
    const float* centres = nullptr;  ///< tiles × k tile centres (gpu::TileLayout::centres)
    const float* radii = nullptr;  ///< tiles: max |x - c_t| (gpu::TileLayout::radii; shared model)
    long long tiles = 0;  ///< tiles in this launch
    int tile = 0;  ///< points per tile (W); also the preload width
    const float* queries = nullptr;  ///< count × k
    float* acc = nullptr;  ///< count × accumulator_stride
    long long count = 0;
    long long groups = 0;  ///< query groups of threads·r queries
    long long units = 0;  ///< groups × slices work units
    long long tiles_per_slice = 0;  ///< tiles of one point slice
};

/// "Topology" family: Alg. 3 / Alg. 7 as written, any f_vppu (power of two) and f_load, direct
/// form, points in the prepared row-major layout.
struct TopologyParams {
    const float* points = nullptr;  ///< n × k
    const float* precision = nullptr;  ///< n × k (per-point model)
    const float* log_weight = nullptr;  ///< n (per-point model), natural log
    long long n = 0;
    int k = 0;
    int f_vppu = 1;
    int f_load = 1;
    int tile = 0;  ///< preload width (Alg. 7 preload_size)
    const float* queries = nullptr;  ///< count × k
    float* acc = nullptr;  ///< count × accumulator_stride
    long long count = 0;
    float* scratch = nullptr;  ///< generic-k path: 3k floats per thread of the grid
    const int* log2_shift = nullptr;  ///< count ordered maxima (per-point model), or nullptr
};

/// "Range" family: the truncated kernel (Options::cutoff) over the block-sparse point ranges of
/// the cell grid (kernels/meanshift_ranges.h, the source OpenCL shares), direct form, points in
/// the prepared (cell-sorted) row-major order. A block (≤ 256 threads) takes threads / f_vppu consecutive queries;
/// the first f_load threads of each vPPU share its ranges (any power-of-two f_vppu: warp shuffles,
/// then atomics across the warps of a wider vPPU).
struct RangeParams {
    const float* points = nullptr;  ///< n × k, sorted by cell
    const float* precision = nullptr;  ///< n × k (per-point model)
    const float* log_weight = nullptr;  ///< n (per-point model), natural log
    int n = 0;
    int k = 0;
    const int* start = nullptr;  ///< prod(cells) + 1 (g ≥ 1)
    const int* grid_i = nullptr;  ///< [dims, cells] (g each)
    const float* grid_f = nullptr;  ///< [origin, side, radius] (g each)
    int g = 0;  ///< grid dims; 0 = one range [0, n)
    float cut2 = 0;  ///< c², prepared (Mahalanobis) units
    int f_vppu = 1;
    int f_load = 1;
    const float* queries = nullptr;  ///< count × k
    float* acc = nullptr;  ///< count × accumulator_stride, written (not added)
    long long count = 0;
    unsigned long long* pairs = nullptr;  ///< += candidate pairs of the launch (box points × modes)
    const int* log2_shift = nullptr;  ///< count ordered maxima (per-point model), or nullptr
};

/// Grid dims the range kernels' box holds (MS_MAX_GRID_DIMS of kernels/meanshift_ranges.h).
constexpr int kMaxRangeGridDims = 16;
/// Largest k of the range kernels (registers for k ≤ 16, thread-local arrays up to this).
constexpr int kMaxRangeK = 4096;

/// "GEMM" family: exponents through tensor-core matrix products for high k, exact or
/// truncated (cut_log2), points in the prepared row-major layout (gemm_kernel.cu).
struct GemmParams {
    const float* points = nullptr;  ///< n × k
    const float* precision = nullptr;  ///< n × k (per-point model)
    const float* log_weight = nullptr;  ///< n (per-point model), natural log
    long long n = 0;
    int k = 0;
    float cut_log2 = 0;  ///< −½ log2(e) c² (a pair below it has weight 0); −inf = exact kernel
    const float* queries = nullptr;  ///< count × k
    float* acc = nullptr;  ///< count × accumulator_stride, added to (atomics)
    long long count = 0;
    /// Per-point model: count ordered maxima, or nullptr. The max-pass instantiation
    /// (gemm_log2_max_kernel) raises them by atomic max and writes nothing else.
    int* log2_shift = nullptr;
};

/// One instantiation of the GEMM kernel: launch with `threads` threads and `smem` bytes of dynamic
/// shared memory, ceil(count / modes) blocks in x and any number of point slices in y.
struct GemmKernel {
    const void* fn = nullptr;
    int threads = 0;
    int modes = 0;  ///< modes per block (BM)
    int points = 0;  ///< points per staged tile
    unsigned long smem = 0;
};

/// What the GEMM kernels may use on the bound devices: sm_90a code (`wgmma`: wgmma_device() holds on
/// every device) and `smem`, the smallest opt-in shared memory per block (cudaDeviceProp::
/// sharedMemPerBlockOptin): a kernel that needs more is not chosen.
struct GemmTarget {
    bool wgmma = false;
    unsigned long smem = ~0ul;
};
/// Largest k of the GEMM kernels: 1,024 (shared H), 128 (per-point H). The shared model runs the
/// fp16 kernels (where `target.wgmma` allows: gemm_wgmma_kernel at k = 33..64, gemm_wgmma_wide_kernel
/// at k = 129..512; else gemm_f16_kernel up to k = 256, gemm_wide_kernel beyond or where the f16
/// kernel's shared memory exceeds the device's), the per-point model the TF32 one (gemm_kernel.cu).
/// `truncated`: the launch masks pairs beyond GemmParams::cut_log2 (the exact kernel skips that test).
/// Empty (fn = nullptr) where no kernel takes k on this target.
GemmKernel gemm_kernel(int k, bool per_point, bool truncated, const GemmTarget& target);
/// The fp16 tensor-core kernel of the shared model, k ≤ 256 (gemm_f16_kernel.cu); empty above.
GemmKernel gemm_f16_kernel(int k, bool truncated);
/// The fp16 kernel tiled over the dimensions (gemm_wide_kernel.cu): k ≤ 1,024, 64 or 32 modes × 16
/// or 32 points per block; empty above, or where it needs more than `smem_limit` bytes of shared memory.
GemmKernel gemm_wide_kernel(int k, bool truncated, unsigned long smem_limit);
/// The shared model on Hopper's warpgroup MMA (gemm_wgmma_kernel.cu): k = 33..64 with k % 4 == 0,
/// empty elsewhere; its code is sm_90a only, so launch it only where wgmma_device() holds.
GemmKernel gemm_wgmma_kernel(int k, bool truncated);
/// The shared model on warpgroup MMA with the modes in shared memory (gemm_wgmma_wide_kernel.cu):
/// k = 129..512 (τ = 256; 128 modes × 64-point tiles up to k = 256, 64 modes × 32-point tiles with
/// the dimensions split between the two warpgroups beyond), empty elsewhere; sm_90a code only, as
/// gemm_wgmma_kernel.
GemmKernel gemm_wgmma_wide_kernel(int k, bool truncated);
/// Whether a device of this compute capability runs the sm_90a code of gemm_wgmma_kernel (9.0 only:
/// arch-specific code does not carry over to later architectures).
constexpr bool wgmma_device(int major, int minor)
{
    return major == 9 && minor == 0;
}
/// The max pass of the per-point GEMM kernel (gemm_kernel(k, true, truncated)'s shape, threads and
/// shared memory): the largest log2 weight L c_i − L/2 D² of each query over the launch's points
/// (within the cutoff) into GemmParams::log2_shift by atomic max on the ordered bits; nullptr above k = 128.
const void* gemm_log2_max_kernel(int k, bool truncated);

/// Kernel entry points (nullptr when that combination is not instantiated).
/// Fast: k in 1..8, r in {1, 2, 4, 8} with k·r ≤ 32; at most 256 threads per block. `variant`
/// of the point loop: 1 = run-time tile width, unrolled 2×; 2 / 3 = tile width fixed at compile
/// time, unrolled 4× / 8×, per-point pairs in Horner form (only with preloading and a tile of 512
/// or 1024 points; otherwise variant 1).
const void* fast_kernel_shared(int k, int r, bool preload, int tile = 0, int variant = 1);
const void* fast_kernel_per_point(int k, int r, bool preload, int tile = 0, int variant = 1);
/// Topology: any k ≥ 1 (templates for 1..8, a generic path beyond). `log2_shift`: the per-point
/// instantiation that subtracts TopologyParams::log2_shift (one add per pair more).
const void* topology_kernel(int k, bool per_point, bool preload, bool log2_shift = false);
/// Range: 1 ≤ k ≤ kMaxRangeK.
/// profile: MS_PROFILE_* (KernelProfile's value); the Gaussian's kernels for the Gaussian and vMF.
const void* range_kernel(int k, bool per_point, int profile = 0);

/// Dynamic shared memory of a topology launch: preload tile plus the reduction buffer.
inline unsigned long topology_smem_bytes(int k, bool per_point, bool preload, int tile, int threads)
{
    unsigned long floats = static_cast<unsigned long>(threads / 32);
    if (preload) floats += static_cast<unsigned long>(tile) * static_cast<unsigned long>(per_point ? 2 * k + 1 : k);
    return floats * sizeof(float);
}

/// The default preload tile of a topology launch: τ points, halved until the launch's shared memory
/// fits `smem` bytes (the device's opt-in limit); 0 where not even one point fits (then no staging).
/// At k = 384 a tile of 256 points needs 393,248 bytes, more than any GPU has: the default shrinks
/// instead of failing; an explicit preload_size is taken as given.
inline int topology_tile(int k, bool per_point, int threads, unsigned long smem)
{
    int tile = threads;
    while (tile > 0 && topology_smem_bytes(k, per_point, true, tile, threads) > smem) tile /= 2;
    return tile;
}

}  // namespace meanshift::cuda
