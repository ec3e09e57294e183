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
        ms_load_modes(&s, active, count, blk, vppu);
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
