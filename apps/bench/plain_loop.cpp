// The baseline of bench_cpu_baseline: the plain way to write Gaussian mean shift with OpenMP.
// One mode per iteration of a parallel loop, an inner `#pragma omp simd` loop over the points
// (stored as three contiguous arrays, the friendliest layout for it) and expf, which GCC maps to
// glibc's vector libm (libmvec: _ZGVeN16v_expf / _ZGVdN8v_expf) under -O3 -ffast-math -fopenmp.
// Compiled twice (see CMakeLists.txt) with the function names set, for 256- and 512-bit vectors.
// The _aos variant reads the points row-major (x0 y0 z0 x1 …), as they come from a file or from
// Eigen: the same loop, but the vectoriser has to gather.
#include <cmath>

#if !defined(PLAIN_LOOP_NAME) || !defined(PLAIN_LOOP_AOS_NAME)
#error "define PLAIN_LOOP_NAME and PLAIN_LOOP_AOS_NAME"
#endif

/// One mean shift iteration for m modes (m × 3 row-major) over n points (x, y, z arrays) with
/// the unit Gaussian kernel; writes m × 3 new positions to out.
void PLAIN_LOOP_NAME(const float* x, const float* y, const float* z, long n, const float* modes, long m, float* out,
                     int threads)
{
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
    for (long q = 0; q < m; ++q) {
        const float mx = modes[3 * q], my = modes[3 * q + 1], mz = modes[3 * q + 2];
        float s0 = 0.0f, sx = 0.0f, sy = 0.0f, sz = 0.0f;
#pragma omp simd reduction(+ : s0, sx, sy, sz)
        for (long i = 0; i < n; ++i) {
            const float dx = mx - x[i], dy = my - y[i], dz = mz - z[i];
            const float e = expf(-0.5f * (dx * dx + dy * dy + dz * dz));
            s0 += e;
            sx += e * x[i];
            sy += e * y[i];
            sz += e * z[i];
        }
        const bool support = s0 > 0.0f;
        out[3 * q] = support ? sx / s0 : mx;
        out[3 * q + 1] = support ? sy / s0 : my;
        out[3 * q + 2] = support ? sz / s0 : mz;
    }
}

/// The same loop on row-major points (n × 3).
void PLAIN_LOOP_AOS_NAME(const float* points, long n, const float* modes, long m, float* out, int threads)
{
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
    for (long q = 0; q < m; ++q) {
        const float mx = modes[3 * q], my = modes[3 * q + 1], mz = modes[3 * q + 2];
        float s0 = 0.0f, sx = 0.0f, sy = 0.0f, sz = 0.0f;
#pragma omp simd reduction(+ : s0, sx, sy, sz)
        for (long i = 0; i < n; ++i) {
            const float x = points[3 * i], y = points[3 * i + 1], z = points[3 * i + 2];
            const float dx = mx - x, dy = my - y, dz = mz - z;
            const float e = expf(-0.5f * (dx * dx + dy * dy + dz * dz));
            s0 += e;
            sx += e * x;
            sy += e * y;
            sz += e * z;
        }
        const bool support = s0 > 0.0f;
        out[3 * q] = support ? sx / s0 : mx;
        out[3 * q + 1] = support ? sy / s0 : my;
        out[3 * q + 2] = support ? sz / s0 : mz;
    }
}
