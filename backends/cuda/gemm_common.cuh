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

}  // namespace meanshift::cuda::gemm
