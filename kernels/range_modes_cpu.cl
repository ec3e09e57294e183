/* range_modes_cpu.cl: the truncated kernel on CPU-class devices with the modes in the vector
 * lanes (built with -D MS_CPU_RANGE_BLOCK=1; range_modes.cl's range_modes_cpu, points in the
 * lanes, is left out then). One work-item takes MS_CPU_RANGE_MODES consecutive slots of the
 * active list (Morton order: a compact block), MS_CPU_VW modes a vector, forms the union box of
 * their neighbourhoods (as ms_group_box, without local memory) and visits every candidate point
 * of that box once, its coordinates broadcast against all the block's modes: no lane idles at the
 * end of a short range (a 6-dim grid at k = 16 has rows of one or two points), the point is read
 * once for the whole block, and no horizontal sum is needed per mode (as the openmp backend's
 * blocks of modes, backends/openmp/simd_kernel_impl.hpp). Same pairs and the same direct-form
 * exponent as ms_range_pairs (meanshift_ranges.h); the end of the step is ms_range_end. The points
 * (and precisions) are stored as for range_modes_cpu: dim d of point i at d · MS_CPU_ROW(n) + i. */
#if defined(MS_CPU_VW) && MS_CPU_RANGE_BLOCK
#if TAU != 1 || !defined(MS_CPU_RANGE_MODES) || (MS_CPU_RANGE_MODES % MS_CPU_VW) != 0
#error "range_modes_cpu (modes in lanes): TAU = 1, MS_CPU_RANGE_MODES a multiple of MS_CPU_VW"
#endif
#define MS_BV (MS_CPU_RANGE_MODES / MS_CPU_VW) /* vectors of modes a work-item holds */
#define MS_UNROLL_BV _Pragma("unroll")
#define MS_BROW(n) ((((n) + MS_CPU_VW - 1) / MS_CPU_VW + 1) * MS_CPU_VW)

/* lane l of vector v (private arrays: the vector types have no dynamic lane index in OpenCL C) */
typedef union {
    msv v;
    float s[MS_CPU_VW];
} ms_lanes;

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void range_modes_cpu(__global const float* points, __global const float* precision, __global const float* log_weight,
                     const int n, __global const int* start, __global const int* gi, __global const float* gf,
                     const int g, const float cut2, __global float* modes, __global const int* active,
                     const int count, __global long* group_pairs, __global float* sums, MS_FINISH_PARAMS)
{
    const int nrow = MS_BROW(n);
    const int grp = (int)get_group_id(0);
    const int s0_ = grp * MS_CPU_RANGE_MODES;
    const int valid = min(count - s0_, MS_CPU_RANGE_MODES);
    /* the block's modes, dim by dim, lanes = modes (slots past the list repeat its last mode) */
    msv Y[MS_BV][K];
#if MODEL_PER_POINT
    msv NSH[MS_BV];
#endif
    int lo[MS_MAX_GRID_DIMS], hi[MS_MAX_GRID_DIMS];
    for (int q = 0; q < g; ++q) {
        lo[q] = 0x7fffffff;
        hi[q] = -1;
    }
    MS_UNROLL_BV
    for (int v = 0; v < MS_BV; ++v) {
        ms_lanes yl[K];
#if MODEL_PER_POINT
        ms_lanes nl;
#endif
        for (int l = 0; l < MS_CPU_VW; ++l) {
            const int slot = min(s0_ + v * MS_CPU_VW + l, count - 1);
            __global const float* yg = modes + active[slot] * K;
            for (int d = 0; d < K; ++d) yl[d].s[l] = yg[d];
#if MODEL_PER_POINT
            nl.s[l] = MS_RANGE_NSH(slot);
#endif
            for (int q = 0; q < g; ++q) { /* union box, as ms_group_box */
                const float c = yg[gi[q]], r = gf[2 * g + q];
                lo[q] = min(lo[q], ms_grid_coord(c - r, gf[q], gf[g + q], gi[g + q]));
                hi[q] = max(hi[q], ms_grid_coord(c + r, gf[q], gf[g + q], gi[g + q]));
            }
        }
        MS_UNROLL_K
        for (int d = 0; d < K; ++d) Y[v][d] = yl[d].v;
#if MODEL_PER_POINT
        NSH[v] = nl.v;
#endif
    }
    msv S0[MS_BV][NS0], S1[MS_BV][K];
    MS_UNROLL_BV
    for (int v = 0; v < MS_BV; ++v) {
        MS_UNROLL_K
        for (int d = 0; d < NS0; ++d) S0[v][d] = (msv)(0.0f);
        MS_UNROLL_K
        for (int d = 0; d < K; ++d) S1[v][d] = (msv)(0.0f);
    }
    int rows = 1;
    for (int q = 0; q < g - 1; ++q) rows *= hi[q] - lo[q] + 1;
    long pairs = 0;
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
        for (int i = b; i < e; ++i) {
            float x[K];
            MS_UNROLL_K
            for (int d = 0; d < K; ++d) x[d] = points[d * nrow + i];
#if MODEL_PER_POINT
            float w[K];
            MS_UNROLL_K
            for (int d = 0; d < K; ++d) w[d] = precision[d * nrow + i];
            const float lw = MS_LOG2E * log_weight[i];
#endif
            MS_UNROLL_BV
            for (int v = 0; v < MS_BV; ++v) {
                msv d2 = (msv)(0.0f);
                MS_UNROLL_K
                for (int d = 0; d < K; ++d) {
                    const msv t = (msv)(x[d]) - Y[v][d];
#if MODEL_PER_POINT
                    d2 = MS_VFMA(w[d] * t, t, d2);
#else
                    d2 = MS_VFMA(t, t, d2);
#endif
                }
#if MODEL_PER_POINT
                msv ew = ms_cpu_weight(d2, NSH[v] + lw);
#else
                msv ew = ms_cpu_weight_unit(d2);
#endif
                ew = select((msv)(0.0f), ew, d2 <= (msv)(cut2));
                MS_UNROLL_K
                for (int d = 0; d < K; ++d) {
                    const msv t = (msv)(x[d]) - Y[v][d];
#if MODEL_PER_POINT
                    const msv ewd = ew * w[d];
                    S0[v][d] += ewd;
                    S1[v][d] = MS_VFMA(ewd, t, S1[v][d]);
#else
                    S1[v][d] = MS_VFMA(ew, t, S1[v][d]);
#endif
                }
#if !MODEL_PER_POINT
                S0[v][0] += ew;
#endif
            }
        }
    }
    group_pairs[grp] = pairs * valid;
    MS_UNROLL_BV
    for (int v = 0; v < MS_BV; ++v) {
        ms_lanes a0[NS0], a1[K];
        for (int d = 0; d < NS0; ++d) a0[d].v = S0[v][d];
        for (int d = 0; d < K; ++d) a1[d].v = S1[v][d];
        for (int l = 0; l < MS_CPU_VW; ++l) {
            const int slot = s0_ + v * MS_CPU_VW + l;
            if (slot >= count) break;
            float s0[NS0], s1[K];
            for (int d = 0; d < NS0; ++d) s0[d] = a0[d].s[l];
            for (int d = 0; d < K; ++d) s1[d] = a1[d].s[l];
            ms_range_end(sums, modes, active[slot], slot, s0, s1, MS_FINISH_ARGS);
        }
    }
}
#endif /* MS_CPU_VW && MS_CPU_RANGE_BLOCK */
