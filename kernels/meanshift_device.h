/* meanshift_device.h: device math shared by the OpenCL C 1.2 and CUDA kernels (and compilable
 * as C++ for host-side tests). It stays in the intersection of the three languages: no
 * templates, no std::, float literals with the f suffix, math through the MS_* macros.
 * Pointers without an address-space qualifier are private (registers) in OpenCL C 1.2, so the
 * ms_pair_* functions take private copies of a point record; the kernels copy a record from
 * global or local memory first (the compiler keeps it in registers).
 *
 * The per-pair work of Alg. 3 lines 12-15 (Malysiak & Handmann), for diagonal H_i:
 *   D²  = Σ_d w_id (y_d - x_id)²                        (eq. 3, Mahalanobis distance)
 *   e   = exp(c_i - D²/2),  c_i = log|H_i|^{-1/2} - max  (eq. 5 weight, rescaled)
 *   S0_d += e w_id,  S1_d += e w_id x_id                 (eq. 4/5 numerators, H_h,t and y_p,t)
 * For a shared H the skeleton whitens the data, so w_id = 1, c_i = 0 and only S0 (a scalar) and
 * S1_d are accumulated. The new mode is y_d = S1_d / S0_d.
 *
 * Two forms of the exponent:
 *  - direct   (ms_sq_dist, ms_accumulate_*, ms_pair_direct_*): (y_d - x_id)², 3 instructions a
 *    dimension, accurate wherever the data lie;
 *  - expanded (ms_pair_expanded_*): |y|² + |x|² - 2 y·x with the point terms precomputed on the
 *    host (ms_record_* layout below), 1-2 instructions a dimension. It cancels catastrophically
 *    when |y| and |x| are large compared with the bandwidth, so the kernels evaluate it relative
 *    to a reference point r_t of each tile of points (the tile's bounding-box centre): the
 *    rounding error then scales with the tile's extent, not with the distance from the origin.
 *
 * Record layouts (one point of a tile, relative coordinates p' = x - r_t, L = log2(e)):
 *   shared,   direct  : [p'_0 .. p'_{k-1}, a]   a = 0 (a = MS_PAD_LOG2W marks a padding point)
 *   shared,   expanded: [p'_0 .. p'_{k-1}, a]   a = -L/2 |p'|²
 *   per-point, direct  : [L c_i, p'_0 .. p'_{k-1}, w_0 .. w_{k-1}]
 *   per-point, expanded: [A, B_0 .. B_{k-1}, C_0 .. C_{k-1}]
 *                        A = L c_i - L/2 Σ_d w_d p'_d²,  B_d = L w_d p'_d,  C_d = -L/2 w_d
 * The ms_pair_* functions accumulate the tile's partial sums s0, s1 in "raw" units; the fold
 * functions add a tile's raw sums into the mode's totals S0, S1 (shift relative to the mode,
 * y_new = y + S1 / S0). */
#ifndef MEANSHIFT_DEVICE_H
#define MEANSHIFT_DEVICE_H

#if defined(__OPENCL_VERSION__)
#  define MS_INLINE inline
#  define MS_GLOBAL __global
#  define MS_LOCAL __local
#  define MS_CONST_GLOBAL __global const
#  if defined(MS_NV_EX2)
/* NVIDIA's OpenCL (the host adds -D MS_NV_EX2 there): one MUFU.EX2, flushing results below
 * 2^-126 to 0, through inline PTX; native_exp2 compiles to a longer sequence. */
inline float ms_nv_ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
#    define MS_EXP2(x) ms_nv_ex2(x)
#  else
#    define MS_EXP2(x) native_exp2(x)
#  endif
#  define MS_FMA(a, b, c) mad((a), (b), (c))
#elif defined(__CUDACC__)
#  define MS_INLINE __device__ __forceinline__
#  define MS_GLOBAL
#  define MS_LOCAL
#  define MS_CONST_GLOBAL const
#  define MS_EXP2(x) exp2f(x)
#  define MS_FMA(a, b, c) fmaf((a), (b), (c))
#else
#  include <math.h>
#  define MS_INLINE static inline
#  define MS_GLOBAL
#  define MS_LOCAL
#  define MS_CONST_GLOBAL const
#  define MS_EXP2(x) exp2f(x)
#  define MS_FMA(a, b, c) ((a) * (b) + (c))
#endif

/* -1/2 · log2(e): exp(-D²/2) = exp2(D² · MS_NEG_HALF_LOG2E). */
#define MS_NEG_HALF_LOG2E (-0.72134752044448170368f)
/* log2(e): exp(c) = exp2(c · MS_LOG2E). */
#define MS_LOG2E (1.44269504088896340736f)
/* Log2-weight of a padding record: exp2 of it is exactly 0, so padded tile entries never get
 * weight (finite, so -cl-fast-relaxed-math may assume no infinities). */
#define MS_PAD_LOG2W (-1.0e30f)

/* ---- direct form on global memory (kept for the CUDA backend; names are stable) ---------- */

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

/* ---- tile records (private copies), used by the OpenCL kernels --------------------------- */

