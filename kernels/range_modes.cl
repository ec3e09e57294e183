/* range_modes.cl: the truncated kernel over the cell grid's block-sparse ranges in OpenCL C 1.2,
 * the same step as the CUDA range kernels: the candidate loop is ms_range_sums of
 * meanshift_ranges.h (one source); the vPPU reduction (ms_reduce_modes) and the end of the
 * step (ms_finish_mode) are approx_mode_common.clh's, built with MODES_PER_PU = 1.
 * A work-group takes VPPUS consecutive slots of the active list (the host keeps that list in the
 * driver's Morton order, so a group's modes are close and its box small); the host launches one
 * work-group per block. */
#ifndef MEANSHIFT_APPROX_MODE_COMMON_CLH
#include "approx_mode_common.clh"
#endif
#ifndef MEANSHIFT_RANGES_H
#include "meanshift_ranges.h"
#endif
#if MODES_PER_PU != 1
#error "range_modes: build with MODES_PER_PU = 1"
#endif

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
        ms_range_sums(points, precision, log_weight, MODEL_PER_POINT, n, start, gi, gf, g, box, yg, valid, lid, TAU,
                      lane, F_LOAD, K, cut2, y, t, s.S0[0], s.S1[0]);
        if (lid == 0) group_pairs[blk] = ms_box_points(box, gi, start, g, n) * min(VPPUS, count - blk * VPPUS);
#if F_LOAD > 1
        ms_reduce_modes(&s, red, lid, lane);
#endif
        if (valid && lane == 0) ms_finish_mode(modes, j, slot, s.S0[0], s.S1[0], MS_FINISH_ARGS);
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
                      MS_FINISH_PARAMS)
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
    ms_range_sums(points, precision, log_weight, MODEL_PER_POINT, n, start, gi, gf, g, box, yg, valid, lid, TAU, lane,
                  W_LANES, K, cut2, y, t, S0, S1);
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
        ms_finish_mode(modes, j, slot, S0, S1, MS_FINISH_ARGS);
    }
}
#endif /* MS_RANGE_WIDE */
