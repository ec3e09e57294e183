#pragma once
// Internal: Alg. 3 line 20 on the host, the one copy shared by the serial oracle and the OpenMP SIMD
// kernels. It has internal linkage (an unnamed namespace) and no dependencies, so the kernel
// translation units compiled for AVX2/AVX-512 can include it without the linker picking their
// copy for code that runs on a CPU without those instructions.

#include <cstdint>

namespace meanshift::detail {
namespace {

/// Alg. 3 line 20 for one mode from its absolute sums: y'_d = S1_d / (S0_d · scale), where
/// S0_d = s0[d · s0_step] (s0_step = 0: one S0 shared by all dimensions) and S1_d = s1[d · s1_step];
/// a dimension with S0_d = 0 keeps y_d. Returns false when no dimension had support. The one
/// host-side copy of the final update (serial and openmp kernels).
inline bool finish_mode(const double* s0, std::int64_t s0_step, const double* s1, std::int64_t s1_step, double scale,
                        const double* y, double* out, int k)
{
    bool supported = false;
    for (int d = 0; d < k; ++d) {
        const double w = s0[d * s0_step];
        if (w > 0) {
            out[d] = s1[d * s1_step] / w / scale;
            supported = true;
        } else {
            out[d] = y[d];
        }
    }
    return supported;
}

/// KernelProfile::VonMisesFisher after a step (PreparedData::sphere_origin, sphere_radius): moves y
/// (k values, prepared units) onto the sphere |y − origin| = radius along its ray from the origin.
/// A mode exactly at the origin has no direction and is left where it is. radius = 0: no projection.
inline void project_to_sphere(const double* origin, double radius, double* y, int k)
{
    if (!(radius > 0)) return;
    double s = 0;
    for (int d = 0; d < k; ++d) s += (y[d] - origin[d]) * (y[d] - origin[d]);
    if (!(s > 0)) return;
    const double f = radius / __builtin_sqrt(s);
    for (int d = 0; d < k; ++d) y[d] = origin[d] + f * (y[d] - origin[d]);
}

}  // namespace
}  // namespace meanshift::detail
