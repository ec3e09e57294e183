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

/* The two per-point pairs above with the mode's log2 weights shifted (see "per-mode log2 shift"
 * below): the exponent starts from rec[0] + nsh, nsh = -m_q (one add per pair more). Used by the
 * OpenCL kernels built with MS_LOG2_SHIFT; the unshifted ones stay as they are. */
MS_INLINE void ms_pair_direct_per_point_shifted(const float* q, const float* rec, float nsh, int k,
                                                float* s0, float* s1)
{
    float d2 = 0.0f;
    for (int d = 0; d < k; ++d) {
        const float t = q[d] - rec[1 + d];
        d2 = MS_FMA(rec[1 + k + d] * t, t, d2);
    }
    const float e = MS_EXP2(MS_FMA(d2, MS_NEG_HALF_LOG2E, rec[0] + nsh));
    for (int d = 0; d < k; ++d) {
        const float ew = e * rec[1 + k + d];
        s0[d] += ew;
        s1[d] = MS_FMA(ew, rec[1 + d], s1[d]);
    }
}

MS_INLINE void ms_pair_expanded_per_point_shifted(const float* q, const float* q2, const float* rec, float nsh,
                                                  int k, float* s0, float* s1)
{
    float arg = rec[0] + nsh;
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

/* ---- per-mode log2 shift of the per-point weights ------------------------------
 * The per-point weights e = 2^(L c_i - L/2 D²) span |H_i|^-1/2, which in high dimensions reaches
 * far below float32's range (2^-126): relative to the global maximum c = 0 every weight of a wide
 * cluster's point underflows. Where the host sees that the c_i may do so (L min c_i < -64,
 * backends/common/partial_sums.hpp), each mode q gets a shift m_q = max_i (L c_i - L/2 D²_qi) over its
 * candidates (pairs within the cutoff), found by a max-only pass over the points first, and the
 * kernels weigh by 2^(L c_i - L/2 D² - m_q): the largest weight is 1, so a mode has support
 * wherever float64 has it. Every block of a mode subtracts the same m_q, so sums of point slices
 * and chunks still add up; y' = S1/S0 does not depend on it, and Binding::accumulate multiplies
 * the sums by 2^m_q in float64.
 * The max pass combines partial maxima by an integer atomic max on the "ordered" bits of the
 * float (monotone: f < g <=> ordered(f) < ordered(g)); a buffer filled with bytes 0x80
 * (MS_SHIFT_EMPTY) means "no candidate". A mode whose maximum is below -1074 (float64's smallest
 * subnormal 2^-1074: the oracle has no support either) or that has no candidate gets the shift
 * MS_SHIFT_NO_SUPPORT, which makes every one of its weights 0 (NoSupport, position kept). */
#if defined(__OPENCL_VERSION__)
#  define MS_FLOAT_BITS(f) as_int(f)
#  define MS_BITS_FLOAT(i) as_float(i)
#elif defined(__CUDACC__)
#  define MS_FLOAT_BITS(f) __float_as_int(f)
#  define MS_BITS_FLOAT(i) __int_as_float(i)
#else
#  include <string.h>
static inline int ms_float_bits_host(float f) { int i; memcpy(&i, &f, sizeof i); return i; }
static inline float ms_bits_float_host(int i) { float f; memcpy(&f, &i, sizeof f); return f; }
#  define MS_FLOAT_BITS(f) ms_float_bits_host(f)
#  define MS_BITS_FLOAT(i) ms_bits_float_host(i)
#endif
#define MS_SHIFT_EMPTY ((int)0x80808080)          /* a buffer of 0x80 bytes: no candidate yet */
#define MS_SHIFT_FLOOR_ORDERED ((int)0xbb79bfff)  /* ms_ordered_from_float(-1074.0f) */
#define MS_SHIFT_NO_SUPPORT (1.0e30f)             /* every weight 2^(v - 1e30) = 0; finite (fast math) */
#define MS_LOG2_WEIGHT_NONE (-3.0e38f)            /* a max pass's start: below every real log2 weight */

/* Monotone int image of a float (not NaN): ordered(f) < ordered(g) exactly when f < g. */
MS_INLINE int ms_ordered_from_float(float f)
{
    const int i = MS_FLOAT_BITS(f);
    return i >= 0 ? i : i ^ 0x7fffffff;
}

/* The shift a kernel subtracts from mode q's log2 weights, from its max pass's ordered maximum:
 * the maximum itself, or MS_SHIFT_NO_SUPPORT when it is below -1074 (or there was no candidate). */
MS_INLINE float ms_log2_shift(int ordered_max)
{
    if (ordered_max < MS_SHIFT_FLOOR_ORDERED) return MS_SHIFT_NO_SUPPORT;
    return MS_BITS_FLOAT(ordered_max >= 0 ? ordered_max : ordered_max ^ 0x7fffffff);
}

/* The max pass in the direct form, over the points i = i0, i0 + step, ... < i1 of a per-point
 * data set (point i, dim d at points[i·ps + d·ds], the same for precision; log_weight[i] natural
 * log): the largest L c_i - L/2 D² of query y (k values) among the pairs with D² <= cut2
 * (+huge: the exact kernel), MS_LOG2_WEIGHT_NONE when there is none. */
MS_INLINE float ms_log2_weight_max(MS_CONST_GLOBAL float* points, MS_CONST_GLOBAL float* precision,
                                   MS_CONST_GLOBAL float* log_weight, long ps, long ds, long i0, long i1,
                                   long step, MS_CONST_GLOBAL float* y, int k, float cut2)
{
    float best = MS_LOG2_WEIGHT_NONE;
    for (long i = i0; i < i1; i += step) {
        float d2 = 0.0f;
        for (int d = 0; d < k; ++d) {
            const float t = points[i * ps + d * ds] - y[d];
            d2 = MS_FMA(precision[i * ps + d * ds] * t, t, d2);
        }
        const float v = MS_FMA(d2, MS_NEG_HALF_LOG2E, MS_LOG2E * log_weight[i]);
        if (d2 <= cut2 && v > best) best = v;
    }
    return best;
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
