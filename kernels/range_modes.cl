/* range_modes.cl: the truncated kernel over the cell grid's block-sparse ranges in OpenCL C 1.2,
 * the same step as the CUDA range kernels: the candidate loop is ms_range_sums of
 * meanshift_ranges.h (one source); the vPPU reduction (ms_reduce_modes) and the end of the
 * step (ms_finish_mode) are approx_mode_common.clh's, built with MODES_PER_PU = 1.
 * A work-group takes VPPUS consecutive slots of the active list (the host keeps that list in the
 * driver's Morton order, so a group's modes are close and its box small); the host launches one
 * work-group per block. With MS_LOG2_SHIFT (per-point weights beyond float32's range) each mode's
 * log2 weights are shifted by log2_shift[slot] (approx_mode_common.clh), which the host's max
 * pass (log2_weight_max) has filled; the FMA that forms L c_i + nsh costs nothing per pair. */
#ifndef MEANSHIFT_APPROX_MODE_COMMON_CLH
#include "approx_mode_common.clh"
#endif
#ifndef MEANSHIFT_RANGES_H
#include "meanshift_ranges.h"
#endif
#if MODES_PER_PU != 1
#error "range_modes: build with MODES_PER_PU = 1"
#endif

/* minus the log2 shift of slot `slot` (0 without MS_LOG2_SHIFT) */
#if MS_LOG2_SHIFT
#define MS_RANGE_NSH(slot) (-ms_log2_shift(log2_shift[(slot)]))
#else
#define MS_RANGE_NSH(slot) 0.0f
#endif

/* The end of slot `slot` (mode j): with `sums` (Binding::accumulate) its S0, S1 (relative to the
 * mode) go to sums[slot · NACC ..], the modes and the report untouched; else ms_finish_mode. */
inline void ms_range_end(__global float* sums, __global float* modes, int j, int slot, const float* S0,
                         const float* S1, MS_FINISH_PARAMS)
{
    if (sums) {
        for (int d = 0; d < NS0; ++d) sums[slot * NACC + d] = S0[d];
        for (int d = 0; d < K; ++d) sums[slot * NACC + NS0 + d] = S1[d];
    } else {
        ms_finish_mode(modes, j, slot, S0, S1, MS_FINISH_ARGS);
    }
}

__kernel __attribute__((reqd_work_group_size(TAU, 1, 1)))
void range_modes(__global const float* points,     /* n · K, sorted by cell */
                 __global const float* precision,  /* n · K (per-point model) */
                 __global const float* log_weight, /* n (per-point model), natural log */
                 const int n,
                 __global const int* start,        /* prod(cells) + 1 (g >= 1) */
                 __global const int* gi,           /* [dims, cells] */
                 __global const float* gf,         /* [origin, side, radius] */
                 const int g,                      /* 0: one range [0, n) */
                 const float cut2,
                 __global float* modes,            /* m · K positions, updated in place */
                 __global const int* active,       /* count slots */
                 const int count,
                 __global long* group_pairs,       /* per work-group: candidate pairs (box points x modes) */
                 __global float* sums,             /* count · NACC (accumulate), or null: finish the step */
                 MS_FINISH_PARAMS)
{
    __local int box[2 * MS_MAX_GRID_DIMS];
#if F_LOAD > 1
    __local float red[NACC * TAU];
#endif
    const int lid = (int)get_local_id(0);
    const int vppu = lid / F_VPPU;
    const int lane = lid % F_VPPU;
    /* One block per work-group: the barriers of ms_range_sums stay out of any loop and branch
     * (PoCL 3 hung or wrote out of bounds with a barrier under a uniform branch here). */
    {
        const int blk = (int)get_group_id(0);
        const int slot = blk * VPPUS + vppu;
        const int valid = slot < count;
        const int j = active[valid ? slot : count - 1];
        __global const float* yg = modes + j * K;
        ms_modes s;
        float y[K], t[K];
        MS_UNROLL_K
        for (int d = 0; d < K; ++d) {
            y[d] = yg[d];
            s.S1[0][d] = 0.0f;
        }
        MS_UNROLL_K
        for (int d = 0; d < NS0; ++d) s.S0[0][d] = 0.0f;
        ms_range_sums(points, precision, log_weight, MODEL_PER_POINT, MS_PROFILE, n, start, gi, gf, g, box, yg, valid, lid, TAU,
                      lane, F_LOAD, K, cut2, MS_RANGE_NSH(valid ? slot : count - 1), y, t, s.S0[0], s.S1[0]);
        if (lid == 0) group_pairs[blk] = ms_box_points(box, gi, start, g, n) * min(VPPUS, count - blk * VPPUS);
#if F_LOAD > 1
        ms_reduce_modes(&s, red, lid, lane);
#endif
        if (valid && lane == 0) ms_range_end(sums, modes, j, slot, s.S0[0], s.S1[0], MS_FINISH_ARGS);
    }
}

