/* approx_modes_preload.cl: Alg. 7 (approxModes with preloading, Malysiak & Handmann) in
 * OpenCL C 1.2. The work-group stages one tile (TILE = preload_size points) at a time in local
 * memory, all its PUs copying in parallel; synchronisation s1 (barrier) makes the batch visible,
 * the vPPUs then run Alg. 3 lines 11-16 on it from local memory, and s2 (barrier) keeps the batch
 * until every PU is done with it. The vPPU-local reduction (Alg. 7 lines 12-13) is done once
 * after the last batch rather than after every batch: the partial sums are additive, so the
 * result is the same with fewer barriers. Options and mapping: approx_mode_common.clh. */
#ifndef MEANSHIFT_APPROX_MODE_COMMON_CLH
#include "approx_mode_common.clh"
#endif

__kernel __attribute__((reqd_work_group_size(TAU, 1, 1)))
void approx_modes_preload(MS_APPROX_MODE_PARAMS)
{
    const int lid = (int)get_local_id(0);
    const int vppu = lid / F_VPPU;
    const int lane = lid % F_VPPU;
    __local float4 batch[TILE * STRIDE / 4];
#if F_LOAD > 1
    __local float red[NACC * TAU];
#endif
    for (int u = (int)get_group_id(0); u < nblocks * segments; u += (int)get_num_groups(0)) {
        int blk, t0, t1;
        ms_unit(u, segments, ntiles, &blk, &t0, &t1);
        ms_modes s;
        ms_load_modes(&s, active, count, blk, vppu, log2_shift);
        for (int t = t0; t < t1; ++t) {
            /* preload batch t (coalesced: consecutive PUs copy consecutive float4s) */
            __global const float4* src = records + t * (TILE * STRIDE / 4);
            for (int v = lid; v < TILE * STRIDE / 4; v += TAU) batch[v] = src[v];
            barrier(CLK_LOCAL_MEM_FENCE); /* s1 */
            if (lane < F_LOAD) {
                ms_begin_tile(&s, modes, centres + t * K, radii[t]);
                MS_VISIT_TILE(&s, batch, lane);
                ms_end_tile(&s);
            }
            barrier(CLK_LOCAL_MEM_FENCE); /* s2 */
        }
#if F_LOAD > 1
        ms_reduce_modes(&s, red, lid, lane);
#endif
        ms_store_unit(&s, modes, partial, count, segments, u, blk, vppu, lane, MS_FINISH_ARGS);
    }
}
