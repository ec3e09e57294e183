#pragma once
// The fast kernels: f_vppu = 1, each PU (thread) carries R modes in registers (register
// blocking), a thread block is a PPU, and the points come in tiles of W (Alg. 7 preload_size)
// that are either staged in shared memory (PRELOAD) or read straight from global memory (the
// naive variant: every lane reads the same point, which the hardware broadcasts).
//
// Exponent in the expanded form, but relative to a per-tile centre c_t (tiled_layout.hpp):
//   with p' = x - c_t, q' = y - c_t (both small for every pair whose weight matters)
//   shared:    log2 e_i = 2L q'·p' - L|p'|² - L|q'|²            (L = log2(e)/2)
//   per-point: log2 e_i = log2e·c_i - L Σ w_d p'_d² + Σ_d (2L w_d p'_d) q'_d + (-L w_d) q'_d²
// The layout stores A_d = 2L(w_d)p'_d, [B_d = -L w_d,] C = the point constant, so one pair costs
// k FMAs (+1 add for |q'|², shared) or 2k FMAs (per-point), one ex2, and k+1 (2k) FMAs to
// accumulate. The per-tile sums are folded into query-relative totals at the end of each tile.
#include "backends/cuda/kernel_params.hpp"
#include "meanshift_device.h"

namespace meanshift::cuda {

/// L = log2(e)/2: exp(-D²/2) = exp2(-L D²).
constexpr float kHalfLog2e = -MS_NEG_HALF_LOG2E;

__device__ __forceinline__ float ex2_approx(float x)
{
    // One MUFU.EX2; flushes results below 2^-126 to 0 (those weights are negligible anyway).
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

template <int K, bool PP>
struct FastLayout {
    static constexpr int kFloats = PP ? 2 * K + 1 : K + 1;
    static constexpr int kStride = (kFloats + 3) / 4 * 4;
    static constexpr int kVec = kStride / 4;
    static constexpr int kS0 = PP ? K : 1;  // accumulated S0 values per mode
};

template <int VEC, bool PRELOAD>
__device__ __forceinline__ void load_point(const float4* src, int i, float (&pt)[4 * VEC])
{
#pragma unroll
    for (int v = 0; v < VEC; ++v) {
        const float4 f = PRELOAD ? src[i * VEC + v] : __ldg(src + i * VEC + v);
        pt[4 * v + 0] = f.x;
        pt[4 * v + 1] = f.y;
        pt[4 * v + 2] = f.z;
        pt[4 * v + 3] = f.w;
    }
}

/// Shared model, one tile: s0 += e, s1 += e·A with e = exp2(C + A·q' [- L|q'|² when SUB]).
template <int K, int R, int VEC, bool PRELOAD, bool SUB>
__device__ __forceinline__ void tile_sums_shared(const float4* src, int W, const float (&qp)[R][K],
                                                 const float (&qx)[R][1], float (&s0)[R][1], float (&s1)[R][K])
{
#pragma unroll 4
    for (int i = 0; i < W; ++i) {
        float pt[4 * VEC];
        load_point<VEC, PRELOAD>(src, i, pt);
#pragma unroll
        for (int j = 0; j < R; ++j) {
            float x = pt[K];
#pragma unroll
            for (int d = 0; d < K; ++d) x = fmaf(qp[j][d], pt[d], x);
            const float e = ex2_approx(SUB ? x - qx[j][0] : x);
            s0[j][0] += e;
#pragma unroll
            for (int d = 0; d < K; ++d) s1[j][d] = fmaf(e, pt[d], s1[j][d]);
        }
    }
}

/// Per-point model, one tile: e = exp2(C + Σ A_d q'_d + B_d q'_d²), s0_d += e·B_d, s1_d += e·A_d.
template <int K, int R, int VEC, bool PRELOAD>
__device__ __forceinline__ void tile_sums_per_point(const float4* src, int W, const float (&qp)[R][K],
                                                    const float (&qx)[R][K], float (&s0)[R][K], float (&s1)[R][K])
{
#pragma unroll 2
    for (int i = 0; i < W; ++i) {
        float pt[4 * VEC];
        load_point<VEC, PRELOAD>(src, i, pt);
#pragma unroll
        for (int j = 0; j < R; ++j) {
            float x = pt[2 * K];
#pragma unroll
            for (int d = 0; d < K; ++d) {
                x = fmaf(qp[j][d], pt[d], x);
                x = fmaf(qx[j][d], pt[K + d], x);
            }
            const float e = ex2_approx(x);
#pragma unroll
            for (int d = 0; d < K; ++d) {
                s0[j][d] = fmaf(e, pt[K + d], s0[j][d]);
                s1[j][d] = fmaf(e, pt[d], s1[j][d]);
            }
        }
    }
}

/// At most 256 threads per block; two blocks per SM where the register blocking leaves room
/// (k·r ≤ 24, per-point 2k·r ≤ 24: at most 128 registers, no spills), so that 16 warps hide
/// the ex2 and FMA latencies.
template <int K, int R, bool PP, bool PRELOAD>
__global__ void __launch_bounds__(256, ((PP ? 2 : 1) * K * R <= 24 ? 2 : 1)) fast_kernel(const FastParams p)
{
    using Lay = FastLayout<K, PP>;
    extern __shared__ float4 s_tile[];
    const float4* data = reinterpret_cast<const float4*>(p.data);
    const int T = blockDim.x;
    const int W = p.tile;
    const long long tile_vecs = static_cast<long long>(W) * Lay::kVec;

    for (long long u = blockIdx.x; u < p.units; u += gridDim.x) {
        const long long group = u % p.groups;
        const long long slice = u / p.groups;
        const long long t_begin = slice * p.tiles_per_slice;
        const long long t_end = min(t_begin + p.tiles_per_slice, p.tiles);
        const long long q_base = group * T * R + threadIdx.x;

        float S0[R][Lay::kS0], S1[R][K];
#pragma unroll
        for (int j = 0; j < R; ++j) {
#pragma unroll
            for (int d = 0; d < Lay::kS0; ++d) S0[j][d] = 0.0f;
#pragma unroll
            for (int d = 0; d < K; ++d) S1[j][d] = 0.0f;
        }

        for (long long t = t_begin; t < t_end; ++t) {
            // Query relative to this tile's centre (re-read each tile: saves R·K registers).
            // sq = |q'|², needed below to decide whether |q'|² may be factored out of the tile.
            float qp[R][K], qx[R][Lay::kS0];
            bool factor = true;  // shared model: every lane may factor exp2(-L|q'|²) out of the tile
#pragma unroll
            for (int j = 0; j < R; ++j) {
                const long long qi = min(q_base + static_cast<long long>(j) * T, p.count - 1);
                float sq = 0.0f;
#pragma unroll
                for (int d = 0; d < K; ++d) {
                    qp[j][d] = __ldg(p.queries + qi * K + d) - __ldg(p.centres + t * K + d);
                    sq = fmaf(qp[j][d], qp[j][d], sq);
                    if constexpr (PP) qx[j][d] = qp[j][d] * qp[j][d];
                }
                if constexpr (!PP) {
                    qx[j][0] = kHalfLog2e * sq;
                    // Without the -L|q'|² term a pair's exponent is 2L q'·p' - L|p'|² ≤ 2L|q'|·r_t
                    // (r_t = tile radius): the tile sums stay finite (< 2^110) when that is ≤ 100, and
                    // exp2(-L|q'|²) is applied in two halves, each ≥ 2^-125, when L|q'|² ≤ 250.
                    const float rt = __ldg(p.radii + t);
                    factor = factor && qx[j][0] <= 250.0f && 4.0f * kHalfLog2e * kHalfLog2e * sq * rt * rt <= 1.0e4f;
                }
            }
            if constexpr (!PP) factor = __all_sync(0xffffffffu, factor);

            const float4* src;
            if constexpr (PRELOAD) {
                __syncthreads();  // previous tile fully consumed
                const float4* g = data + t * tile_vecs;
                for (long long v = threadIdx.x; v < tile_vecs; v += T) s_tile[v] = __ldg(g + v);
                __syncthreads();
                src = s_tile;
            } else {
                src = data + t * tile_vecs;
            }

            float s0[R][Lay::kS0], s1[R][K];
#pragma unroll
            for (int j = 0; j < R; ++j) {
#pragma unroll
                for (int d = 0; d < Lay::kS0; ++d) s0[j][d] = 0.0f;
#pragma unroll
                for (int d = 0; d < K; ++d) s1[j][d] = 0.0f;
            }

            if constexpr (!PP) {
                if (factor)
                    tile_sums_shared<K, R, Lay::kVec, PRELOAD, false>(src, W, qp, qx, s0, s1);
                else
                    tile_sums_shared<K, R, Lay::kVec, PRELOAD, true>(src, W, qp, qx, s0, s1);
            } else {
                tile_sums_per_point<K, R, Lay::kVec, PRELOAD>(src, W, qp, qx, s0, s1);
            }

            // Fold the tile sums into query-relative totals: Σ e w (p' - q').
            constexpr float inv2L = 0.5f / kHalfLog2e;
            constexpr float invNegL = -1.0f / kHalfLog2e;
#pragma unroll
            for (int j = 0; j < R; ++j) {
                if constexpr (!PP) {
                    // The factored-out exp2(-L|q'|²) is applied here as f·f (f ≥ 2^-125: no flush to 0).
                    const float f = factor ? ex2_approx(-0.5f * qx[j][0]) : 1.0f;
                    S0[j][0] += f * (f * s0[j][0]);
#pragma unroll
                    for (int d = 0; d < K; ++d) S1[j][d] += f * (f * fmaf(s1[j][d], inv2L, -qp[j][d] * s0[j][0]));
                } else {
#pragma unroll
                    for (int d = 0; d < K; ++d) {
                        const float sw = s0[j][d] * invNegL;  // Σ e w_d over the tile
                        S0[j][d] += sw;
                        S1[j][d] += fmaf(s1[j][d], inv2L, -qp[j][d] * sw);
                    }
                }
            }
        }

        constexpr int stride = PP ? 2 * K : K + 1;
#pragma unroll
        for (int j = 0; j < R; ++j) {
            const long long qi = q_base + static_cast<long long>(j) * T;
            if (qi >= p.count) continue;
            float* a = p.acc + qi * stride;
#pragma unroll
            for (int d = 0; d < Lay::kS0; ++d) atomicAdd(a + d, S0[j][d]);
#pragma unroll
            for (int d = 0; d < K; ++d) atomicAdd(a + Lay::kS0 + d, S1[j][d]);
        }
    }
}

/// Table of instantiations: k in 1..8, r in {1,2,4,8} with k·r ≤ 32.
template <bool PP>
const void* fast_kernel_table(int k, int r, bool preload)
{
#define MS_FAST_CASE(KK, RR)                                                                   \
    if (k == KK && r == RR)                                                                    \
        return preload ? reinterpret_cast<const void*>(&fast_kernel<KK, RR, PP, true>)         \
                       : reinterpret_cast<const void*>(&fast_kernel<KK, RR, PP, false>);
#define MS_FAST_K(KK) MS_FAST_CASE(KK, 1) MS_FAST_CASE(KK, 2) MS_FAST_CASE(KK, 4)
    MS_FAST_K(1) MS_FAST_K(2) MS_FAST_K(3) MS_FAST_K(4) MS_FAST_K(5) MS_FAST_K(6) MS_FAST_K(7) MS_FAST_K(8)
    MS_FAST_CASE(1, 8) MS_FAST_CASE(2, 8) MS_FAST_CASE(3, 8) MS_FAST_CASE(4, 8)
#undef MS_FAST_K
#undef MS_FAST_CASE
    return nullptr;
}

}  // namespace meanshift::cuda
