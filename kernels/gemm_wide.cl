/* gemm_wide.cl: one mean-shift step (Alg. 3) at high k for one bandwidth shared by all points
 * (whitened data), as two fused matrix products whose dimension is tiled: any k, no private
 * array that grows with k (gemm_modes.cl keeps TM x k/DGRP sums per work-item in registers,
 * which spill beyond k ~ 256 and make the program text, and its build time, grow with k).
 *
 * Per work unit (block of BM = 64 modes, segment of point tiles; ms_unit) and per tile t of
 * BN = TILE points (the records of backends/gpu/tile_layout, relative to the tile's reference r_t):
 *   phase 1  exponents, an SGEMM over the k dims in chunks of GW_BK staged in local memory
 *            (the next chunk's values are loaded into registers while the current one is used):
 *              arg = L (q'·p' − ½|q'|²) − L/2 |p'|²,  q' = y − r_t,  e = exp2(min(arg, 0)),
 *            0 beyond the truncated kernel's cutoff (GEMM_CUT); padding records have arg = −1e30.
 *            The BM × BN weights go to local memory (transposed: [point][mode]), their row sums
 *            s0 to a small array.
 *   phase 2  the weighted sums E·P, dims in chunks of DC = 64·GW_TDH: each chunk's BM × DC sums
 *            in registers, the points' DC values staged GW_JC points at a time; after the tile,
 *            the chunk is added (with the fold (r_t − y) s0 of meanshift_device.h's ms_fold_*) to
 *            the unit's row of `partial`, which thus holds the running sums: a read-modify-write of
 *            BM × DC floats per BN × BM × DC products, by the work-item that owns them.
 * combine_segments (approx_mode_common.clh) then sums the segments and finishes the step, as for
 * gemm_modes.cl (same arguments, same `partial` layout: [S0, S1 (K)] per slot and segment).
 *
 * Mapping of the abstract machine: PPU = work-group of TAU = 256 (or 128) PUs; NI = TAU/16 PUs a
 * mode; PU (mi, ni) = work-item mi · NI + ni. Phase 1: modes 4 mi .. 4 mi + 3 against points
 * 4 ni + 4 NI h + (0..3), h < GW_TNH (a 4 × 4 GW_TNH register block); phase 2: the same modes and
 * dims 4 ni + 4 NI h + (0..3), h < GW_TDH, of the chunk. Each mode is served by NI PUs (a vPPU whose
 * n-loop, then whose k-loop, is split between them; each PU owns distinct outputs, so no
 * reduction), r = 4. Local memory is read as float4 (one 128-bit load of 4 modes, 4 points or 4
 * dims): at TAU = 256 5 loads of 128 bits a warp per 32 FMA instructions; at TAU = 128 (a 4 × 16
 * block) 5 per 64.
 *
 * Options (-D) besides those of approx_mode_common.clh (TAU = 256 or 128, TILE = 4 NI GW_TNH,
 * EXPANDED = 1, shared model): GW_BK (dims per phase-1 chunk, multiple of 4), GW_JC (points per
 * phase-2 stage), GW_TNH, GW_TDH (float4 groups a PU in each phase), GEMM_CUT (0/1), GW_DB (optional:
 * phase 1's stage double-buffered in the weights' array, default on where two buffers fit). The barriers sit in loops without unrolling (PoCL 3
 * miscompiled barriers in unrolled loops). */
#ifndef MEANSHIFT_APPROX_MODE_COMMON_CLH
#include "approx_mode_common.clh"
#endif

#if !defined(GW_BK) || !defined(GW_JC) || !defined(GW_TNH) || !defined(GW_TDH) || !defined(GEMM_CUT)
#error "gemm_wide: compile with -D GW_BK, GW_JC, GW_TNH, GW_TDH, GEMM_CUT"
#endif
#define GW_NI (TAU / 16)            /* work-items a mode: 16 (TAU 256) or 8 (TAU 128) */
#if (TAU != 256 && TAU != 128) || TILE != 4 * GW_NI * GW_TNH || MODEL_PER_POINT || !EXPANDED || (GW_BK % 4) != 0
#error "gemm_wide: TAU = 256 or 128, TILE = 4 (TAU/16) GW_TNH, shared model, expanded records, GW_BK % 4 = 0"
#endif

