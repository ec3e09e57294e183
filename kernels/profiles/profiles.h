/* profiles.h: the kernel profiles' weights g(q) (q = D², squared Mahalanobis distance in bandwidth
 * units), shared by the OpenCL C 1.2 and CUDA kernels and compilable as C/C++ on the host, like
 * meanshift_device.h (include that first: it defines MS_INLINE and MS_EXP2). The MS_PROFILE_*
 * values are meanshift::KernelProfile's (kernel_profile.hpp); one header per profile defines its
 * weight, this one dispatches. A profile's weight may be scaled by any positive constant (it
 * cancels in y' = Σ g x / Σ g).
 *
 * Log2 domain: the kernels carry a point's log-weight c2 = log2 of its prior weight (|H_i|^{-1/2},
 * sample weights), so the full weight is 2^c2 · g(q). For the Gaussian that is one exp2 of
 * c2 − q·log2(e)/2; the compact profiles multiply 2^c2 by their polynomial.
 *
 * The profile is a compile-time constant of every kernel: OpenCL programs are built with
 * -D MS_PROFILE=n (part of the program cache key; absent = the Gaussian), CUDA kernels take it as a
 * template parameter. ms_profile_weight(profile, q, c2) with a constant profile folds to the one
 * profile's code: no per-pair switch.
 *
 * Adding a profile: profile_list.h (its header kernels/profiles/<name>.h, one row, one #include);
 * everything below expands that list. */
#ifndef MEANSHIFT_PROFILES_H
#define MEANSHIFT_PROFILES_H

/* The list and, through it, every profile's header (the OpenCL host prepends their text: then
 * MEANSHIFT_PROFILE_HEADERS is defined already). */
#ifndef MEANSHIFT_PROFILE_HEADERS
#include "profile_list.h"
#endif

/* MS_PROFILE_GAUSSIAN = 0, MS_PROFILE_FLAT = 1, ...: meanshift::KernelProfile's values. */
#define MS_PROFILE_ID_ROW(E, n, N, v, c, a) MS_PROFILE_##N = v,
enum ms_profile_id { MS_PROFILE_LIST(MS_PROFILE_ID_ROW, ~) MS_PROFILE_COUNT };

/* The profile an OpenCL program evaluates (-D MS_PROFILE=n; absent: the Gaussian). */
#ifndef MS_PROFILE
#define MS_PROFILE 0
#endif

/* 1 for the profiles whose weights vanish beyond q = 1 (a constant expression, also in #if). */
#define MS_PROFILE_COMPACT_ROW(E, n, N, v, c, p) || ((p) == v && c)
#define MS_PROFILE_IS_COMPACT(p) (0 MS_PROFILE_LIST(MS_PROFILE_COMPACT_ROW, p))

/* 2^c2 · g(q) of `profile` (a compile-time constant at every call, so this folds to the one
 * profile's code; the non-compact profiles, Gaussian and vMF, run the Gaussian). */
#define MS_PROFILE_WEIGHT_ROW(E, n, N, v, c, a) MS_PROFILE_IF(c, profile == v ? ms_weight_##n a:)
MS_INLINE float ms_profile_weight(int profile, float q, float c2)
{
    return MS_PROFILE_LIST(MS_PROFILE_WEIGHT_ROW, (q, c2)) ms_weight_gaussian(q, c2);
}

/* g(q) of `profile` (c2 = 0: the shared, whitened model). */
#define MS_PROFILE_UNIT_ROW(E, n, N, v, c, a) MS_PROFILE_IF(c, profile == v ? ms_weight_##n##_unit a:)
MS_INLINE float ms_profile_weight_unit(int profile, float q)
{
    return MS_PROFILE_LIST(MS_PROFILE_UNIT_ROW, (q)) ms_weight_gaussian_unit(q);
}

/* A compact profile's g(q) inside its support for any float type (OpenCL vectors: the CPU
 * kernels), in the program's MS_PROFILE; the caller masks q > 1. The OpenCL host defines
 * MS_PROFILE_FACTOR_<value>(q) as MS_FACTOR_<NAME>(q) for every compact row (a number cannot be
 * turned into a name by the preprocessor alone). */
#define MS_PROFILE_CAT_(x, y) x##y
#define MS_PROFILE_CAT(x, y) MS_PROFILE_CAT_(x, y)
#define MS_PROFILE_FACTOR(q) MS_PROFILE_CAT(MS_PROFILE_FACTOR_, MS_PROFILE)(q)

#endif
