/* profiles.h: the kernel profiles' weights g(q) (q = D², squared Mahalanobis distance in bandwidth
 * units), shared by the OpenCL C 1.2 and CUDA kernels and compilable as C/C++ on the host, like
 * meanshift_device.h (include that first: it defines MS_INLINE and MS_EXP2). The MS_PROFILE_*
 * values are meanshift::KernelProfile's (kernel_profile.hpp); one header per profile defines its
 * weight, this one dispatches. A profile's weight may be scaled by any positive constant (it
 * cancels in y' = Σ g x / Σ g).
 *
 * Log2 domain: the kernels carry a point's log-weight c2 = log2 of its prior weight (|H_i|^{-1/2},
 * sample weights), so the full weight is 2^c2 · g(q). For the Gaussian that is one exp2 of
 * c2 − q·log2(e)/2; the compact profiles multiply 2^c2 by their polynomial. */
#ifndef MEANSHIFT_PROFILES_H
#define MEANSHIFT_PROFILES_H

#define MS_PROFILE_GAUSSIAN 0
#define MS_PROFILE_FLAT 1
#define MS_PROFILE_EPANECHNIKOV 2
#define MS_PROFILE_BIWEIGHT 3
#define MS_PROFILE_VMF 4

#endif