#define GW_BM 64
#define GW_BN TILE
#define GW_DC (4 * GW_NI * GW_TDH)
#define GW_NCHUNK ((K + GW_BK - 1) / GW_BK)
#define GW_QS4 (GW_BM / 4 + 1)     /* float4s a row of Qs: [d][mode], padded */
#define GW_PS4 (GW_BN / 4 + 1)     /* float4s a row of Ps: [d][point], padded */
#define GW_P24 (GW_DC / 4 + 1)     /* float4s a row of P2: [point][dim], padded */
#define GW_QPW (GW_BM * GW_BK / TAU) /* staged mode values a work-item */
#define GW_PPW (GW_BN * GW_BK / TAU) /* staged point values a work-item */
#define GW_P2W (GW_JC * GW_DC / TAU) /* phase-2 staged values a work-item */
#define GW_MAX(a, b) ((a) > (b) ? (a) : (b))
#define GW_DBS (GW_BK * (GW_QS4 + GW_PS4)) /* float4s of one phase-1 buffer */
#ifndef GW_DB /* 1: phase 1's stage double-buffered in et4 (one barrier a chunk), where two fit */
#define GW_DB (2 * GW_DBS <= GW_BN * GW_BM / 4)
#endif
#if GW_DB && 2 * GW_DBS > GW_BN * GW_BM / 4
#error "gemm_wide: GW_DB needs two phase-1 buffers within the weights' local array"
#endif
/* One region serves phase 1's staging, the row-sum partials and phase 2's staging. */
#define GW_STAGE4 GW_MAX(GW_MAX(GW_BK * (GW_QS4 + GW_PS4), GW_JC * GW_P24), GW_NI * GW_BM / 4)
#if (GW_BM * GW_BK) % TAU != 0 || (GW_BN * GW_BK) % TAU != 0 || (GW_JC * GW_DC) % TAU != 0 || (GW_BN % GW_JC) != 0
#error "gemm_wide: the staged chunks must split evenly over the work-items"
#endif

