#pragma once
// The fast kernels: f_vppu = 1, each PU (thread) carries R modes in registers (register
// blocking), a thread block is a PPU, and the points come in tiles of W (Alg. 7 preload_size)
// that are either staged in shared memory (PRELOAD) or read straight from global memory (the
// naive variant: every lane reads the same point, which the hardware broadcasts).
//
// Exponent in the expanded form relative to a per-tile centre c_t (backends/gpu/tile_layout.hpp,
// the one host builder of the records for both GPU backends): with
// p' = x - c_t and q' = y - c_t (both small for every pair whose weight matters), the per-pair
// work is ms_pair_expanded_shared / ms_pair_expanded_per_point and the end-of-tile fold is
// ms_fold_shared / ms_fold_per_point of kernels/meanshift_device.h, the same definitions the
// OpenCL backend runs (per-point with a compile-time tile width: the same exponent in Horner
// form, pair_horner_per_point). Isotropic k = 3: 3 FMAs (+1 add for |q'|², often factored out of
// the tile, see below), one ex2, 4 FP32 instructions for the sums. Per-point: 2k FMAs, one ex2, 2k.
// The default point loop has the tile width W fixed at compile time (no remainder, fixed
// shared-memory offsets) and is unrolled 4× (isotropic) / 8× (per-point): 8.5 / 13.6 issue slots
// per pair at k = 3, r = 4 against 8.9 / 14.1 for the run-time-W loop unrolled 2× (SASS counts,
// docs/performance-gpu.md).
// These sources are compiled with -ftz=true, so MS_EXP2 (exp2f) is a single ex2.approx.ftz.
#include "backends/cuda/kernel_params.hpp"
#include "meanshift_device.h"

