/* gemm_modes.cl: one mean-shift step (Alg. 3) for high-dimensional data as a fused,
 * register-blocked matrix product in OpenCL C 1.2, flash-attention style: the BM × BN weights of
 * a block of modes against a tile of points live only in local memory, never in global memory.
 *
 * Per work unit (block of BM modes, segment of the point tiles) and per tile t of BN = TILE points
 * (the records of backends/gpu/tile_layout: relative to the tile's reference r_t, q' = y − r_t):
 *   phase 1  exponents, an SGEMM over the dims in chunks of BK staged in local memory:
 *              shared H : arg = L (q'·p' − ½|q'|²) − L/2 |p'|²        (|q'|², |p'|² computed directly)
 *              per-point: arg = A + Σ_d B_d q'_d + Σ_d C_d q'_d²     (= L c_i − L/2 D², [Q, Q²]·[B, C]ᵀ)
 *            e = exp2(min(arg, 0)) (rounding may make arg > 0; the true value never is), 0 beyond
 *            the truncated kernel's cutoff (GEMM_CUT: D² > cutoff2); padding records have arg = −1e30;
 *   phase 2  the weighted sums as a second product from local memory, E (BM × BN) · P (BN × k):
 *              shared H : S1 += E·p', s0 = E·1;   per-point: S1 += E·B, s0 = E·C   (raw sums)
 *            and the fold of the tile (shift relative to the mode, as ms_fold_* of
 *            meanshift_device.h): S1 += (r_t − y) s0 (per-point: with −2 s0), S0 += s0.
 * Each unit writes its S0 (1 or k) and S1 (k) per mode to `partial`; combine_segments (approx_mode_
 * common.clh) sums the segments and finishes the step (ms_finish_mode: position, report,
 * compaction, NoSupport when S0 = 0 everywhere). No factoring of exp2(cq) and no flush guard:
 * a mode whose every weight underflows (nearest point beyond ~13 bandwidths) reports NoSupport,
 * as the CUDA kernels and the unfactored OpenCL path do.
 *
 * Mapping of the abstract machine: PPU = work-group (τ = TAU work-items = MGRP × DGRP PUs);
 * PU (mi, ni) = work-item mi · DGRP + ni. Phase 1: it holds the TM × TN register block of modes
 * mi + MGRP·a and points ni + DGRP·b; phase 2: the TM × TK2 block of the same modes and the dims
 * ni + DGRP·c. A mode is thus served by DGRP PUs in each phase (a vPPU of DGRP PUs whose n-loop,
 * then whose k-loop, is split between them; no reduction is needed because each PU owns distinct
 * output dims); r = TM modes per PU.
 *
 * Options (-D) besides those of approx_mode_common.clh (built with F_VPPU = F_LOAD = MODES_PER_PU
 * = 1, EXPANDED = 1, TILE = BN): GEMM_BM, GEMM_TM, GEMM_TN, GEMM_BK, GEMM_CUT (0/1).
 * Per-point weights beyond float32's range (MS_LOG2_SHIFT, approx_mode_common.clh): the weights are
 * 2^(arg - m_q) with each mode's log2 shift m_q = log2_shift[slot]; the same source built with
 * GEMM_MAXPASS = 1 is the max pass that finds m_q first: phase 1 only, each PU's largest arg of a
 * mode (within the cutoff) goes into log2_shift[slot] by an atomic max on the ordered bits, and
 * nothing else is written.
 * The barriers sit in loops without unrolling (PoCL 3 miscompiled barriers in unrolled loops). */
#ifndef MEANSHIFT_APPROX_MODE_COMMON_CLH
#include "approx_mode_common.clh"
#endif

