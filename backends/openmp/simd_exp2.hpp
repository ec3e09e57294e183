#pragma once
// exp2 on a float32 SIMD vector: range reduction t = n + f (n integer, |f| ≤ ½), a degree-5
// minimax polynomial for 2^f, and the scaling by 2^n. No libm call, no table, so it vectorises
// across modes and stays in registers.
//
// Accuracy: the polynomial's relative error on [-½, ½] is 7.5e-8 (Remez fit, coefficients
// below); with float32 rounding the result is within ~2e-7 relative of 2^t for t ≥ -126.
// Underflow: t < -126 (AVX-512) or t ≤ -126.5 (other ISAs) gives exactly +0, so a huge
// Mahalanobis distance contributes nothing, never a NaN or garbage.
// Precondition: t ≤ 127 (the kernel's exponents are ≤ 0: -D²/2 plus a log weight c_i ≤ 0).

#include "simd_vec.hpp"

namespace meanshift::openmp_detail {
namespace {

/// 2^f for |f| ≤ ½: c0 + c1 f + … + c5 f^5, relative minimax.
__attribute__((always_inline)) inline vf exp2_reduced(vf f)
{
    vf p = splat(0x1.5c08e6p-10f);
    p = p * f + splat(0x1.3d0c52p-7f);
    p = p * f + splat(0x1.c6b6e4p-5f);
    p = p * f + splat(0x1.ebf918p-3f);
    p = p * f + splat(0x1.62e428p-1f);
    p = p * f + splat(0x1.000002p+0f);
    return p;
}

// Round to nearest by the 1.5·2^23 trick: t + magic has n in its low mantissa bits. The TUs are
// compiled without -ffast-math, so (t + magic) - magic is not folded away.
constexpr float kRoundMagic = 12582912.0f;

#if MS_SIMD_WIDTH == 16 && defined(__AVX512F__)
// AVX-512: vscalefps multiplies by 2^n directly, and its zero-masked form gives +0 for t < -126
// in the same instruction (no denormals enter the sums, no clamp needed).
__attribute__((always_inline)) inline vf exp2_poly(vf t)
{
    const vf n = (t + kRoundMagic) - kRoundMagic;
    const vf p = exp2_reduced(t - n);
    const __mmask16 normal = _mm512_cmp_ps_mask((__m512)t, _mm512_set1_ps(-126.0f), _CMP_GE_OQ);
    return (vf)_mm512_maskz_scalef_ps(normal, (__m512)p, (__m512)n);
}
#else
__attribute__((always_inline)) inline vf exp2_poly(vf t)
{
    t = vmax(t, splat(-127.0f));

    const vf kf = t + kRoundMagic;  // low mantissa bits: n (two's complement)
    const vf p = exp2_reduced(t - (kf - kRoundMagic));

    // 2^n as a float: bits (n + 127) << 23. (bits(kf) << 23) keeps only n's low 9 bits, which
    // is exactly n << 23 modulo 2^32; n = -127 yields bit pattern 0, i.e. +0. (Casts between
    // vector types of equal size reinterpret the bits.)
    const vu scale_bits = ((vu)kf << 23) + 0x3F800000u;
    return p * (vf)scale_bits;
}
#endif

}  // namespace
}  // namespace meanshift::openmp_detail
