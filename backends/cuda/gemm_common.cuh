#pragma once
// Device helpers the GEMM kernels share (gemm_kernel.cu: TF32, gemm_f16_kernel.cu: fp16 mma.sync,
// gemm_wgmma_kernel.cu: fp16 wgmma).
#include <cuda_fp16.h>

#include <cstdint>

namespace meanshift::cuda::gemm {

constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/// (a, b) → fp16 pairs hi and lo with a ≈ hi.x + lo.x, b ≈ hi.y + lo.y (a in the low half).
__device__ __forceinline__ void split2(float a, float b, std::uint32_t& hi, std::uint32_t& lo)
{
    const __half2 h = __floats2half2_rn(a, b);
    const float2 f = __half22float2(h);
    const __half2 l = __floats2half2_rn(a - f.x, b - f.y);
    hi = *reinterpret_cast<const std::uint32_t*>(&h);
    lo = *reinterpret_cast<const std::uint32_t*>(&l);
}

/// Maximum over the 4 lanes of a quad (the threads that share a row of an mma accumulator).
__device__ __forceinline__ float quad_max(float v)
{
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

/// log2 weight of a pair from its expanded exponent: ≤ 0 (cancellation may leave it slightly
/// positive: clamped), NaN (inf − inf of a padding point) → −inf, below the cutoff → −inf.
__device__ __forceinline__ float pair_log2(float x, float cut)
{
    x = x <= 0.0f ? x : (x > 0.0f ? 0.0f : -INFINITY);
    return x < cut ? -INFINITY : x;
}

/// The block centre c: the per-dimension lower median of the block's bm modes, staged as rows of
/// `raw` (ld floats apart). Robust: a far mode (a seed without support) does not drag the centre
/// away from the others, as a mean would. Coordinates relative to c keep the cancellation in
/// q·p − ½|q|² − ½|p|² to the block's extent.
__device__ inline void block_median(const float* raw, int ld, int bm, int kp, float* centre, int tid, int threads)
{
    for (int d = tid; d < kp; d += threads) {
        float med = 0.0f;
        const int half = (bm - 1) / 2;  // #{v < med} <= half < #{v <= med}
        for (int i = 0; i < bm; ++i) {
            const float v = raw[i * ld + d];
            int less = 0, leq = 0;
            for (int j = 0; j < bm; ++j) {
                const float u = raw[j * ld + d];
                less += u < v;
                leq += u <= v;
            }
            if (less <= half && leq > half) {
                med = v;
                break;
            }
        }
        centre[d] = med;
    }
}

/// The prologue of the fp16 kernels: the block's modes (rows [m0, m0 + bm) of p.queries, k = p.k)
/// staged in `raw` (rows ld floats apart; bm_max × kp, zero-padded) relative to their per-dimension
/// median `centre`, qn[j] = L·½|q'_j|². Returns the power of two s that keeps the block's largest
/// |q'_d| below 2^13 (fp16's range: gemm_f16_kernel.cu). Every thread of the block calls it.
template <class Params>
__device__ inline float stage_modes(const Params& p, long long m0, int bm, int bm_max, int kp, float* raw, int ld,
                                    float* centre, float* qn, unsigned* qmax)
{
    const int k = p.k, tid = threadIdx.x, warp = tid / 32, lane = tid % 32, threads = blockDim.x, warps = threads / 32;
    if (tid == 0) *qmax = 0u;
    for (int j = warp; j < bm_max; j += warps)
        for (int d = lane; d < kp; d += 32) raw[j * ld + d] = (j < bm && d < k) ? p.queries[(m0 + j) * k + d] : 0.0f;
    __syncthreads();
    block_median(raw, ld, bm, kp, centre, tid, threads);
    __syncthreads();
    for (int j = warp; j < bm_max; j += warps) {
        float nrm = 0.0f, mx = 0.0f;
        for (int d = lane; d < kp; d += 32) {
            const float v = (j < bm && d < k) ? raw[j * ld + d] - centre[d] : 0.0f;
            raw[j * ld + d] = v;
            nrm += v * v;
            mx = fmaxf(mx, fabsf(v));
        }
        for (int off = 16; off > 0; off /= 2) {
            nrm += __shfl_xor_sync(0xffffffffu, nrm, off);
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        }
        if (lane == 0) {
            qn[j] = 0.5f * kLog2e * nrm;
            atomicMax(qmax, __float_as_uint(mx));  // non-negative floats order as their bits
        }
    }
    __syncthreads();
    int e2 = 0;
    frexpf(__uint_as_float(*qmax), &e2);  // max |q'| < 2^e2
    return ldexpf(1.0f, e2 > 13 ? 13 - e2 : 0);
}

}  // namespace meanshift::cuda::gemm