#if !defined(GEMM_BM) || !defined(GEMM_TM) || !defined(GEMM_TN) || !defined(GEMM_BK) || !defined(GEMM_CUT)
#error "gemm_modes: compile with -D GEMM_BM, GEMM_TM, GEMM_TN, GEMM_BK, GEMM_CUT"
#endif
#define BM GEMM_BM
#define BN TILE
#define TM GEMM_TM
#define TN GEMM_TN
#define BK GEMM_BK
#define MGRP (BM / TM) /* rows of the PU grid: mode groups */
#define DGRP (BN / TN) /* columns: point groups (phase 1) = dim groups (phase 2) */
#if (BM % TM) != 0 || (BN % TN) != 0 || MGRP * DGRP != TAU || !EXPANDED || F_VPPU != 1
#error "gemm_modes: BM/TM · BN/TN must equal TAU (expanded records, F_VPPU = 1)"
#endif
#if TAU < BM
#error "gemm_modes: TAU >= BM (one PU per mode computes |q'|²)"
#endif
#if GEMM_MAXPASS && !MS_LOG2_SHIFT
#error "gemm_modes: GEMM_MAXPASS is the max pass of MS_LOG2_SHIFT"
#endif
#define TK2 ((K + DGRP - 1) / DGRP) /* dims per PU in phase 2 */
#define NCHUNK ((K + BK - 1) / BK)
#define LDM (BM + 1) /* padded rows of the local tiles: fewer bank conflicts */
#define LDN (BN + 1)
#if MODEL_PER_POINT
#define POFF 1 /* B_d at record[1 + d], C_d at record[1 + K + d], A at record[0] */
#else
#define POFF 0 /* p'_d at record[d], -L/2 |p'|² at record[K] */
#endif
#if (K % DGRP) == 0
#define MS_DIM_OK(d) 1
#else
#define MS_DIM_OK(d) ((d) < K)
#endif