__kernel __attribute__((reqd_work_group_size(TAU, 1, 1)))
void gemm_wide(MS_APPROX_MODE_PARAMS,
               __global const float* lcw, /* unused (per-point model only) */
               const float cutl)          /* GEMM_CUT: L/2 · cutoff2 */
{
    __local float4 stage4[GW_STAGE4];
    __local float4 et4[GW_BN * (GW_BM / 4)]; /* the tile's weights, [point][mode] */
    __local float qnl[GW_BM];                /* |q'|² per mode of the tile */
    __local float s0l[GW_BM];                /* Σ_j e per mode of the tile */
    __local int midx[GW_BM];
    __local float* sf = (__local float*)stage4;
    __local float* Qs = sf;                          /* [d][m], row GW_QS4 float4s */
    __local float* Ps = sf + GW_BK * GW_QS4 * 4;     /* [d][j], row GW_PS4 float4s */
#if GW_DB
    /* Phase 1 double-buffered in the weights' space (free until the tile's exponents are done):
     * one barrier a chunk instead of two. */
    __local float4* const db4 = et4;
#else
    __local float4* Qs4 = stage4;
    __local float4* Ps4 = stage4 + GW_BK * GW_QS4;
#endif
    __local float* et = (__local float*)et4;
    (void)lcw;
    __global const float* recs = (__global const float*)records;
    const int tid = (int)get_local_id(0);
    const int mi = tid / GW_NI;
    const int ni = tid % GW_NI;

    for (int u = (int)get_group_id(0); u < nblocks * segments; u += (int)get_num_groups(0)) {
        int blk, t0, t1;
        ms_unit(u, segments, ntiles, &blk, &t0, &t1);
        const int seg = u % segments;
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous unit is done with midx */
        if (tid < GW_BM) midx[tid] = active[min(blk * GW_BM + tid, count - 1)];
        barrier(CLK_LOCAL_MEM_FENCE);
        float S0 = 0.0f; /* work-items tid < BM: mode tid's Σ e over the unit */

#pragma unroll 1
        for (int t = t0; t < t1; ++t) {
            __global const float* ref = centres + t * K;
            __global const float* tile = recs + (long)t * (TILE * STRIDE);
            /* ---- phase 1: exponents ---- */
            float acc[4][4 * GW_TNH];
            for (int a = 0; a < 4; ++a)
                for (int b = 0; b < 4 * GW_TNH; ++b) acc[a][b] = 0.0f;
            float qn = 0.0f; /* |q'|² of mode tid (tid < BM) */
            float qv[GW_QPW], pv[GW_PPW];
#pragma unroll
            for (int r = 0; r < GW_QPW; ++r) {
                const int i = tid + TAU * r, m = i / GW_BK, d = i % GW_BK;
                qv[r] = d < K ? modes[midx[m] * K + d] - ref[d] : 0.0f;
            }
#pragma unroll
            for (int r = 0; r < GW_PPW; ++r) {
                const int i = tid + TAU * r, j = i / GW_BK, d = i % GW_BK;
                pv[r] = d < K ? tile[j * STRIDE + d] : 0.0f;
            }
#if GW_DB
            barrier(CLK_LOCAL_MEM_FENCE); /* the previous tile is done with et4 */
            {
                __local float* Qs = (__local float*)db4, *Ps = Qs + GW_BK * GW_QS4 * 4;
#pragma unroll
                for (int r = 0; r < GW_QPW; ++r) {
                    const int i = tid + TAU * r;
                    Qs[(i % GW_BK) * (GW_QS4 * 4) + i / GW_BK] = qv[r];
                }
#pragma unroll
                for (int r = 0; r < GW_PPW; ++r) {
                    const int i = tid + TAU * r;
                    Ps[(i % GW_BK) * (GW_PS4 * 4) + i / GW_BK] = pv[r];
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll 1
            for (int ch = 0; ch < GW_NCHUNK; ++ch) {
                __local float4* Qs4 = db4 + (ch & 1) * GW_DBS;
                __local float4* Ps4 = Qs4 + GW_BK * GW_QS4;
                __local float* Qs = (__local float*)Qs4;
#else
#pragma unroll 1
            for (int ch = 0; ch < GW_NCHUNK; ++ch) {
                barrier(CLK_LOCAL_MEM_FENCE); /* the previous chunk (or tile) is done with Qs, Ps */
#pragma unroll
                for (int r = 0; r < GW_QPW; ++r) {
                    const int i = tid + TAU * r;
                    Qs[(i % GW_BK) * (GW_QS4 * 4) + i / GW_BK] = qv[r];
                }
#pragma unroll
                for (int r = 0; r < GW_PPW; ++r) {
                    const int i = tid + TAU * r;
                    Ps[(i % GW_BK) * (GW_PS4 * 4) + i / GW_BK] = pv[r];
                }
                barrier(CLK_LOCAL_MEM_FENCE);
#endif
                if (ch + 1 < GW_NCHUNK) { /* the next chunk's loads, in flight during the products */
                    const int d0 = (ch + 1) * GW_BK;
#pragma unroll
                    for (int r = 0; r < GW_QPW; ++r) {
                        const int i = tid + TAU * r, m = i / GW_BK, dd = d0 + i % GW_BK;
                        qv[r] = dd < K ? modes[midx[m] * K + dd] - ref[dd] : 0.0f;
                    }
#pragma unroll
                    for (int r = 0; r < GW_PPW; ++r) {
                        const int i = tid + TAU * r, j = i / GW_BK, dd = d0 + i % GW_BK;
                        pv[r] = dd < K ? tile[j * STRIDE + dd] : 0.0f;
                    }
                }
                if (tid < GW_BM)
                    for (int d = 0; d < GW_BK; ++d) {
                        const float q = Qs[d * (GW_QS4 * 4) + tid];
                        qn = MS_FMA(q, q, qn);
                    }
#pragma unroll 4
                for (int d = 0; d < GW_BK; ++d) {
                    const float4 q4 = Qs4[d * GW_QS4 + mi];
                    const float qa[4] = {q4.x, q4.y, q4.z, q4.w};
#pragma unroll
                    for (int h = 0; h < GW_TNH; ++h) {
                        const float4 p4 = Ps4[d * GW_PS4 + GW_NI * h + ni];
#pragma unroll
                        for (int a = 0; a < 4; ++a) {
                            acc[a][4 * h + 0] = MS_FMA(qa[a], p4.x, acc[a][4 * h + 0]);
                            acc[a][4 * h + 1] = MS_FMA(qa[a], p4.y, acc[a][4 * h + 1]);
                            acc[a][4 * h + 2] = MS_FMA(qa[a], p4.z, acc[a][4 * h + 2]);
                            acc[a][4 * h + 3] = MS_FMA(qa[a], p4.w, acc[a][4 * h + 3]);
                        }
                    }
                }
#if GW_DB
                if (ch + 1 < GW_NCHUNK) { /* into the other buffer, whose last readers passed the barrier below */
                    __local float* Qn = (__local float*)(db4 + ((ch + 1) & 1) * GW_DBS), *Pn = Qn + GW_BK * GW_QS4 * 4;
#pragma unroll
                    for (int r = 0; r < GW_QPW; ++r) {
                        const int i = tid + TAU * r;
                        Qn[(i % GW_BK) * (GW_QS4 * 4) + i / GW_BK] = qv[r];
                    }
#pragma unroll
                    for (int r = 0; r < GW_PPW; ++r) {
                        const int i = tid + TAU * r;
                        Pn[(i % GW_BK) * (GW_PS4 * 4) + i / GW_BK] = pv[r];
                    }
                }
                barrier(CLK_LOCAL_MEM_FENCE);
#endif
            }
            if (tid < GW_BM) qnl[tid] = qn;
            barrier(CLK_LOCAL_MEM_FENCE); /* qnl written; Qs, Ps free */
            /* ---- weights of the tile into local memory, row-sum partials into the stage ---- */
            float rs[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int b = 0; b < 4 * GW_TNH; ++b) {
                const int j = 4 * GW_NI * (b / 4) + 4 * ni + (b % 4);
                const float pj = tile[j * STRIDE + K]; /* -L/2 |p'|² */
                float e[4];
#pragma unroll
                for (int a = 0; a < 4; ++a) {
                    const float arg = fmin(MS_FMA(MS_LOG2E, MS_FMA(-0.5f, qnl[4 * mi + a], acc[a][b]), pj), 0.0f);
#if GEMM_CUT
                    e[a] = arg < -cutl ? 0.0f : MS_EXP2(arg);
#else
                    e[a] = MS_EXP2(arg);
#endif
                    rs[a] += e[a];
                }
                et4[j * (GW_BM / 4) + mi] = (float4)(e[0], e[1], e[2], e[3]);
            }
#pragma unroll
            for (int a = 0; a < 4; ++a) sf[ni * GW_BM + 4 * mi + a] = rs[a];
            barrier(CLK_LOCAL_MEM_FENCE);
            if (tid < GW_BM) {
                float s = 0.0f;
                for (int i = 0; i < GW_NI; ++i) s += sf[i * GW_BM + tid];
                s0l[tid] = s;
                S0 += s;
            }
            /* ---- phase 2: weighted sums E·P, dims in chunks of DC ---- */
#pragma unroll 1
            for (int dc0 = 0; dc0 < K; dc0 += GW_DC) {
                float acc2[4][4 * GW_TDH];
                for (int a = 0; a < 4; ++a)
                    for (int c = 0; c < 4 * GW_TDH; ++c) acc2[a][c] = 0.0f;
                float pw[GW_P2W];
#pragma unroll
                for (int r = 0; r < GW_P2W; ++r) {
                    const int i = tid + TAU * r, jj = i / GW_DC, dd = dc0 + i % GW_DC;
                    pw[r] = dd < K ? tile[jj * STRIDE + dd] : 0.0f;
                }
#pragma unroll 1
                for (int j0 = 0; j0 < GW_BN; j0 += GW_JC) {
                    barrier(CLK_LOCAL_MEM_FENCE); /* the stage is free (row sums read, or last stage used) */
#pragma unroll
                    for (int r = 0; r < GW_P2W; ++r) {
                        const int i = tid + TAU * r;
                        sf[(i / GW_DC) * (GW_P24 * 4) + i % GW_DC] = pw[r];
                    }
                    barrier(CLK_LOCAL_MEM_FENCE);
                    if (j0 + GW_JC < GW_BN) {
#pragma unroll
                        for (int r = 0; r < GW_P2W; ++r) {
                            const int i = tid + TAU * r, jj = j0 + GW_JC + i / GW_DC, dd = dc0 + i % GW_DC;
                            pw[r] = dd < K ? tile[jj * STRIDE + dd] : 0.0f;
                        }
                    }
#pragma unroll 4
                    for (int jj = 0; jj < GW_JC; ++jj) {
                        const float4 e4 = et4[(j0 + jj) * (GW_BM / 4) + mi];
                        const float ea[4] = {e4.x, e4.y, e4.z, e4.w};
#pragma unroll
                        for (int h = 0; h < GW_TDH; ++h) {
                            const float4 p4 = stage4[jj * GW_P24 + GW_NI * h + ni];
#pragma unroll
                            for (int a = 0; a < 4; ++a) {
                                acc2[a][4 * h + 0] = MS_FMA(ea[a], p4.x, acc2[a][4 * h + 0]);
                                acc2[a][4 * h + 1] = MS_FMA(ea[a], p4.y, acc2[a][4 * h + 1]);
                                acc2[a][4 * h + 2] = MS_FMA(ea[a], p4.z, acc2[a][4 * h + 2]);
                                acc2[a][4 * h + 3] = MS_FMA(ea[a], p4.w, acc2[a][4 * h + 3]);
                            }
                        }
                    }
                }
                /* ---- the chunk into the unit's running sums, folded relative to each mode ---- */
#pragma unroll
                for (int a = 0; a < 4; ++a) {
                    const int m = 4 * mi + a, slot = blk * GW_BM + m;
                    if (slot >= count) continue;
                    __global const float* y = modes + midx[m] * K;
                    __global float* p = partial + ((long)seg * count + slot) * NACC + NS0;
                    const float s0 = s0l[m];
#pragma unroll
                    for (int c = 0; c < 4 * GW_TDH; ++c) {
                        const int d = dc0 + 4 * GW_NI * (c / 4) + 4 * ni + (c % 4);
                        if (d < K) {
                            const float v = MS_FMA(ref[d] - y[d], s0, acc2[a][c]);
                            p[d] = t == t0 ? v : p[d] + v;
                        }
                    }
                }
            }
        }
        /* ---- the unit's S0 per mode (S1 is already in `partial`) ---- */
        if (tid < GW_BM && blk * GW_BM + tid < count) {
            __global float* p = partial + ((long)seg * count + blk * GW_BM + tid) * NACC;
            p[0] = S0;
            if (t0 == t1)
                for (int d = 0; d < K; ++d) p[NS0 + d] = 0.0f;
        }
    }
}
