#pragma once
// Device helpers the two GEMM kernels share (gemm_kernel.cu: TF32, gemm_f16_kernel.cu: fp16).
#include <cstdint>

namespace meanshift::cuda::gemm {

constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
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
