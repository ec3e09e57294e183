// The truncated kernel over the cell grid's block-sparse ranges (kernels/meanshift_ranges.h, one
// source with OpenCL): a block (PPU) takes threads / f_vppu consecutive queries, builds the union
// box of their neighbourhoods in shared memory and loops over its rows; the f_vppu threads of a
// vPPU reduce their sums by warp shuffles (Alg. 3 lines 17-18), within a warp; a vPPU wider than a
// warp adds its warps' sums into the (zeroed) accumulators atomically.
#include "backends/cuda/kernel_params.hpp"
#include "meanshift_ranges.h"

namespace meanshift::cuda {
static_assert(kMaxRangeGridDims == MS_MAX_GRID_DIMS, "host and kernel disagree on the box size");
namespace {

/// KMAX: private array size; EXACT: k == KMAX at compile time (loops unroll, arrays in registers).
template <int KMAX, bool EXACT, bool PP>
__global__ void __launch_bounds__(256) range_kernel_t(const RangeParams p)
{
    __shared__ int box[2 * MS_MAX_GRID_DIMS];
    const int k = EXACT ? KMAX : p.k;
    const int T = blockDim.x;
    const int lid = threadIdx.x;
    const int lane = lid % p.f_vppu;
    const long long vppus = T / p.f_vppu;
    const int ns0 = PP ? k : 1;
    for (long long blk = blockIdx.x; blk * vppus < p.count; blk += gridDim.x) {
        const long long q = blk * vppus + lid / p.f_vppu;
        const int valid = q < p.count;
        const float* yg = p.queries + (valid ? q : p.count - 1) * k;
        float y[KMAX], t[KMAX], s0[PP ? KMAX : 1], s1[KMAX];
#pragma unroll
        for (int d = 0; d < k; ++d) {
            y[d] = yg[d];
            s1[d] = 0.0f;
            if (PP) s0[d] = 0.0f;
        }
        s0[0] = 0.0f;
        // minus the mode's log2 shift (per-point weights beyond float32's range), else 0: the FMA
        // forming L c_i + nsh replaces a multiply (meanshift_ranges.h)
        const float nsh = PP && p.log2_shift ? -ms_log2_shift(p.log2_shift[valid ? q : p.count - 1]) : 0.0f;
        ms_range_sums(p.points, p.precision, p.log_weight, PP ? 1 : 0, p.n, p.start, p.grid_i, p.grid_f, p.g, box, yg,
                      valid, lid, T, lane, p.f_load, k, p.cut2, nsh, y, t, s0, s1);
        if (lid == 0 && p.pairs) {
            const long long modes = min(vppus, p.count - blk * vppus);
            atomicAdd(p.pairs, static_cast<unsigned long long>(ms_box_points(box, p.grid_i, p.start, p.g, p.n) * modes));
        }
        // vPPU reduction: the lanes of a vPPU are consecutive threads; within a warp by shuffles.
        const int width = p.f_vppu < 32 ? p.f_vppu : 32;
        for (int off = width / 2; off > 0; off /= 2) {
#pragma unroll
            for (int d = 0; d < ns0; ++d) s0[d] += __shfl_down_sync(0xffffffffu, s0[d], off, width);
#pragma unroll
            for (int d = 0; d < k; ++d) s1[d] += __shfl_down_sync(0xffffffffu, s1[d], off, width);
        }
        if (valid && lane % width == 0) {
            float* a = p.acc + q * (ns0 + k);
            if (p.f_vppu <= 32) {
#pragma unroll
                for (int d = 0; d < ns0; ++d) a[d] = s0[d];
#pragma unroll
                for (int d = 0; d < k; ++d) a[ns0 + d] = s1[d];
            } else {  // one partial sum per warp of the vPPU
#pragma unroll
                for (int d = 0; d < ns0; ++d) atomicAdd(a + d, s0[d]);
#pragma unroll
                for (int d = 0; d < k; ++d) atomicAdd(a + ns0 + d, s1[d]);
            }
        }
    }
}

template <bool PP>
const void* table(int k)
{
#define MS_RANGE_EXACT(KK) \
    if (k == KK) return reinterpret_cast<const void*>(&range_kernel_t<KK, true, PP>);
    MS_RANGE_EXACT(1) MS_RANGE_EXACT(2) MS_RANGE_EXACT(3) MS_RANGE_EXACT(4) MS_RANGE_EXACT(5) MS_RANGE_EXACT(6)
    MS_RANGE_EXACT(7) MS_RANGE_EXACT(8) MS_RANGE_EXACT(9) MS_RANGE_EXACT(10) MS_RANGE_EXACT(11) MS_RANGE_EXACT(12)
    MS_RANGE_EXACT(13) MS_RANGE_EXACT(14) MS_RANGE_EXACT(15) MS_RANGE_EXACT(16)
#undef MS_RANGE_EXACT
    if (k <= 64) return reinterpret_cast<const void*>(&range_kernel_t<64, false, PP>);
    if (k <= 512) return reinterpret_cast<const void*>(&range_kernel_t<512, false, PP>);
    if (k <= kMaxRangeK) return reinterpret_cast<const void*>(&range_kernel_t<kMaxRangeK, false, PP>);
    return nullptr;
}

}  // namespace

const void* range_kernel(int k, bool per_point) { return per_point ? table<true>(k) : table<false>(k); }

}  // namespace meanshift::cuda