#if defined(MS_RANGE_WIDE)
/* The same step with 32 PUs per mode (f_vppu = f_load = 32), built into the same program: the
 * host runs it when the modes are too few to fill the device (bin seeds, the last active modes),
 * so that the load factor spreads each mode's candidates over a warp's worth of PUs. The vPPU
 * reduction is written out straight (no loop around a barrier). Needs TAU % 32 == 0. */
#define W_LANES 32
#define W_VPPUS (TAU / W_LANES)
#define MS_W_STEP(s)                                                                       \
    if (lane < (s)) {                                                                      \
        for (int c_ = 0; c_ < NACC; ++c_) wred[c_ * TAU + lid] += wred[c_ * TAU + lid + (s)]; \
    }                                                                                      \
    barrier(CLK_LOCAL_MEM_FENCE)

__kernel __attribute__((reqd_work_group_size(TAU, 1, 1)))
void range_modes_wide(__global const float* points, __global const float* precision,
                      __global const float* log_weight, const int n, __global const int* start,
                      __global const int* gi, __global const float* gf, const int g, const float cut2,
                      __global float* modes, __global const int* active, const int count, __global long* group_pairs,
                      __global float* sums, MS_FINISH_PARAMS)
{
    __local int box[2 * MS_MAX_GRID_DIMS];
    __local float wred[NACC * TAU];
    const int lid = (int)get_local_id(0);
    const int lane = lid % W_LANES;
    const int slot = (int)get_group_id(0) * W_VPPUS + lid / W_LANES;
    const int valid = slot < count;
    const int j = active[valid ? slot : count - 1];
    __global const float* yg = modes + j * K;
    float y[K], t[K], S0[NS0], S1[K];
    MS_UNROLL_K
    for (int d = 0; d < K; ++d) {
        y[d] = yg[d];
        S1[d] = 0.0f;
    }
    MS_UNROLL_K
    for (int d = 0; d < NS0; ++d) S0[d] = 0.0f;
    ms_range_sums(points, precision, log_weight, MODEL_PER_POINT, MS_PROFILE, n, start, gi, gf, g, box, yg, valid, lid, TAU, lane,
                  W_LANES, K, cut2, MS_RANGE_NSH(valid ? slot : count - 1), y, t, S0, S1);
    if (lid == 0)
        group_pairs[get_group_id(0)] = ms_box_points(box, gi, start, g, n) * min(W_VPPUS, count - (int)get_group_id(0) * W_VPPUS);
    for (int d = 0; d < NS0; ++d) wred[d * TAU + lid] = S0[d];
    for (int d = 0; d < K; ++d) wred[(NS0 + d) * TAU + lid] = S1[d];
    barrier(CLK_LOCAL_MEM_FENCE);
    MS_W_STEP(16);
    MS_W_STEP(8);
    MS_W_STEP(4);
    MS_W_STEP(2);
    MS_W_STEP(1);
    if (valid && lane == 0) {
        for (int d = 0; d < NS0; ++d) S0[d] = wred[d * TAU + lid];
        for (int d = 0; d < K; ++d) S1[d] = wred[(NS0 + d) * TAU + lid];
        ms_range_end(sums, modes, j, slot, S0, S1, MS_FINISH_ARGS);
    }
}
#endif /* MS_RANGE_WIDE */

#if defined(MS_CPU_VW) && !MS_CPU_RANGE_BLOCK /* MS_CPU_RANGE_BLOCK: range_modes_cpu.cl's */
/* ---- CPU-class devices: range_modes_cpu -------------------------------------------
 * The truncated kernel without local memory or barriers: one work-item per group walks
 * MS_CPU_RANGE_MODES consecutive slots, each mode with its own box (so fewer candidates than the
 * group's union box), and visits the candidates MS_CPU_VW at a time in float vectors. The host
 * stores the points (and precisions) transposed, dim d of point i at d · MS_CPU_ROW(n) + i, rows
 * padded by at least MS_CPU_VW so that the last vector of a range stays inside the buffer; lanes
 * past the range's end and pairs beyond the cutoff get weight 0 (select). Same pairs, same
 * direct-form exponent as ms_range_pairs; the end of the step is ms_finish_mode. Needs TAU = 1
 * and the CPU vector helpers of approx_mode_common.clh (msv, ms_cpu_exp2, ms_cpu_hsum). */