/* Shared model, direct form. q = y - r_t (k values); rec = [p', a]. s0 scalar, s1[k]. */
MS_INLINE void ms_pair_direct_shared(const float* q, const float* rec, int k,
                                     float* s0, float* s1)
{
    float d2 = 0.0f;
    for (int d = 0; d < k; ++d) {
        const float t = q[d] - rec[d];
        d2 = MS_FMA(t, t, d2);
    }
    const float e = MS_EXP2(MS_FMA(d2, MS_NEG_HALF_LOG2E, rec[k]));
    *s0 += e;
    for (int d = 0; d < k; ++d) s1[d] = MS_FMA(e, rec[d], s1[d]);
}

/* Shared model, expanded form. qs = L (y - r_t), cq = -L/2 |y - r_t|²; rec = [p', a]. */
MS_INLINE void ms_pair_expanded_shared(const float* qs, float cq, const float* rec, int k,
                                       float* s0, float* s1)
{
    float arg = cq + rec[k];
    for (int d = 0; d < k; ++d) arg = MS_FMA(qs[d], rec[d], arg);
    const float e = MS_EXP2(arg);
    *s0 += e;
    for (int d = 0; d < k; ++d) s1[d] = MS_FMA(e, rec[d], s1[d]);
}

/* Per-point model, direct form. q = y - r_t; rec = [L c, p', w]. s0[k] += e w, s1[k] += e w p'. */
MS_INLINE void ms_pair_direct_per_point(const float* q, const float* rec, int k,
                                        float* s0, float* s1)
{
    float d2 = 0.0f;
    for (int d = 0; d < k; ++d) {
        const float t = q[d] - rec[1 + d];
        d2 = MS_FMA(rec[1 + k + d] * t, t, d2);
    }
    const float e = MS_EXP2(MS_FMA(d2, MS_NEG_HALF_LOG2E, rec[0]));
    for (int d = 0; d < k; ++d) {
        const float ew = e * rec[1 + k + d];
        s0[d] += ew;
        s1[d] = MS_FMA(ew, rec[1 + d], s1[d]);
    }
}

/* Per-point model, expanded form. q = y - r_t, q2 = q²; rec = [A, B, C].
 * Raw sums: s0[d] += e C_d (= -L/2 e w_d), s1[d] += e B_d (= L e w_d p'_d). */
MS_INLINE void ms_pair_expanded_per_point(const float* q, const float* q2, const float* rec,
                                          int k, float* s0, float* s1)
{
    float arg = rec[0];
    for (int d = 0; d < k; ++d) arg = MS_FMA(rec[1 + d], q[d], arg);
    for (int d = 0; d < k; ++d) arg = MS_FMA(rec[1 + k + d], q2[d], arg);
    const float e = MS_EXP2(arg);
    for (int d = 0; d < k; ++d) {
        s0[d] = MS_FMA(e, rec[1 + k + d], s0[d]);
        s1[d] = MS_FMA(e, rec[1 + d], s1[d]);
    }
}

/* Fold a tile's raw sums into the mode's totals. rmq = r_t - y (k values). The totals satisfy
 * y_new = y + S1 / S0 (per dimension for the per-point model). `s0_scale` converts raw s0 to
 * the unit of raw s1: 1 for the direct forms and the shared expanded form, -2 for the per-point
 * expanded form (raw s0 = -L/2 Σ e w, raw s1 = L Σ e w p'). */
MS_INLINE void ms_fold_shared(const float* rmq, float s0, const float* s1, int k,
                              float* S0, float* S1)
{
    *S0 += s0;
    for (int d = 0; d < k; ++d) S1[d] += MS_FMA(rmq[d], s0, s1[d]);
}

MS_INLINE void ms_fold_per_point(const float* rmq, const float* s0, const float* s1,
                                 float s0_scale, int k, float* S0, float* S1)
{
    for (int d = 0; d < k; ++d) {
        const float t = s0_scale * s0[d];
        S0[d] += t;
        S1[d] += MS_FMA(rmq[d], t, s1[d]);
    }
}

/* ---- end of a step: Alg. 3 line 20 and Alg. 5, the one device-side copy (CUDA and OpenCL) ---- */

/* Dimension d of one mode. The kernels accumulate the shift relative to the mode, so
 * y' = y + S1_d / S0_d; a dimension without support (S0_d = 0) keeps y. Adds
 * metric_d · (y' - y)² to *shift2 (the squared Mahalanobis shift of Alg. 5; metric_d = 1 for the
 * Euclidean distance in prepared units) and returns y'. */
MS_INLINE float ms_finish_dim(float y, float s0, float s1, float metric, float* shift2)
{
    const float t = s0 > 0.0f ? s1 / s0 : 0.0f;
    *shift2 = MS_FMA(metric * t, t, *shift2);
    return y + t;
}

/* Status of a mode after its step, the values of meanshift::ModeStatus: 2 = no support (S0 = 0
 * in every dimension: the mode kept its position), 1 = converged (shift2 <= tol2), 0 = active. */
#define MS_STATUS_ACTIVE 0
#define MS_STATUS_CONVERGED 1
#define MS_STATUS_NO_SUPPORT 2
MS_INLINE int ms_mode_status(int supported, float shift2, float tol2)
{
    return !supported ? MS_STATUS_NO_SUPPORT : (shift2 <= tol2 ? MS_STATUS_CONVERGED : MS_STATUS_ACTIVE);
}

#endif /* MEANSHIFT_DEVICE_H */
