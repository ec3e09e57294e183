/* gaussian.h: the Gaussian profile, g(q) = exp(-q/2), no support limit (also the weight of the
 * von Mises–Fisher profile, whose unit-vector form is a Gaussian in |y - x|, kernel_profile.hpp).
 * Log2 domain: 2^c2 · g(q) = exp2(c2 - q·log2(e)/2), one FMA and one exp2: the exponent the
 * kernels have always formed, so the Gaussian costs what it did. Include through profiles.h. */
#ifndef MEANSHIFT_PROFILE_GAUSSIAN_H
#define MEANSHIFT_PROFILE_GAUSSIAN_H

/* 2^c2 · exp(-q/2) for q = D² >= 0 (bandwidth units). */
MS_INLINE float ms_weight_gaussian(float q, float c2)
{
    return MS_EXP2(MS_FMA(q, MS_NEG_HALF_LOG2E, c2));
}

/* exp(-q/2) (c2 = 0: the shared, whitened model). */
MS_INLINE float ms_weight_gaussian_unit(float q)
{
    return MS_EXP2(q * MS_NEG_HALF_LOG2E);
}

#endif