namespace meanshift::cuda {

/// log2(e)/2: exp(-D²/2) = exp2(-kHalfLog2e D²). Half of MS_LOG2E (exact in binary), the constant
/// the host layout builds the records with.
constexpr float kHalfLog2e = 0.5f * MS_LOG2E;

__device__ __forceinline__ float ex2_approx(float x)
{
    // One MUFU.EX2; flushes results below 2^-126 to 0 (those weights are negligible anyway).
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/// Compile-time mirror of the record format of backends/gpu/tile_layout.hpp: record_floats,
/// record_stride (whole float4) and the S0 values per mode.
template <int K, bool PP>
struct FastLayout {
    static constexpr int kFloats = PP ? 2 * K + 1 : K + 1;  // gpu::record_floats
    static constexpr int kStride = (kFloats + 3) / 4 * 4;  // gpu::record_stride
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

/// Points of a tile: the compile-time width TW when TW > 0 (the loop then has no remainder and
/// unrolls UNR times with fixed shared-memory offsets), else the run-time width W.
template <int TW>
__device__ __forceinline__ int tile_width(int W)
{
    return TW > 0 ? TW : W;
}

/// Shared model, one tile, through the shared device header (record [p', a], qs = L q',
/// cq = -L/2 |q'|², L = log2 e). SUB = false: cq is factored out of the tile (passed as -0.0f,
/// which the compiler drops: one instruction less per pair).
template <int K, int R, int VEC, bool PRELOAD, bool SUB, int TW, int UNR>
__device__ __forceinline__ void tile_sums_shared(const float4* src, int W, const float (&qs)[R][K],
                                                 const float (&cq)[R][1], float (&s0)[R][1], float (&s1)[R][K])
{
    const int w = tile_width<TW>(W);
#pragma unroll UNR
    for (int i = 0; i < w; ++i) {
        float pt[4 * VEC];
        load_point<VEC, PRELOAD>(src, i, pt);
#pragma unroll
        for (int j = 0; j < R; ++j) ms_pair_expanded_shared(qs[j], SUB ? cq[j][0] : -0.0f, pt, K, &s0[j][0], s1[j]);
    }
}

/// Per-point pair in Horner form: the same exponent as ms_pair_expanded_per_point,
/// rec[0] + Σ_d q_d (rec[1+d] + rec[1+k+d] q_d), with the same 2k FMAs, but needs only q, not q²,
/// in registers (r·k registers fewer: the unrolled point loop then keeps q² from being recomputed
/// per iteration). Same record layout and raw sums.
template <int K>
__device__ __forceinline__ void pair_horner_per_point(const float (&q)[K], const float* rec, float (&s0)[K],
                                                      float (&s1)[K])
{
    float arg = rec[0];
#pragma unroll
    for (int d = 0; d < K; ++d) arg = fmaf(q[d], fmaf(rec[1 + K + d], q[d], rec[1 + d]), arg);
    const float e = ex2_approx(arg);
#pragma unroll
    for (int d = 0; d < K; ++d) {
        s0[d] = fmaf(e, rec[1 + K + d], s0[d]);
        s1[d] = fmaf(e, rec[1 + d], s1[d]);
    }
}

/// Per-point model, one tile (record [A, B_d, C_d]): the shared device header's pair with a
/// run-time tile width, the Horner form above with a compile-time one.
template <int K, int R, int VEC, bool PRELOAD, int TW, int UNR>
__device__ __forceinline__ void tile_sums_per_point(const float4* src, int W, const float (&qp)[R][K],
                                                    const float (&q2)[R][K], float (&s0)[R][K], float (&s1)[R][K])
{
    const int w = tile_width<TW>(W);
#pragma unroll UNR
    for (int i = 0; i < w; ++i) {
        float pt[4 * VEC];
        load_point<VEC, PRELOAD>(src, i, pt);
#pragma unroll
        for (int j = 0; j < R; ++j) {
            if constexpr (TW > 0)
                pair_horner_per_point<K>(qp[j], pt, s0[j], s1[j]);
            else
                ms_pair_expanded_per_point(qp[j], q2[j], pt, K, s0[j], s1[j]);
        }
    }
}

/// At most 256 threads per block; two blocks per SM where the register blocking leaves room
/// (k·r ≤ 24, per-point 2k·r ≤ 24: at most 128 registers, no spills), so that 16 warps hide
/// the ex2 and FMA latencies.
///
/// TW > 0: the tile width is the compile-time constant TW (the host launches this only when
/// p.tile == TW); UNR: unroll factor of the point loop.
template <int K, int R, bool PP, bool PRELOAD, int TW = 0, int UNR = 2>
__global__ void __launch_bounds__(256, ((PP ? 2 : 1) * K * R <= 24 ? 2 : 1)) fast_kernel(const FastParams p)
{
    using Lay = FastLayout<K, PP>;
    extern __shared__ float4 s_tile[];
    const float4* data = reinterpret_cast<const float4*>(p.data);
    const int T = blockDim.x;
    const int W = tile_width<TW>(p.tile);
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
            // qp = q' (per-point) or L q' (shared); qx = q'² (per-point) or cq = -L/2 |q'|² (shared).
            float qp[R][K], qx[R][Lay::kS0];
            bool factor = true;  // shared model: every lane may factor exp2(-L/2 |q'|²) out of the tile
#pragma unroll
            for (int j = 0; j < R; ++j) {
                const long long qi = min(q_base + static_cast<long long>(j) * T, p.count - 1);
                float sq = 0.0f;
#pragma unroll
                for (int d = 0; d < K; ++d) {
                    const float q = __ldg(p.queries + qi * K + d) - __ldg(p.centres + t * K + d);
                    sq = fmaf(q, q, sq);
                    if constexpr (PP) {
                        qp[j][d] = q;
                        qx[j][d] = q * q;
                    } else {
                        qp[j][d] = MS_LOG2E * q;
                    }
                }
                if constexpr (!PP) {
                    qx[j][0] = -kHalfLog2e * sq;
                    // Without the -L|q'|² term a pair's exponent is 2L q'·p' - L|p'|² ≤ 2L|q'|·r_t
                    // (r_t = tile radius): the tile sums stay finite (< 2^110) when that is ≤ 100, and
                    // exp2(-L|q'|²) is applied in two halves, each ≥ 2^-125, when L|q'|² ≤ 250.
                    const float rt = __ldg(p.radii + t);
                    factor = factor && -qx[j][0] <= 250.0f && 4.0f * kHalfLog2e * kHalfLog2e * sq * rt * rt <= 1.0e4f;
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
                    tile_sums_shared<K, R, Lay::kVec, PRELOAD, false, TW, UNR>(src, W, qp, qx, s0, s1);
                else
                    tile_sums_shared<K, R, Lay::kVec, PRELOAD, true, TW, UNR>(src, W, qp, qx, s0, s1);
            } else {
                tile_sums_per_point<K, R, Lay::kVec, PRELOAD, TW, UNR>(src, W, qp, qx, s0, s1);
            }

            // Fold the tile sums into query-relative totals (S1 = Σ e w (p' - q'), y_new = y + S1/S0).
#pragma unroll
            for (int j = 0; j < R; ++j) {
                float rmq[K];  // c_t - y, recovered from qp (not kept live through the tile: registers)
#pragma unroll
                for (int d = 0; d < K; ++d) rmq[d] = PP ? -qp[j][d] : qp[j][d] * (-1.0f / MS_LOG2E);
                if constexpr (!PP) {
                    // The factored-out exp2(cq) is applied here as f·f (f ≥ 2^-125: no flush to 0).
                    const float f = factor ? ex2_approx(0.5f * qx[j][0]) : 1.0f;
                    float s1f[K];
#pragma unroll
                    for (int d = 0; d < K; ++d) s1f[d] = f * (f * s1[j][d]);
                    ms_fold_shared(rmq, f * (f * s0[j][0]), s1f, K, &S0[j][0], S1[j]);
                } else {
                    ms_fold_per_point(rmq, s0[j], s1[j], -2.0f, K, S0[j], S1[j]);
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

/// Table of instantiations: k in 1..8, r in {1,2,4,8} with k·r ≤ 32. variant (see
/// kernel_params.hpp): 1 = run-time tile width, point loop unrolled 2×; 2 / 3 = tile width known
/// at compile time (512 or 1024), unrolled 4× / 8× (preloading only; other widths get variant 1).
template <bool PP>
const void* fast_kernel_table(int k, int r, bool preload, int tile, int variant)
{
    const int v = preload && (tile == 512 || tile == 1024) ? variant : 1;
#define MS_FAST_CASE(KK, RR)                                                                                           \
    if (k == KK && r == RR) {                                                                                          \
        if (!preload) return reinterpret_cast<const void*>(&fast_kernel<KK, RR, PP, false>);                           \
        if (v == 2 && tile == 512) return reinterpret_cast<const void*>(&fast_kernel<KK, RR, PP, true, 512, 4>);       \
        if (v == 3 && tile == 512) return reinterpret_cast<const void*>(&fast_kernel<KK, RR, PP, true, 512, 8>);       \
        if (v == 2 && tile == 1024) return reinterpret_cast<const void*>(&fast_kernel<KK, RR, PP, true, 1024, 4>);     \
        if (v == 3 && tile == 1024) return reinterpret_cast<const void*>(&fast_kernel<KK, RR, PP, true, 1024, 8>);     \
        return reinterpret_cast<const void*>(&fast_kernel<KK, RR, PP, true>);                                          \
    }
#define MS_FAST_K(KK) MS_FAST_CASE(KK, 1) MS_FAST_CASE(KK, 2) MS_FAST_CASE(KK, 4)
    MS_FAST_K(1)
    MS_FAST_K(2) MS_FAST_K(3) MS_FAST_K(4) MS_FAST_K(5) MS_FAST_K(6) MS_FAST_K(7) MS_FAST_K(8) MS_FAST_CASE(1, 8)
        MS_FAST_CASE(2, 8) MS_FAST_CASE(3, 8) MS_FAST_CASE(4, 8)
#undef MS_FAST_K
#undef MS_FAST_CASE
            return nullptr;
}

}  // namespace meanshift::cuda
