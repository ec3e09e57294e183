#pragma once
#include "kernels/profiles/profile_list.h"
// Internal: the kernel sources embedded at build time (generated opencl_kernels_embedded.cpp,
// see cmake/EmbedKernels.cmake). The program text is device_header + the profile headers
// (profile_sources()) + approx_mode_common +
// one of the kernels (the truncated kernel: + ranges_header + range_modes); the files' own
// #include lines are skipped by their include guards.

namespace meanshift::detail::opencl_sources {
const char* device_header();  // kernels/meanshift_device.h
const char* profile_gaussian();  // kernels/profiles/gaussian.h (weight profiles, shared with CUDA)
// kernels/profiles/<name>.h of every compact profile (profile_list.h)
#define MS_EMBEDDED_PROFILE_ROW(E, n, N, v, c, a) MS_PROFILE_IF(c, const char* profile_##n();)
MS_PROFILE_LIST(MS_EMBEDDED_PROFILE_ROW, ~)
#undef MS_EMBEDDED_PROFILE_ROW
const char* profile_list();  // kernels/profiles/profile_list.h (the profiles, one row each)
const char* profiles_header();  // kernels/profiles/profiles.h (MS_PROFILE dispatch)
const char* approx_mode_common();  // kernels/approx_mode_common.clh
const char* approx_mode();  // kernels/approx_mode.cl (Alg. 3)
const char* approx_modes_preload();  // kernels/approx_modes_preload.cl (Alg. 7)
const char* ranges_header();  // kernels/meanshift_ranges.h (truncated kernel, shared with CUDA)
const char* range_modes();  // kernels/range_modes.cl (truncated kernel over grid ranges)
const char* range_modes_cpu();  // kernels/range_modes_cpu.cl (the same, CPU devices, modes in lanes)
const char* gemm_modes();
const char* gemm_wide();  // kernels/gemm_wide.cl (high k, dimension-tiled sums)
const char* knn_header();  // kernels/meanshift_knn.h (k-NN search, shared with CUDA)
const char* knn();  // kernels/knn.cl            // kernels/gemm_modes.cl (high k: fused matrix products)
}  // namespace meanshift::detail::opencl_sources
