#pragma once
// exp2 on a float32 SIMD vector: range reduction t = n + f (n integer, |f| ≤ ½), a degree-5
// minimax polynomial for 2^f, and 2^n assembled in the exponent bits. No libm call, no table,
// so it vectorises across modes and stays in registers.
//
// Accuracy: the polynomial's relative error on [-½, ½] is 7.5e-8 (Remez fit, coefficients
// below); with float32 rounding the result is within ~2e-7 relative of 2^t for t ≥ -126.
// Underflow: t ≤ -126.5 gives exactly +0 (n = -127 makes the scale factor's bit pattern 0), so a
// huge Mahalanobis distance contributes nothing, never a NaN or a denormal garbage value.
// Overflow: t is clamped to 127 (cannot happen for the kernel, whose exponents are ≤ 0).

#include "simd_vec.hpp"

namespace meanshift::openmp_detail {
namespace {

inline vf exp2_poly(vf t)
{
    const vf lo = splat(-127.0f);
    const vf hi = splat(127.0f);
    t = t < lo ? lo : t;
    t = t > hi ? hi : t;

    // Round to nearest by the 1.5·2^23 trick: the sum's low mantissa bits hold n (two's
    // complement), which avoids a float→int conversion the vector extensions would truncate.
    // The TUs are compiled without -ffast-math, so (t + magic) - magic is not folded away.
    const vf magic = splat(12582912.0f);
    const vf kf = t + magic;
    const vf f = t - (kf - magic);

    // 2^f ≈ c0 + c1 f + … + c5 f^5 on [-½, ½], relative minimax.
    vf p = splat(0x1.5c08e6p-10f);
    p = p * f + splat(0x1.3d0c52p-7f);
    p = p * f + splat(0x1.c6b6e4p-5f);
    p = p * f + splat(0x1.ebf918p-3f);
    p = p * f + splat(0x1.62e428p-1f);
    p = p * f + splat(0x1.000002p+0f);

    // 2^n as a float: bits (n + 127) << 23. (bits(kf) << 23) keeps only n's low 9 bits, which
    // is exactly n << 23 modulo 2^32; n = -127 yields bit pattern 0, i.e. +0.
    // (Casts between vector types of equal size reinterpret the bits.)
    const vu scale_bits = ((vu)kf << 23) + 0x3F800000u;
    return p * (vf)scale_bits;
}

}  // namespace
}  // namespace meanshift::openmp_detail