__kernel __attribute__((reqd_work_group_size(TAU, 1, 1)))
void gemm_modes(MS_APPROX_MODE_PARAMS,
                __global const float* lcw, /* per-point, GEMM_CUT: L c_i per record slot */
                const float cutl)          /* GEMM_CUT: L/2 · cutoff2 */
{
    __local float Qs[BK * LDM]; /* q'_d of the chunk, [d][m] */
    __local float Ps[BK * LDN]; /* p'_d (shared) or B_d (per-point) of the chunk, [d][j] */
#if MODEL_PER_POINT
    __local float Cs[BK * LDN]; /* C_d of the chunk, [d][j] */
#else
    __local float qnl[BM]; /* |q'|² per mode of the tile */
#endif
    __local float Es[BM * LDN]; /* the weights of the tile, [m][j] */
    __local int midx[BM];
#if MS_LOG2_SHIFT && !GEMM_MAXPASS
    __local float nshl[BM]; /* minus each mode's log2 shift */
#endif
    __global const float* recs = (__global const float*)records;
    const int tid = (int)get_local_id(0);
    const int mi = tid / DGRP;
    const int ni = tid % DGRP;

    for (int u = (int)get_group_id(0); u < nblocks * segments; u += (int)get_num_groups(0)) {
        int blk, t0, t1;
        ms_unit(u, segments, ntiles, &blk, &t0, &t1);
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous unit is done with midx */
        for (int m = tid; m < BM; m += TAU) {
            midx[m] = active[min(blk * BM + m, count - 1)];
#if MS_LOG2_SHIFT && !GEMM_MAXPASS
            nshl[m] = -ms_log2_shift(log2_shift[min(blk * BM + m, count - 1)]);
#endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#if GEMM_MAXPASS
        float mx[TM]; /* this PU's largest log2 weight of each of its modes */
        for (int a = 0; a < TM; ++a) mx[a] = MS_LOG2_WEIGHT_NONE;
#endif

        float S1[TM][TK2];
#if MODEL_PER_POINT
        float S0[TM][TK2], T0[TM][TK2];
#else
        float S0[TM], s0t[TM];
#endif
        for (int a = 0; a < TM; ++a) {
            for (int c = 0; c < TK2; ++c) {
                S1[a][c] = 0.0f;
#if MODEL_PER_POINT
                S0[a][c] = 0.0f;
                T0[a][c] = 0.0f;
#endif
            }
#if !MODEL_PER_POINT
            S0[a] = 0.0f;
            s0t[a] = 0.0f;
#endif
        }

        for (int t = t0; t < t1; ++t) {
            __global const float* ref = centres + t * K;
            __global const float* tile = recs + (long)t * (TILE * STRIDE);
            /* ---- phase 1: exponents, dims in chunks of BK ---- */
            float acc[TM][TN];
            for (int a = 0; a < TM; ++a)
                for (int b = 0; b < TN; ++b) acc[a][b] = 0.0f;
#if !MODEL_PER_POINT
            float qn = 0.0f; /* |q'|² of mode tid (tid < BM) */
#endif
            for (int ch = 0; ch < NCHUNK; ++ch) {
                const int d0 = ch * BK;
                for (int i = tid; i < BM * BK; i += TAU) {
                    const int m = i / BK, d = i % BK, dd = d0 + d;
                    Qs[d * LDM + m] = dd < K ? modes[midx[m] * K + dd] - ref[dd] : 0.0f;
                }
                for (int i = tid; i < BN * BK; i += TAU) {
                    const int j = i / BK, d = i % BK, dd = d0 + d;
                    __global const float* rec = tile + j * STRIDE;
                    Ps[d * LDN + j] = dd < K ? rec[POFF + dd] : 0.0f;
#if MODEL_PER_POINT
                    Cs[d * LDN + j] = dd < K ? rec[1 + K + dd] : 0.0f;
#endif
                }
                barrier(CLK_LOCAL_MEM_FENCE);
#if !MODEL_PER_POINT
                if (tid < BM)
                    for (int d = 0; d < BK; ++d) qn = MS_FMA(Qs[d * LDM + tid], Qs[d * LDM + tid], qn);
#endif
                for (int d = 0; d < BK; ++d) {
                    float qa[TM], pb[TN];
#pragma unroll
                    for (int a = 0; a < TM; ++a) qa[a] = Qs[d * LDM + mi + MGRP * a];
#pragma unroll
                    for (int b = 0; b < TN; ++b) pb[b] = Ps[d * LDN + ni + DGRP * b];
#if MODEL_PER_POINT
                    float cb[TN];
#pragma unroll
                    for (int b = 0; b < TN; ++b) cb[b] = Cs[d * LDN + ni + DGRP * b];
#pragma unroll
                    for (int a = 0; a < TM; ++a) {
                        const float q2 = qa[a] * qa[a];
#pragma unroll
                        for (int b = 0; b < TN; ++b) acc[a][b] = MS_FMA(pb[b], qa[a], MS_FMA(cb[b], q2, acc[a][b]));
                    }
#else
#pragma unroll
                    for (int a = 0; a < TM; ++a)
#pragma unroll
                        for (int b = 0; b < TN; ++b) acc[a][b] = MS_FMA(qa[a], pb[b], acc[a][b]);
#endif
                }
                barrier(CLK_LOCAL_MEM_FENCE); /* Qs, Ps free for the next chunk */
            }
#if !MODEL_PER_POINT
            if (tid < BM) qnl[tid] = qn;
            barrier(CLK_LOCAL_MEM_FENCE);
#endif
            /* ---- weights of the tile into local memory ---- */
#pragma unroll
            for (int b = 0; b < TN; ++b) {
                const int j = ni + DGRP * b;
#if MODEL_PER_POINT
                const float pj = tile[j * STRIDE]; /* A */
#if GEMM_CUT
                const float lc = lcw[t * TILE + j];
#endif
#else
                const float pj = tile[j * STRIDE + K]; /* -L/2 |p'|² */
#endif
#pragma unroll
                for (int a = 0; a < TM; ++a) {
                    const int m = mi + MGRP * a;
#if MODEL_PER_POINT
                    const float arg = fmin(acc[a][b] + pj, 0.0f);
#if GEMM_MAXPASS
#if GEMM_CUT
                    if (!(arg - lc < -cutl)) mx[a] = fmax(mx[a], arg);
#else
                    mx[a] = fmax(mx[a], arg);
#endif
                    (void)m;
#else
#if MS_LOG2_SHIFT
                    const float sarg = arg + nshl[m];
#else
                    const float sarg = arg;
#endif
#if GEMM_CUT
                    const float e = arg - lc < -cutl ? 0.0f : MS_EXP2(sarg);
#else
                    const float e = MS_EXP2(sarg);
#endif
#endif /* GEMM_MAXPASS */
#else
                    const float arg = fmin(MS_FMA(MS_LOG2E, MS_FMA(-0.5f, qnl[m], acc[a][b]), pj), 0.0f);
#if GEMM_CUT
                    const float e = arg < -cutl ? 0.0f : MS_EXP2(arg);
#else
                    const float e = MS_EXP2(arg);
#endif
#endif
#if !GEMM_MAXPASS
                    Es[m * LDN + j] = e;
#endif
                }
            }
#if GEMM_MAXPASS
            continue; /* no sums (no barrier skipped: the loop's next chunk starts with one) */
#endif
            barrier(CLK_LOCAL_MEM_FENCE);
            /* ---- phase 2: weighted sums, E · P, dims ni + DGRP·c of modes mi + MGRP·a ---- */
            for (int j = 0; j < BN; ++j) {
                __global const float* rec = tile + j * STRIDE;
                float ea[TM];
#pragma unroll
                for (int a = 0; a < TM; ++a) ea[a] = Es[(mi + MGRP * a) * LDN + j];
#pragma unroll
                for (int c = 0; c < TK2; ++c) {
                    const int d = ni + DGRP * c;
                    if (MS_DIM_OK(d)) {
                        const float p = rec[POFF + d];
#if MODEL_PER_POINT
                        const float cw = rec[1 + K + d];
#endif
#pragma unroll
                        for (int a = 0; a < TM; ++a) {
                            S1[a][c] = MS_FMA(ea[a], p, S1[a][c]);
#if MODEL_PER_POINT
                            T0[a][c] = MS_FMA(ea[a], cw, T0[a][c]);
#endif
                        }
                    }
                }
#if !MODEL_PER_POINT
#pragma unroll
                for (int a = 0; a < TM; ++a) s0t[a] += ea[a];
#endif
            }
            /* ---- fold the tile: shift relative to each mode ---- */
#pragma unroll
            for (int a = 0; a < TM; ++a) {
                __global const float* y = modes + midx[mi + MGRP * a] * K;
#pragma unroll
                for (int c = 0; c < TK2; ++c) {
                    const int d = ni + DGRP * c;
                    if (MS_DIM_OK(d)) {
                        const float rmq = ref[d] - y[d];
#if MODEL_PER_POINT
                        const float tw = -2.0f * T0[a][c];
                        S0[a][c] += tw;
                        S1[a][c] = MS_FMA(rmq, tw, S1[a][c]);
                        T0[a][c] = 0.0f;
#else
                        S1[a][c] = MS_FMA(rmq, s0t[a], S1[a][c]);
#endif
                    }
                }
#if !MODEL_PER_POINT
                S0[a] += s0t[a];
                s0t[a] = 0.0f;
#endif
            }
        }

#if GEMM_MAXPASS
        for (int a = 0; a < TM; ++a) {
            const int slot = blk * BM + mi + MGRP * a;
            if (slot < count && mx[a] > MS_LOG2_WEIGHT_NONE)
                atomic_max(log2_shift + slot, ms_ordered_from_float(mx[a]));
        }
        continue; /* nothing else is written */
#endif
        /* ---- the unit's sums per mode: [S0 (NS0), S1 (K)] for combine_segments ---- */
        const int seg = u % segments;
#pragma unroll
        for (int a = 0; a < TM; ++a) {
            const int slot = blk * BM + mi + MGRP * a;
            if (slot >= count) continue;
            __global float* p = partial + ((long)seg * count + slot) * NACC;
#if !MODEL_PER_POINT
            if (ni == 0) p[0] = S0[a];
#endif
#pragma unroll
            for (int c = 0; c < TK2; ++c) {
                const int d = ni + DGRP * c;
                if (MS_DIM_OK(d)) {
#if MODEL_PER_POINT
                    p[d] = S0[a][c];
#endif
                    p[NS0 + d] = S1[a][c];
                }
            }
        }
    }
}
