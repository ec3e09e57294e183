/* meanshift_device.h: device math shared by the OpenCL C 1.2 and CUDA kernels (and compilable
 * as C++ for host-side tests). It stays in the intersection of the three languages: no
 * templates, no std::, float literals with the f suffix, math through the MS_* macros.
 *
 * The per-pair work of Alg. 3 lines 12-15 (Malysiak & Handmann), for diagonal H_i:
 *   D²  = Σ_d w_id (y_d - x_id)²                        (eq. 3, Mahalanobis distance)
 *   e   = exp(c_i - D²/2),  c_i = log|H_i|^{-1/2} - max  (eq. 5 weight, rescaled)
 *   S0_d += e w_id,  S1_d += e w_id x_id                 (eq. 4/5 numerators, H_h,t and y_p,t)
 * For a shared H the skeleton whitens the data, so w_id = 1, c_i = 0 and only S0 (a scalar) and
 * S1_d are accumulated. The new mode is y_d = S1_d / S0_d.
 *
 * The direct form (y_d - x_id)² is used, not the expanded |y|² + |x|² - 2 y·x: with centred data
 * it keeps float32 accuracy for data far from the origin and with a large extent. */
#ifndef MEANSHIFT_DEVICE_H
#define MEANSHIFT_DEVICE_H

#if defined(__OPENCL_VERSION__)
#  define MS_INLINE inline
#  define MS_GLOBAL __global
#  define MS_LOCAL __local
#  define MS_CONST_GLOBAL __global const
#  define MS_EXP2(x) native_exp2(x)
#elif defined(__CUDACC__)
#  define MS_INLINE __device__ __forceinline__
#  define MS_GLOBAL
#  define MS_LOCAL
#  define MS_CONST_GLOBAL const
#  define MS_EXP2(x) exp2f(x)
#else
#  include <math.h>
#  define MS_INLINE static inline
#  define MS_GLOBAL
#  define MS_LOCAL
#  define MS_CONST_GLOBAL const
#  define MS_EXP2(x) exp2f(x)
#endif

/* -1/2 · log2(e): exp(-D²/2) = exp2(D² · MS_NEG_HALF_LOG2E). */
#define MS_NEG_HALF_LOG2E (-0.72134752044448170368f)
/* log2(e): exp(c) = exp2(c · MS_LOG2E). */
#define MS_LOG2E (1.44269504088896340736f)

/* Squared Euclidean distance between y (k values, private) and x (k values), shared model. */
MS_INLINE float ms_sq_dist(const float* y, MS_CONST_GLOBAL float* x, int k)
{
    float d2 = 0.0f;
    for (int d = 0; d < k; ++d) {
        const float t = y[d] - x[d];
        d2 += t * t;
    }
    return d2;
}

/* Shared model: accumulate point x into (s0, s1[0..k)). */
MS_INLINE void ms_accumulate_shared(const float* y, MS_CONST_GLOBAL float* x, int k,
                                    float* s0, float* s1)
{
    const float e = MS_EXP2(ms_sq_dist(y, x, k) * MS_NEG_HALF_LOG2E);
    *s0 += e;
    for (int d = 0; d < k; ++d) s1[d] += e * x[d];
}

/* Per-point model: accumulate point x with precision w (1/H_i,dd) and log weight c into
 * s0[0..k), s1[0..k). c is pre-multiplied by log2(e) by the caller: c2 = c_i · MS_LOG2E. */
MS_INLINE void ms_accumulate_per_point(const float* y, MS_CONST_GLOBAL float* x,
                                       MS_CONST_GLOBAL float* w, float c2, int k,
                                       float* s0, float* s1)
{
    float d2 = 0.0f;
    for (int d = 0; d < k; ++d) {
        const float t = y[d] - x[d];
        d2 += w[d] * t * t;
    }
    const float e = MS_EXP2(d2 * MS_NEG_HALF_LOG2E + c2);
    for (int d = 0; d < k; ++d) {
        const float ew = e * w[d];
        s0[d] += ew;
        s1[d] += ew * x[d];
    }
}

/* Final update of Alg. 3 line 20 for one dimension: y = H_h,t^{-1} y_p,t, keeping the old
 * position when the mode has no support (all weights underflowed). */
MS_INLINE float ms_update(float s0, float s1, float y_old)
{
    return s0 > 0.0f ? s1 / s0 : y_old;
}

#endif /* MEANSHIFT_DEVICE_H */
