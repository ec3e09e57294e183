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

/// A block's union box is tight while its modes are close (Morton order, most modes active). Late in
/// an ascent the active modes are few and scattered (the slow ones near flat crowns; the boundary
/// refinement's seeds lie on thin basin boundaries), and a block of consecutive ones can span a
/// large part of the grid (a Morton block that straddles a quadrant boundary spans the quadrants):
/// every mode of the block then visits every point of that span. The block takes its modes' own
/// boxes instead when the union holds more than kOwnBoxRatio times the largest own box: a warp's
/// lanes then diverge and read different lines, which costs at most what that factor saves.
constexpr long long kOwnBoxRatio = 2;

/// The cell range [lo, hi] of y's neighbourhood in grid dim j (as ms_group_box, one mode).
__device__ __forceinline__ void own_extent(const float* yg, const int* gi, const float* gf, int g, int j, int& lo,
                                           int& hi)
{
    const float v = yg[gi[j]], r = gf[2 * g + j];
    lo = ms_grid_coord(v - r, gf[j], gf[g + j], gi[g + j]);
    hi = ms_grid_coord(v + r, gf[j], gf[g + j], gi[g + j]);
}

/// Point range [b, e) of row r of y's own box (mixed radix over the first g - 1 dims, last fastest;
/// as ms_row_range over a box in registers).
template <int GM>
__device__ __forceinline__ void own_row_range(const int* lo, const int* hi, const int* gi, const int* start, int g,
                                              int r, int& b, int& e)
{
    long long cell = 0, mul = 1;
    int rest = r;
#pragma unroll
    for (int j = GM - 2; j >= 0; --j) {
        if (j > g - 2) continue;
        const int ext = hi[j] - lo[j] + 1;
        const int c = lo[j] + rest % ext;
        rest /= ext;
        mul *= gi[g + j + 1];
        cell += static_cast<long long>(c) * mul;
    }
    b = start[cell + lo[g - 1]];
    e = start[cell + hi[g - 1] + 1];
}

