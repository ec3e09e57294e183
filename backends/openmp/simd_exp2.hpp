#pragma once
// exp2 on a float32 SIMD vector: range reduction t = n + f (n integer), a degree-5 minimax
// polynomial for 2^f, and the scaling by 2^n. No libm call, no table, so it vectorises across
// modes and stays in registers.
//
// Accuracy: the polynomials' relative error is 7.5e-8 (Remez fits, coefficients below); with
// float32 rounding the result is within ~2e-7 relative of 2^t for t ≥ -126.
// Underflow: t < -126 (AVX-512, with flush-to-zero set) or t ≤ -126.5 (other ISAs) gives
// exactly +0, so a huge Mahalanobis distance contributes nothing, never a NaN or garbage.
// Precondition: t ≤ 127 (the kernel's exponents are ≤ 0: -D²/2 plus a log weight c_i ≤ 0).

#include "simd_vec.hpp"

namespace meanshift::openmp_detail {
namespace {

/// Sets the MXCSR flush-to-zero and denormals-are-zero bits of the calling thread for the
/// lifetime of the object (one kernel block) and restores the caller's mode afterwards. Weights
/// below 2^-126 then become exactly 0 instead of slow denormals.
class FlushDenormals {
public:
#if defined(__SSE2__)
    FlushDenormals() : saved_(_mm_getcsr())
    {
        _mm_setcsr(saved_ | 0x8040u);
    }
    ~FlushDenormals()
    {
        _mm_setcsr(saved_);
    }

private:
    unsigned saved_;
#endif
};

#if MS_SIMD_WIDTH == 16 && defined(__AVX512F__) && defined(__AVX512DQ__)
/// 2^f for 0 ≤ f < 1: degree-5 relative minimax (Remez, 7.5e-8; 1.5e-7 in float32 Horner).
__attribute__((always_inline)) inline vf exp2_unit(vf f)
{
    vf p = splat(0x1.ec320ap-10f);
    p = p * f + splat(0x1.26900cp-7f);
    p = p * f + splat(0x1.c95446p-5f);
    p = p * f + splat(0x1.ebd5a8p-3f);
    p = p * f + splat(0x1.62e4f6p-1f);
    p = p * f + splat(0x1.fffffep-1f);
    return p;
}

// AVX-512: t = floor(t) + f with vreduceps (f = t - floor(t) in one instruction), and
// vscalefps multiplies by 2^floor(t) itself, so n is never formed: 7 instructions in all.
// vscalefps underflows to +0 below 2^-149; results between 2^-149 and 2^-126 are flushed to +0
// by the MXCSR flush-to-zero mode the kernels set (FlushDenormals), so no denormal enters the
// sums. (The merge-masked forms with a full mask avoid GCC 12's bogus -Wmaybe-uninitialized in
// the unmasked intrinsics; they compile to the same single instructions.)
__attribute__((always_inline)) inline vf exp2_poly(vf t)
{
    const __m512 tt = (__m512)t;
    const vf f = (vf)_mm512_mask_reduce_ps(tt, 0xFFFF, tt, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const vf p = exp2_unit(f);
    return (vf)_mm512_mask_scalef_ps((__m512)p, 0xFFFF, (__m512)p, tt);
}
#else
// Round to nearest by the 1.5·2^23 trick: t + magic has n in its low mantissa bits. The TUs are
// compiled without -ffast-math, so (t + magic) - magic is not folded away.
constexpr float kRoundMagic = 12582912.0f;

/// 2^f for |f| ≤ ½: degree-5 relative minimax (Remez, 7.5e-8).
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
