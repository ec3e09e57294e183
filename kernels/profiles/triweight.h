/* triweight.h: the triweight profile, g(q) = (1 - q)³ for q <= 1, 0 beyond (its mean shift climbs
 * the quadweight density; the bandwidth is the radius). Include through profiles.h. */
#ifndef MEANSHIFT_PROFILE_TRIWEIGHT_H
#define MEANSHIFT_PROFILE_TRIWEIGHT_H

/* g(q) inside the support, for any float type (scalar or OpenCL vector): the caller masks q > 1. */
#define MS_FACTOR_TRIWEIGHT(q) ((1.0f - (q)) * (1.0f - (q)) * (1.0f - (q)))

/* 2^c2 · g(q). */
MS_INLINE float ms_weight_triweight(float q, float c2)
{
    return q <= 1.0f ? MS_EXP2(c2) * MS_FACTOR_TRIWEIGHT(q) : 0.0f;
}

/* g(q) (c2 = 0: the shared, whitened model): no exp2 at all. */
MS_INLINE float ms_weight_triweight_unit(float q)
{
    return q <= 1.0f ? MS_FACTOR_TRIWEIGHT(q) : 0.0f;
}

#endif