/// KMAX: private array size; EXACT: k == KMAX at compile time (loops unroll, arrays in registers).
/// PROF: the weight profile (MS_PROFILE_*, kernels/profiles/profiles.h; vMF runs the Gaussian's).
template <int KMAX, bool EXACT, bool PP, int PROF>
__global__ void __launch_bounds__(256) range_kernel_t(const RangeParams p)
{
    __shared__ int box[2 * MS_MAX_GRID_DIMS];
    // Points in the block's union box, and the largest and total of its modes' own boxes.
    __shared__ unsigned long long union_points, own_max, own_sum;
    constexpr int GM = KMAX < MS_MAX_GRID_DIMS ? KMAX : MS_MAX_GRID_DIMS;  // grid dims <= k
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
        const int g = p.g;
        if (g == 0) {  // one range [0, n): the union box is all of it
            ms_range_sums(p.points, p.precision, p.log_weight, PP ? 1 : 0, PROF, p.n, p.start, p.grid_i, p.grid_f, g,
                          box, yg, valid, lid, T, lane, p.f_load, k, p.cut2, nsh, y, t, s0, s1);
            if (lid == 0 && p.pairs)
                atomicAdd(p.pairs, static_cast<unsigned long long>(p.n) * min(vppus, p.count - blk * vppus));
        } else {
            // The union box (barriers inside), this mode's own box, and the points of each.
            ms_group_box(box, yg, valid, p.grid_i, p.grid_f, g, lid, T);
            if (lid == 0) {
                union_points = 0;
                own_max = 0;
                own_sum = 0;
            }
            __syncthreads();
            const int urows = ms_box_rows(box, g);
            long long upart = 0;
            for (int r = lid; r < urows; r += T) {
                int b, e;
                ms_row_range(box, p.grid_i, p.start, g, r, &b, &e);
                upart += e - b;
            }
            int lo[GM], hi[GM];
            int orows = 1;
#pragma unroll
            for (int j = 0; j < GM; ++j) {
                if (j >= g) continue;
                own_extent(yg, p.grid_i, p.grid_f, g, j, lo[j], hi[j]);
                if (j < g - 1) orows *= hi[j] - lo[j] + 1;
            }
            long long opoints = 0;
            const int lead = valid && lane == 0;  // one count per mode
            for (int r = 0; lead && r < orows; ++r) {
                int b, e;
                own_row_range<GM>(lo, hi, p.grid_i, p.start, g, r, b, e);
                opoints += e - b;
            }
            if (upart) atomicAdd(&union_points, static_cast<unsigned long long>(upart));
            if (lead) {
                atomicMax(&own_max, static_cast<unsigned long long>(opoints));
                atomicAdd(&own_sum, static_cast<unsigned long long>(opoints));
            }
            __syncthreads();
            const bool own = union_points > static_cast<unsigned long long>(kOwnBoxRatio) * own_max;
            const int works = valid && lane < p.f_load;
            const int rows = !works ? 0 : own ? orows : urows;
            for (int r = 0; r < rows; ++r) {
                int b, e;
                if (own)
                    own_row_range<GM>(lo, hi, p.grid_i, p.start, g, r, b, e);
                else
                    ms_row_range(box, p.grid_i, p.start, g, r, &b, &e);
                ms_range_pairs(p.points, p.precision, p.log_weight, PP ? 1 : 0, PROF, b, e, lane, p.f_load, k, p.cut2,
                               nsh, y, t, s0, s1);
            }
            if (lid == 0 && p.pairs) {
                const long long modes = min(vppus, p.count - blk * vppus);
                atomicAdd(p.pairs, own ? own_sum : union_points * static_cast<unsigned long long>(modes));
            }
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
#define MS_RANGE_EXACT(KK)                                                                                             \
    if (k == KK) return reinterpret_cast<const void*>(&range_kernel_t<KK, true, PP, MS_PROFILE_GAUSSIAN>);
    MS_RANGE_EXACT(1)
    MS_RANGE_EXACT(2)
    MS_RANGE_EXACT(3) MS_RANGE_EXACT(4) MS_RANGE_EXACT(5) MS_RANGE_EXACT(6) MS_RANGE_EXACT(7) MS_RANGE_EXACT(8)
        MS_RANGE_EXACT(9) MS_RANGE_EXACT(10) MS_RANGE_EXACT(11) MS_RANGE_EXACT(12) MS_RANGE_EXACT(13) MS_RANGE_EXACT(14)
            MS_RANGE_EXACT(15) MS_RANGE_EXACT(16)
#undef MS_RANGE_EXACT
                if (k <= 64) return reinterpret_cast<const void*>(&range_kernel_t<64, false, PP, MS_PROFILE_GAUSSIAN>);
    if (k <= 512) return reinterpret_cast<const void*>(&range_kernel_t<512, false, PP, MS_PROFILE_GAUSSIAN>);
    if (k <= kMaxRangeK)
        return reinterpret_cast<const void*>(&range_kernel_t<kMaxRangeK, false, PP, MS_PROFILE_GAUSSIAN>);
    return nullptr;
}

/// The compact profiles: fewer instantiations than the Gaussian's table (compile time): exact
/// k = 1 .. 4 (images, point clouds), then the private-array bounds 16, 64, 512 and kMaxRangeK.
template <bool PP, int PROF>
const void* compact_table(int k)
{
#define MS_RANGE_EXACT(KK)                                                                                             \
    if (k == KK) return reinterpret_cast<const void*>(&range_kernel_t<KK, true, PP, PROF>);
    MS_RANGE_EXACT(1)
    MS_RANGE_EXACT(2)
    MS_RANGE_EXACT(3) MS_RANGE_EXACT(4)
#undef MS_RANGE_EXACT
        if (k <= 16) return reinterpret_cast<const void*>(&range_kernel_t<16, false, PP, PROF>);
    if (k <= 64) return reinterpret_cast<const void*>(&range_kernel_t<64, false, PP, PROF>);
    if (k <= 512) return reinterpret_cast<const void*>(&range_kernel_t<512, false, PP, PROF>);
    if (k <= kMaxRangeK) return reinterpret_cast<const void*>(&range_kernel_t<kMaxRangeK, false, PP, PROF>);
    return nullptr;
}

template <int PROF>
const void* compact_kernel(int k, bool per_point)
{
    return per_point ? compact_table<true, PROF>(k) : compact_table<false, PROF>(k);
}

}  // namespace

const void* range_kernel(int k, bool per_point, int profile)
{
    switch (profile) {
#define MS_COMPACT_ROW(E, n, N, v, c, a) MS_PROFILE_IF(c, case v : return compact_kernel<v>(k, per_point);)
        MS_PROFILE_LIST(MS_COMPACT_ROW, ~)  // every compact profile of kernels/profiles/profile_list.h
#undef MS_COMPACT_ROW
    default: return per_point ? table<true>(k) : table<false>(k);  // Gaussian, vMF
    }
}

}  // namespace meanshift::cuda
