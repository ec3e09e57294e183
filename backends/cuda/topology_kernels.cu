// Alg. 3 (naive) and Alg. 7 (preloading) as written: a thread block is a PPU of τ PUs, split
// into τ' = τ/f_vppu vPPUs of f_vppu consecutive threads; each vPPU advances one mode at a time,
// f_load of its PUs share the n-loop (strided, i = lane, lane + f_load, …), the rest idle, and
// the partial sums are reduced inside the vPPU: warp shuffles when f_vppu ≤ 32, shared memory
// beyond. Direct form (y - x)² through the shared device header. K = 1..8 keep the per-PU
// vectors in registers; K = 0 is the generic-k path with the vectors in a global scratch area.
// SH (per-point only): each mode's log2 weights are shifted by its own maximum,
// TopologyParams::log2_shift (per-point weights beyond float32's range; one add per pair); the
// fast kernels have no such variant, so those data run here.
#include "backends/cuda/kernel_params.hpp"
#include "meanshift_device.h"

namespace meanshift::cuda {
namespace {

/// Sum of v over the vPPU (valid in its PU 0). Called by every thread of the block (it may
/// synchronise the block when f_vppu > 32). f_vppu is a power of two; for f_vppu > 32 it is a
/// multiple of 32 and `red` holds one float per warp.
__device__ float vppu_sum(float v, int f_vppu, float* red)
{
    const int width = f_vppu < 32 ? f_vppu : 32;
    for (int o = width / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (f_vppu > 32) {
        __syncthreads();  // red may still be read by the previous call
        if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = v;
        __syncthreads();
        if (threadIdx.x % f_vppu == 0) {
            float s = 0.0f;
            for (int w = 0; w < f_vppu / 32; ++w) s += red[threadIdx.x / 32 + w];
            v = s;
        }
    }
    return v;
}

template <int K, bool PP, bool PRELOAD, bool SH = false>
__global__ void __launch_bounds__(1024) topology_kernel_impl(const TopologyParams p)
{
    extern __shared__ float smem[];
    const int k = K > 0 ? K : p.k;
    const int T = blockDim.x;
    const int lane = threadIdx.x % p.f_vppu;
    const int vppus = T / p.f_vppu;
    const bool loads = lane < p.f_load;  // the other PUs of the vPPU idle (Alg. 3)
    const int s0n = PP ? k : 1;

    // Per-PU vectors: registers for K ≥ 1, global scratch for the generic path.
    constexpr int KR = K > 0 ? K : 1;
    float y_r[KR], s0_r[PP ? KR : 1], s1_r[KR];
    float* y = y_r;
    float* s0 = s0_r;
    float* s1 = s1_r;
    if constexpr (K == 0) {
        const long long g = static_cast<long long>(blockIdx.x) * T + threadIdx.x;
        y = p.scratch + g * 3 * k;
        s0 = y + k;
        s1 = y + 2 * k;
    }

    const int W = p.tile;
    float* tx = smem;  // W × k points
    float* tw = smem + static_cast<long long>(W) * k;  // W × k precisions (per-point)
    float* tc = tw + static_cast<long long>(W) * k;  // W log weights · log2(e)
    float* red = smem + (PRELOAD ? static_cast<long long>(W) * (PP ? 2 * k + 1 : k) : 0);

    // Block-uniform loop over groups of τ' modes (the grid is z PPUs).
    for (long long base = static_cast<long long>(blockIdx.x) * vppus; base < p.count;
         base += static_cast<long long>(gridDim.x) * vppus) {
        const long long mode = base + threadIdx.x / p.f_vppu;
        const long long qm = mode < p.count ? mode : p.count - 1;
        for (int d = 0; d < k; ++d) {
            y[d] = p.queries[qm * k + d];
            s1[d] = 0.0f;
        }
        for (int d = 0; d < s0n; ++d) s0[d] = 0.0f;
        // minus this mode's log2 shift (meanshift_device.h, "per-mode log2 shift")
        const float nsh = SH ? -ms_log2_shift(p.log2_shift[qm]) : 0.0f;

        if constexpr (PRELOAD) {
            for (long long t0 = 0; t0 < p.n; t0 += W) {
                const int w_eff = static_cast<int>(min(static_cast<long long>(W), p.n - t0));
                __syncthreads();
                for (int v = threadIdx.x; v < w_eff * k; v += T) {
                    tx[v] = p.points[t0 * k + v];
                    if (PP) tw[v] = p.precision[t0 * k + v];
                }
                if (PP)
                    for (int v = threadIdx.x; v < w_eff; v += T) tc[v] = p.log_weight[t0 + v] * MS_LOG2E;
                __syncthreads();
                if (loads) {
                    for (int j = lane; j < w_eff; j += p.f_load) {
                        if constexpr (PP)
                            ms_accumulate_per_point(y, tx + j * k, tw + j * k, SH ? tc[j] + nsh : tc[j], k, s0, s1);
                        else
                            ms_accumulate_shared(y, tx + j * k, k, s0, s1);
                    }
                }
            }
        } else if (loads) {
            for (long long i = lane; i < p.n; i += p.f_load) {
                if constexpr (PP)
                    ms_accumulate_per_point(y, p.points + i * k, p.precision + i * k,
                                            SH ? fmaf(p.log_weight[i], MS_LOG2E, nsh) : p.log_weight[i] * MS_LOG2E, k,
                                            s0, s1);
                else
                    ms_accumulate_shared(y, p.points + i * k, k, s0, s1);
            }
        }

        // vPPU-local reduction (Alg. 3 lines 17-18), then PU 0 writes S0 and S1 - y·S0.
        const int stride = PP ? 2 * k : k + 1;  // accumulator_stride()
        float* a = p.acc + qm * stride;
        const bool writer = lane == 0 && mode < p.count;
        for (int d = 0; d < s0n; ++d) {
            const float v = vppu_sum(s0[d], p.f_vppu, red);
            if (writer) atomicAdd(a + d, v);
            s0[d] = v;  // PU 0 keeps the total for the S1 correction below
        }
        for (int d = 0; d < k; ++d) {
            const float v = vppu_sum(s1[d], p.f_vppu, red);
            if (writer) atomicAdd(a + s0n + d, v - y[d] * s0[PP ? d : 0]);
        }
    }
}

template <bool PP, bool PRE, bool SH = false>
const void* pick(int k)
{
    switch (k) {
    case 1: return reinterpret_cast<const void*>(&topology_kernel_impl<1, PP, PRE, SH>);
    case 2: return reinterpret_cast<const void*>(&topology_kernel_impl<2, PP, PRE, SH>);
    case 3: return reinterpret_cast<const void*>(&topology_kernel_impl<3, PP, PRE, SH>);
    case 4: return reinterpret_cast<const void*>(&topology_kernel_impl<4, PP, PRE, SH>);
    case 5: return reinterpret_cast<const void*>(&topology_kernel_impl<5, PP, PRE, SH>);
    case 6: return reinterpret_cast<const void*>(&topology_kernel_impl<6, PP, PRE, SH>);
    case 7: return reinterpret_cast<const void*>(&topology_kernel_impl<7, PP, PRE, SH>);
    case 8: return reinterpret_cast<const void*>(&topology_kernel_impl<8, PP, PRE, SH>);
    default: return reinterpret_cast<const void*>(&topology_kernel_impl<0, PP, PRE, SH>);
    }
}

}  // namespace

const void* topology_kernel(int k, bool per_point, bool preload, bool log2_shift)
{
    if (per_point && log2_shift) return preload ? pick<true, true, true>(k) : pick<true, false, true>(k);
    if (per_point) return preload ? pick<true, true>(k) : pick<true, false>(k);
    return preload ? pick<false, true>(k) : pick<false, false>(k);
}

}  // namespace meanshift::cuda
