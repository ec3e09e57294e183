/* tricube.h: the tricube profile, g(q) = (1 - q^(3/2))³ for q <= 1, 0 beyond (in the distance
 * u = √q: (1 - u³)³, Cleveland's loess weight; the bandwidth is the radius). Include through
 * profiles.h. */
#ifndef MEANSHIFT_PROFILE_TRICUBE_H
#define MEANSHIFT_PROFILE_TRICUBE_H

/* g(q) inside the support, for any float type (scalar or OpenCL vector): the caller masks q > 1. */
#define MS_TRICUBE_IN(q) (1.0f - (q) * sqrt(q))
#define MS_FACTOR_TRICUBE(q) (MS_TRICUBE_IN(q) * MS_TRICUBE_IN(q) * MS_TRICUBE_IN(q))

/* 2^c2 · g(q). */
MS_INLINE float ms_weight_tricube(float q, float c2)
{
    return q <= 1.0f ? MS_EXP2(c2) * MS_FACTOR_TRICUBE(q) : 0.0f;
}

/* g(q) (c2 = 0: the shared, whitened model). */
MS_INLINE float ms_weight_tricube_unit(float q)
{
    return q <= 1.0f ? MS_FACTOR_TRICUBE(q) : 0.0f;
}

#endif
