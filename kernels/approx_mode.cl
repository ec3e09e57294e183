/* approx_mode.cl: Alg. 3 (approxMode, Malysiak & Handmann) in OpenCL C 1.2. Every PU reads the
 * point records straight from global memory (no preloading; see approx_modes_preload.cl for
 * Alg. 7). Options and mapping: approx_mode_common.clh.
 *
 * The n-loop of a vPPU is shared by its first F_LOAD PUs: PU `lane` visits the points
 * lane, lane + F_LOAD, lane + 2·F_LOAD, ... of each tile. That is Alg. 3's split into F_LOAD
 * parts of ⌈n/F_LOAD⌉ points, interleaved instead of contiguous so that neighbouring PUs read
 * neighbouring records (coalesced). Tiles are walked in order; each has its reference point r_t. */
#ifndef MEANSHIFT_APPROX_MODE_COMMON_CLH
#include "approx_mode_common.clh"
#endif

__kernel __attribute__((reqd_work_group_size(TAU, 1, 1)))
void approx_mode(MS_APPROX_MODE_PARAMS)
{
    const int lid = (int)get_local_id(0);
    const int vppu = lid / F_VPPU;
    const int lane = lid % F_VPPU;
#if F_LOAD > 1
    __local float red[NACC * TAU];
#endif
    for (int u = (int)get_group_id(0); u < nblocks * segments; u += (int)get_num_groups(0)) {
        int blk, t0, t1;
        ms_unit(u, segments, ntiles, &blk, &t0, &t1);
        ms_modes s;
        ms_load_modes(&s, active, count, blk, vppu, log2_shift);
        if (lane < F_LOAD) {
            for (int t = t0; t < t1; ++t) {
                __global const float4* tile4 = records + t * (TILE * STRIDE / 4);
                ms_begin_tile(&s, modes, centres + t * K, radii[t]);
                MS_VISIT_TILE(&s, tile4, lane);
                ms_end_tile(&s);
            }
        }
#if F_LOAD > 1
        ms_reduce_modes(&s, red, lid, lane);
#endif
        ms_store_unit(&s, modes, partial, count, segments, u, blk, vppu, lane, MS_FINISH_ARGS);
    }
}

#if defined(MS_CPU_VW)
/* ---- CPU-class devices: approx_mode_cpu ------------------------------------------
 * PoCL and other CPU runtimes run a work-group as a loop over its work-items; they vectorize
 * across work-items only when that loop is innermost, which the point loop above prevents. So
 * each work-item here advances its R = MODES_PER_PU modes (scalars) against MS_CPU_VW points at
 * once in explicit float vectors (lanes = points; MS_CPU_VW = the device's preferred float
 * width), with its own vector exp2 (a polynomial, inlined: the library's exp2 is a call per
 * lane), no local memory, no barriers. The host stores each tile's records point-transposed in
 * blocks of MS_CPU_VW points (field f of point p of block b at ((b · STRIDE + f) · VW + p)), so a
 * field of VW points is one vector load. Same records, reference tiles, folds, units, partial
 * sums and end of step as the GPU shape (ms_store_unit); the lanes are summed once per unit.
 * Expanded exponent only (the host keeps the GPU shape for the direct form). */
#if !EXPANDED || F_VPPU != 1 || (TILE % MS_CPU_VW) != 0
#error "approx_mode_cpu: expanded form, F_VPPU = 1, TILE a multiple of MS_CPU_VW"
#endif
#if defined(MS_CPU_DC) && (R != 1 || MS_CPU_DC < 1)
#error "approx_mode_cpu: MS_CPU_DC (dims per chunk) needs MODES_PER_PU = 1"
#endif
/* msv, ms_cpu_exp2, ms_cpu_hsum: approx_mode_common.clh (shared with range_modes_cpu). */

