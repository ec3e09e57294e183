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
 * Adding a profile: its header here (ms_weight_<name>, ms_weight_<name>_unit and, when compact,
 * MS_FACTOR_<NAME>), an MS_PROFILE_* value (= the KernelProfile enum value), a line in each
 * dispatch below, and its embedding for OpenCL (backends/opencl/CMakeLists.txt). */
#ifndef MEANSHIFT_PROFILES_H
#define MEANSHIFT_PROFILES_H

#define MS_PROFILE_GAUSSIAN 0
#define MS_PROFILE_FLAT 1
#define MS_PROFILE_EPANECHNIKOV 2
#define MS_PROFILE_BIWEIGHT 3
#define MS_PROFILE_VMF 4
#define MS_PROFILE_TRIWEIGHT 5

/* The OpenCL host prepends these headers' text (their guards are then defined): include them only
 * where they are not there yet. */
#ifndef MEANSHIFT_PROFILE_GAUSSIAN_H
#include "gaussian.h"
#endif
#ifndef MEANSHIFT_PROFILE_FLAT_H
#include "flat.h"
#endif
#ifndef MEANSHIFT_PROFILE_EPANECHNIKOV_H
#include "epanechnikov.h"
#endif
#ifndef MEANSHIFT_PROFILE_BIWEIGHT_H
#include "biweight.h"
#endif
#ifndef MEANSHIFT_PROFILE_TRIWEIGHT_H
#include "triweight.h"
#endif

/* The profile an OpenCL program evaluates (-D MS_PROFILE=n). */
#ifndef MS_PROFILE
#define MS_PROFILE MS_PROFILE_GAUSSIAN
#endif

/* 1 for the profiles whose weights vanish beyond q = 1 (a constant expression). */
#define MS_PROFILE_IS_COMPACT(p) \
    ((p) == MS_PROFILE_FLAT || (p) == MS_PROFILE_EPANECHNIKOV || (p) == MS_PROFILE_BIWEIGHT || \
     (p) == MS_PROFILE_TRIWEIGHT)

/* 2^c2 · g(q) of `profile` (a compile-time constant at every call; vMF: the Gaussian). */
MS_INLINE float ms_profile_weight(int profile, float q, float c2)
{
    return profile == MS_PROFILE_FLAT           ? ms_weight_flat(q, c2)
           : profile == MS_PROFILE_EPANECHNIKOV ? ms_weight_epanechnikov(q, c2)
           : profile == MS_PROFILE_BIWEIGHT     ? ms_weight_biweight(q, c2)
           : profile == MS_PROFILE_TRIWEIGHT    ? ms_weight_triweight(q, c2)
                                                : ms_weight_gaussian(q, c2);
}

/* g(q) of `profile` (c2 = 0: the shared, whitened model). */
MS_INLINE float ms_profile_weight_unit(int profile, float q)
{
    return profile == MS_PROFILE_FLAT           ? ms_weight_flat_unit(q)
           : profile == MS_PROFILE_EPANECHNIKOV ? ms_weight_epanechnikov_unit(q)
           : profile == MS_PROFILE_BIWEIGHT     ? ms_weight_biweight_unit(q)
           : profile == MS_PROFILE_TRIWEIGHT    ? ms_weight_triweight_unit(q)
                                                : ms_weight_gaussian_unit(q);
}

/* A compact profile's g(q) inside its support for any float type (OpenCL vectors: the CPU
 * kernels), in the program's MS_PROFILE; the caller masks q > 1. */
#if MS_PROFILE == MS_PROFILE_FLAT
#define MS_PROFILE_FACTOR(q) MS_FACTOR_FLAT(q)
#elif MS_PROFILE == MS_PROFILE_EPANECHNIKOV
#define MS_PROFILE_FACTOR(q) MS_FACTOR_EPANECHNIKOV(q)
#elif MS_PROFILE == MS_PROFILE_BIWEIGHT
#define MS_PROFILE_FACTOR(q) MS_FACTOR_BIWEIGHT(q)
#elif MS_PROFILE == MS_PROFILE_TRIWEIGHT
#define MS_PROFILE_FACTOR(q) MS_FACTOR_TRIWEIGHT(q)
#endif

#endif