#if TAU != 1 || !defined(MS_CPU_RANGE_MODES)
#error "range_modes_cpu: TAU = 1 and MS_CPU_RANGE_MODES"
#endif
#define MS_RV(x) MS_VLOAD(0, (x))
#if MS_CPU_VW == 16
#define MS_RLANES (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
#elif MS_CPU_VW == 8
#define MS_RLANES (int8)(0, 1, 2, 3, 4, 5, 6, 7)
#else
#define MS_RLANES (int4)(0, 1, 2, 3)
#endif
#define MS_CPU_ROW(n) ((((n) + MS_CPU_VW - 1) / MS_CPU_VW + 1) * MS_CPU_VW)

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void range_modes_cpu(__global const float* points, __global const float* precision, __global const float* log_weight,
                     const int n, __global const int* start, __global const int* gi, __global const float* gf,
                     const int g, const float cut2, __global float* modes, __global const int* active,
                     const int count, __global long* group_pairs, __global float* sums, MS_FINISH_PARAMS)
{
    const int nrow = MS_CPU_ROW(n);
    const int grp = (int)get_group_id(0);
    const int s_end = min(count, (grp + 1) * MS_CPU_RANGE_MODES);
    long pairs = 0;
    for (int slot = grp * MS_CPU_RANGE_MODES; slot < s_end; ++slot) {
        const int j = active[slot];
        __global float* yg = modes + j * K;
        float y[K];
        MS_UNROLL_K
        for (int d = 0; d < K; ++d) y[d] = yg[d];
        const msv nsh = (msv)(MS_RANGE_NSH(slot));
        /* this mode's box of cells (as ms_group_box for one mode) */
        int lo[MS_MAX_GRID_DIMS], hi[MS_MAX_GRID_DIMS];
        int rows = 1;
        for (int q = 0; q < g; ++q) {
            const float v = y[gi[q]], r = gf[2 * g + q];
            lo[q] = ms_grid_coord(v - r, gf[q], gf[g + q], gi[g + q]);
            hi[q] = ms_grid_coord(v + r, gf[q], gf[g + q], gi[g + q]);
            if (q < g - 1) rows *= hi[q] - lo[q] + 1;
        }
        msv S0[NS0], S1[K];
        MS_UNROLL_K
        for (int d = 0; d < NS0; ++d) S0[d] = (msv)(0.0f);
        MS_UNROLL_K
        for (int d = 0; d < K; ++d) S1[d] = (msv)(0.0f);
        for (int row = 0; row < rows; ++row) {
            int b = 0, e = n;
            if (g > 0) { /* as ms_row_range: mixed radix over the first g - 1 dims, last fastest */
                long cell = 0, mul = 1;
                int rest = row;
                for (int q = g - 2; q >= 0; --q) {
                    const int ext = hi[q] - lo[q] + 1;
                    const int c = lo[q] + rest % ext;
                    rest /= ext;
                    mul *= gi[g + q + 1];
                    cell += (long)c * mul;
                }
                b = start[cell + lo[g - 1]];
                e = start[cell + hi[g - 1] + 1];
            }
            pairs += e - b;
            for (int i0 = b; i0 < e; i0 += MS_CPU_VW) {
                const msvi inside = ((msvi)(i0) + MS_RLANES) < (msvi)(e);
                msv d2 = (msv)(0.0f);
                MS_UNROLL_K
                for (int d = 0; d < K; ++d) {
                    const msv t = MS_RV(points + d * nrow + i0) - y[d];
#if MODEL_PER_POINT
                    d2 = MS_VFMA(MS_RV(precision + d * nrow + i0) * t, t, d2);
#else
                    d2 = MS_VFMA(t, t, d2);
#endif
                }
#if MODEL_PER_POINT
                msv ew = ms_cpu_weight(d2, MS_VFMA((msv)(MS_LOG2E), MS_RV(log_weight + i0), nsh));
#else
                msv ew = ms_cpu_weight_unit(d2);
#endif
                ew = select((msv)(0.0f), ew, inside & (d2 <= (msv)(cut2)));
                MS_UNROLL_K
                for (int d = 0; d < K; ++d) {
                    const msv t = MS_RV(points + d * nrow + i0) - y[d];
#if MODEL_PER_POINT
                    const msv ewd = ew * MS_RV(precision + d * nrow + i0);
                    S0[d] += ewd;
                    S1[d] = MS_VFMA(ewd, t, S1[d]);
#else
                    S1[d] = MS_VFMA(ew, t, S1[d]);
#endif
                }
#if !MODEL_PER_POINT
                S0[0] += ew;
#endif
            }
        }
        float s0[NS0], s1[K];
        MS_UNROLL_K
        for (int d = 0; d < NS0; ++d) s0[d] = ms_cpu_hsum(S0[d]);
        MS_UNROLL_K
        for (int d = 0; d < K; ++d) s1[d] = ms_cpu_hsum(S1[d]);
        ms_range_end(sums, modes, j, slot, s0, s1, MS_FINISH_ARGS);
    }
    group_pairs[grp] = pairs;
}
#endif /* MS_CPU_VW */