__kernel __attribute__((reqd_work_group_size(TAU, 1, 1)))
void approx_mode_cpu(MS_APPROX_MODE_PARAMS)
{
    const int lid = (int)get_local_id(0);
    __global const float* soa = (__global const float*)records;
    for (int u = (int)get_group_id(0); u < nblocks * segments; u += (int)get_num_groups(0)) {
        int blk, t0, t1;
        ms_unit(u, segments, ntiles, &blk, &t0, &t1);
        ms_modes s; /* idx, and the lane-summed totals for ms_store_unit */
        ms_load_modes(&s, active, count, blk, lid, log2_shift);
        msv S0[R][NS0], S1[R][K];
#pragma unroll
        for (int m = 0; m < R; ++m) {
            MS_UNROLL_K
            for (int d = 0; d < NS0; ++d) S0[m][d] = (msv)(0.0f);
            MS_UNROLL_K
            for (int d = 0; d < K; ++d) S1[m][d] = (msv)(0.0f);
        }
        for (int t = t0; t < t1; ++t) {
            __global const float* ref = centres + t * K;
            float q[R][K];
#if MODEL_PER_POINT
            float qx[R][K];
#else
            float cq[R];
#endif
            msv s0[R][NS0], s1[R][K];
#pragma unroll
            for (int m = 0; m < R; ++m) {
                __global const float* y = modes + s.idx[m] * K;
                float c = 0.0f;
                MS_UNROLL_K
                for (int d = 0; d < K; ++d) {
                    const float qd = y[d] - ref[d];
#if MODEL_PER_POINT
                    q[m][d] = qd;
                    qx[m][d] = qd * qd;
#else
                    q[m][d] = MS_LOG2E * qd;
                    c = mad(qd, qd, c);
#endif
                    s1[m][d] = (msv)(0.0f);
                }
#if !MODEL_PER_POINT
                cq[m] = MS_NEG_HALF_LOG2E * c;
#endif
                MS_UNROLL_K
                for (int d = 0; d < NS0; ++d) s0[m][d] = (msv)(0.0f);
            }
            __global const float* tb = soa + (long)t * (TILE * STRIDE);
#if defined(MS_CPU_DC)
            /* Large k (R = 1): a mode's NS0 + K tile sums exceed the vector registers. The
             * exponents of the whole tile go first (E, TILE / VW vectors), built MS_CPU_DC
             * dims at a time with those dims' query values held in registers; then the sums,
             * MS_CPU_DC dims at a time in registers over the tile. */
            msv E[TILE / MS_CPU_VW];
            for (int b = 0; b < TILE / MS_CPU_VW; ++b)
#if MODEL_PER_POINT && MS_LOG2_SHIFT
                E[b] = MS_VLOAD(0, tb + b * (STRIDE * MS_CPU_VW)) + s.nsh[0];
#elif MODEL_PER_POINT
                E[b] = MS_VLOAD(0, tb + b * (STRIDE * MS_CPU_VW));
#else
                E[b] = MS_VLOAD(K, tb + b * (STRIDE * MS_CPU_VW)) + cq[0];
#endif
#if MODEL_PER_POINT
#define MS_CPU_ARG_CHUNK(c0, NDC)                                                          \
    {                                                                                      \
        msv qv_[NDC], qxv_[NDC];                                                           \
        _Pragma("unroll") for (int j_ = 0; j_ < (NDC); ++j_) {                             \
            qv_[j_] = (msv)(q[0][(c0) + j_]);                                              \
            qxv_[j_] = (msv)(qx[0][(c0) + j_]);                                            \
        }                                                                                  \
        for (int b_ = 0; b_ < TILE / MS_CPU_VW; ++b_) {                                    \
            __global const float* pb_ = tb + b_ * (STRIDE * MS_CPU_VW);                    \
            msv arg_ = E[b_];                                                              \
            _Pragma("unroll") for (int j_ = 0; j_ < (NDC); ++j_) {                         \
                arg_ = MS_VFMA(MS_VLOAD(1 + (c0) + j_, pb_), qv_[j_], arg_);               \
                arg_ = MS_VFMA(MS_VLOAD(1 + K + (c0) + j_, pb_), qxv_[j_], arg_);          \
            }                                                                              \
            E[b_] = arg_;                                                                  \
        }                                                                                  \
    }
#define MS_CPU_SUM_CHUNK(c0, NDC)                                                          \
    {                                                                                      \
        msv a0_[NDC], a1_[NDC];                                                            \
        _Pragma("unroll") for (int j_ = 0; j_ < (NDC); ++j_) a0_[j_] = a1_[j_] = (msv)(0.0f); \
        for (int b_ = 0; b_ < TILE / MS_CPU_VW; ++b_) {                                    \
            __global const float* pb_ = tb + b_ * (STRIDE * MS_CPU_VW);                    \
            const msv e_ = E[b_];                                                          \
            _Pragma("unroll") for (int j_ = 0; j_ < (NDC); ++j_) {                         \
                a0_[j_] = MS_VFMA(e_, MS_VLOAD(1 + K + (c0) + j_, pb_), a0_[j_]);          \
                a1_[j_] = MS_VFMA(e_, MS_VLOAD(1 + (c0) + j_, pb_), a1_[j_]);              \
            }                                                                              \
        }                                                                                  \
        _Pragma("unroll") for (int j_ = 0; j_ < (NDC); ++j_) {                             \
            s0[0][(c0) + j_] = a0_[j_];                                                    \
            s1[0][(c0) + j_] = a1_[j_];                                                    \
        }                                                                                  \
    }
#else
#define MS_CPU_ARG_CHUNK(c0, NDC)                                                          \
    {                                                                                      \
        msv qv_[NDC];                                                                      \
        _Pragma("unroll") for (int j_ = 0; j_ < (NDC); ++j_) qv_[j_] = (msv)(q[0][(c0) + j_]); \
        for (int b_ = 0; b_ < TILE / MS_CPU_VW; ++b_) {                                    \
            __global const float* pb_ = tb + b_ * (STRIDE * MS_CPU_VW);                    \
            msv arg_ = E[b_];                                                              \
            _Pragma("unroll") for (int j_ = 0; j_ < (NDC); ++j_)                           \
                arg_ = MS_VFMA(MS_VLOAD((c0) + j_, pb_), qv_[j_], arg_);                   \
            E[b_] = arg_;                                                                  \
        }                                                                                  \
    }
#define MS_CPU_SUM_CHUNK(c0, NDC)                                                          \
    {                                                                                      \
        msv a1_[NDC];                                                                      \
        _Pragma("unroll") for (int j_ = 0; j_ < (NDC); ++j_) a1_[j_] = (msv)(0.0f);         \
        for (int b_ = 0; b_ < TILE / MS_CPU_VW; ++b_) {                                    \
            __global const float* pb_ = tb + b_ * (STRIDE * MS_CPU_VW);                    \
            const msv e_ = E[b_];                                                          \
            _Pragma("unroll") for (int j_ = 0; j_ < (NDC); ++j_)                           \
                a1_[j_] = MS_VFMA(e_, MS_VLOAD((c0) + j_, pb_), a1_[j_]);                  \
        }                                                                                  \
        _Pragma("unroll") for (int j_ = 0; j_ < (NDC); ++j_) s1[0][(c0) + j_] = a1_[j_];   \
    }
#endif
            for (int c0 = 0; c0 + MS_CPU_DC <= K; c0 += MS_CPU_DC) MS_CPU_ARG_CHUNK(c0, MS_CPU_DC)
#if K % MS_CPU_DC
            MS_CPU_ARG_CHUNK(K - K % MS_CPU_DC, K % MS_CPU_DC)
#endif
            {
                msv se = (msv)(0.0f);
                for (int b = 0; b < TILE / MS_CPU_VW; ++b) {
                    E[b] = ms_cpu_exp2(E[b]);
                    se += E[b];
                }
#if !MODEL_PER_POINT
                s0[0][0] = se;
#endif
            }
            for (int c0 = 0; c0 + MS_CPU_DC <= K; c0 += MS_CPU_DC) MS_CPU_SUM_CHUNK(c0, MS_CPU_DC)
#if K % MS_CPU_DC
            MS_CPU_SUM_CHUNK(K - K % MS_CPU_DC, K % MS_CPU_DC)
#endif
#else
            for (int b = 0; b < TILE / MS_CPU_VW; ++b) {
                __global const float* pb = tb + b * (STRIDE * MS_CPU_VW);
#if MODEL_PER_POINT
                /* [A, B_0..B_{K-1}, C_0..C_{K-1}]: arg = A + Σ B_d q_d + Σ C_d q_d² */
                const msv A = MS_VLOAD(0, pb);
#pragma unroll
                for (int m = 0; m < R; ++m) {
#if MS_LOG2_SHIFT
                    msv arg = A + s.nsh[m]; /* the mode's log2 shift (approx_mode_common.clh) */
#else
                    msv arg = A;
#endif
                    MS_UNROLL_K
                    for (int d = 0; d < K; ++d) {
                        arg = MS_VFMA(MS_VLOAD(1 + d, pb), (msv)(q[m][d]), arg);
                        arg = MS_VFMA(MS_VLOAD(1 + K + d, pb), (msv)(qx[m][d]), arg);
                    }
                    const msv e = ms_cpu_exp2(arg);
                    MS_UNROLL_K
                    for (int d = 0; d < K; ++d) {
                        s0[m][d] = MS_VFMA(e, MS_VLOAD(1 + K + d, pb), s0[m][d]);
                        s1[m][d] = MS_VFMA(e, MS_VLOAD(1 + d, pb), s1[m][d]);
                    }
                }
#else
                /* [p'_0..p'_{K-1}, -L/2 |p'|²]: arg = cq + a + L q·p' */
                const msv a = MS_VLOAD(K, pb);
#pragma unroll
                for (int m = 0; m < R; ++m) {
                    msv arg = a + cq[m];
                    MS_UNROLL_K
                    for (int d = 0; d < K; ++d) arg = MS_VFMA(MS_VLOAD(d, pb), (msv)(q[m][d]), arg);
                    const msv e = ms_cpu_exp2(arg);
                    s0[m][0] += e;
                    MS_UNROLL_K
                    for (int d = 0; d < K; ++d) s1[m][d] = MS_VFMA(e, MS_VLOAD(d, pb), s1[m][d]);
                }
#endif
            }
#endif /* MS_CPU_DC */
            /* fold the tile lane by lane (linear, so the lanes are summed once per unit):
             * S1 += (r_t - y) s0' + s1, S0 += s0' with s0' = s0 (shared) or -2 s0 (per-point raw) */
#pragma unroll
            for (int m = 0; m < R; ++m) {
                MS_UNROLL_K
                for (int d = 0; d < K; ++d) {
#if MODEL_PER_POINT
                    const msv t0v = -2.0f * s0[m][d];
                    const float rmq = -q[m][d];
#else
                    const msv t0v = s0[m][0];
                    const float rmq = q[m][d] * (-1.0f / MS_LOG2E);
#endif
                    S1[m][d] += MS_VFMA((msv)(rmq), t0v, s1[m][d]);
                }
                MS_UNROLL_K
                for (int d = 0; d < NS0; ++d) S0[m][d] += MODEL_PER_POINT ? -2.0f * s0[m][d] : s0[m][d];
            }
        }
#pragma unroll
        for (int m = 0; m < R; ++m) {
            MS_UNROLL_K
            for (int d = 0; d < NS0; ++d) s.S0[m][d] = ms_cpu_hsum(S0[m][d]);
            MS_UNROLL_K
            for (int d = 0; d < K; ++d) s.S1[m][d] = ms_cpu_hsum(S1[m][d]);
        }
        ms_store_unit(&s, modes, partial, count, segments, u, blk, lid, 0, MS_FINISH_ARGS);
    }
}
#endif /* MS_CPU_VW */
