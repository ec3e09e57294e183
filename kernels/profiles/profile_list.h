/* profile_list.h: every kernel profile, one row each; the one list that the library's enum
 * (meanshift::KernelProfile, kernel_profile.hpp), names, supports and float64 weights, the device
 * dispatch (profiles.h), the CUDA template instantiations, the OpenMP SIMD dispatch and the OpenCL
 * program text expand. Plain C preprocessor: it is read by C++, CUDA and OpenCL C compilers alike,
 * and installed as <meanshift/profile_list.h> (the public enum expands it).
 *
 * MS_PROFILE_LIST(ROW, a) expands ROW(Enum, name, NAME, value, compact, a) for every row:
 *   Enum     the KernelProfile enumerator;
 *   name     the name users write (CLI --kernel, Python kernel=) and, for a compact profile, its
 *            header kernels/profiles/<name>.h, which defines ms_weight_<name>(q, c2),
 *            ms_weight_<name>_unit(q) and MS_FACTOR_<NAME>(q) (see triweight.h);
 *   NAME     the device constant MS_PROFILE_<NAME>;
 *   value    the enum value and MS_PROFILE_<NAME> (stable: append new rows with new values);
 *   compact  1 when g(q) = 0 beyond q = 1 (the kernels then run MS_FACTOR_<NAME> within the radius),
 *            0 for the profiles that run the Gaussian's exp2 (the Gaussian itself and vMF);
 *   a        passed through, for rows that need an extra argument.
 *
 * Adding a compact profile: its header kernels/profiles/<name>.h, one row below and its #include
 * at the end of this file, one conformance entry (tests/conformance_profiles.cpp). */
#ifndef MEANSHIFT_PROFILE_LIST_H
#define MEANSHIFT_PROFILE_LIST_H

/* clang-format off */
#define MS_PROFILE_LIST(ROW, a)                                    \
    ROW(Gaussian,       gaussian,     GAUSSIAN,     0, 0, a)       \
    ROW(Flat,           flat,         FLAT,         1, 1, a)       \
    ROW(Epanechnikov,   epanechnikov, EPANECHNIKOV, 2, 1, a)       \
    ROW(Biweight,       biweight,     BIWEIGHT,     3, 1, a)       \
    ROW(VonMisesFisher, vmf,          VMF,          4, 0, a)       \
    ROW(Triweight,      triweight,    TRIWEIGHT,    5, 1, a)       \
    ROW(Tricube,        tricube,      TRICUBE,      6, 1, a)
/* clang-format on */

/* MS_PROFILE_IF(compact, text): text for the compact rows only (compact is the literal 0 or 1). */
#define MS_PROFILE_IF_0(text)
#define MS_PROFILE_IF_1(text) text
#define MS_PROFILE_IF_(c, text) MS_PROFILE_IF_##c(text)
#define MS_PROFILE_IF(c, text) MS_PROFILE_IF_(c, text)

#endif

/* The device weight headers, where device code includes this list (after meanshift_device.h,
 * which defines MS_INLINE); the public enum's include of this list skips them. The OpenCL host
 * prepends their text, so their guards skip these lines there. */
#if defined(MS_INLINE) && !defined(MEANSHIFT_PROFILE_HEADERS)
#define MEANSHIFT_PROFILE_HEADERS
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
#ifndef MEANSHIFT_PROFILE_TRICUBE_H
#include "tricube.h"
#endif
#endif
