/* meanshift_ranges.h: the truncated kernel's step over block-sparse point ranges, one source for
 * the CUDA (backends/cuda/range_kernel.cu) and OpenCL (kernels/range_modes.cl) kernels. Same
 * language subset as meanshift_device.h (no templates, no std::, MS_* macros).
 *
 * The skeleton's cell grid (meanshift::CellGrid, neighbours.hpp) sorts the prepared points by
 * cell; the cells of one row of a box along the last grid dim are consecutive, so a row is one
 * contiguous range of points. A work-group (PPU) takes a block of consecutive modes (the driver
 * hands them over in Morton order, so the block is compact), forms the union box of its modes'
 * neighbourhoods (the cells that [y - radius, y + radius] touches in every grid dim) in local
 * memory, and its PUs loop over the rows of that box: Alg. 3's loop over points, restricted to
 * the candidates (block-sparse ranges, as KeOps does). With no grid (g = 0) the one range is
 * [0, n): the truncated kernel by brute force. Within a vPPU the first f_load PUs share each range
 * (PU lane visits lane, lane + f_load, ...); the caller reduces the vPPU's sums (Alg. 3 lines
 * 17-18) and finishes the mode.
 *
 * Per pair, direct form (accurate wherever the data lie; the candidate loop is short):
 *   t_d = x_id - y_d,  D² = Σ_d w_id t_d²  (w = 1 for a shared, whitened H),
 *   pairs with D² > cut2 (= c²) get weight 0,
 *   e = 2^(L c_i + nsh) · g(D²)  (profiles/profiles.h; the Gaussian: exp2(L c_i - L/2 D² + nsh)),
 *   S0 (+= e, or e w_id per dim),  S1_d += e w_id t_d
 * (nsh = minus the mode's log2 shift of meanshift_device.h, 0 where the host runs none: the FMA that
 * forms L c_i + nsh replaces a multiply, so the shift costs nothing per pair)
 * so that the new mode is y_d + S1_d / S0_d (the accumulator layout of both backends).
 *
 * Grid arrays on the device (the host copies CellGrid into them):
 *   gi = [dims_0 .. dims_{g-1}, cells_0 .. cells_{g-1}]
 *   gf = [origin_0 .., side_0 .., radius_0 ..]  (prepared units, float32)
 *   start = prod(cells) + 1 offsets into the sorted points (int32). */
#ifndef MEANSHIFT_RANGES_H
#define MEANSHIFT_RANGES_H

#ifndef MEANSHIFT_DEVICE_H
#include "meanshift_device.h"
#endif
#ifndef MEANSHIFT_PROFILES_H
#include "profiles/profiles.h"
#endif

/* Largest number of grid dims the kernels take (the host runs g = 0, brute force, beyond). */
#define MS_MAX_GRID_DIMS 16

#if defined(__OPENCL_VERSION__)
#  define MS_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#  define MS_LOCAL_ATOMIC_MIN(p, v) atomic_min((p), (v))
#  define MS_LOCAL_ATOMIC_MAX(p, v) atomic_max((p), (v))
#  define MS_FLOORF(x) floor(x)
#  define MS_LOCAL_INT volatile __local int
#else
#  define MS_BARRIER() __syncthreads()
#  define MS_LOCAL_ATOMIC_MIN(p, v) atomicMin((p), (v))
#  define MS_LOCAL_ATOMIC_MAX(p, v) atomicMax((p), (v))
#  define MS_FLOORF(x) floorf(x)
#  define MS_LOCAL_INT int
#endif

/* Cell coordinate of v in a grid dim, clamped to [0, cells) (NaN -> 0), as CellGrid::coord. */
MS_INLINE int ms_grid_coord(float v, float origin, float side, int cells)
{
    const float t = MS_FLOORF((v - origin) / side);
    if (!(t > 0.0f)) return 0;
    return t >= (float)(cells - 1) ? cells - 1 : (int)t;
}

/* The group's box (box[j] = lo_j, box[MS_MAX_GRID_DIMS + j] = hi_j): the union of the
 * neighbourhoods of the group's valid modes. Every work-item of the group calls it (barriers). */
MS_INLINE void ms_group_box(MS_LOCAL_INT* box, MS_CONST_GLOBAL float* y, int valid, MS_CONST_GLOBAL int* gi,
                            MS_CONST_GLOBAL float* gf, int g, int lid, int tau)
{
    MS_BARRIER(); /* the previous block's rows are read */
    for (int j = lid; j < g; j += tau) {
        box[j] = 0x7fffffff;
        box[MS_MAX_GRID_DIMS + j] = -1;
    }
    MS_BARRIER();
    if (valid) {
        for (int j = 0; j < g; ++j) {
            const float v = y[gi[j]];
            const float r = gf[2 * g + j];
            MS_LOCAL_ATOMIC_MIN(&box[j], ms_grid_coord(v - r, gf[j], gf[g + j], gi[g + j]));
            MS_LOCAL_ATOMIC_MAX(&box[MS_MAX_GRID_DIMS + j], ms_grid_coord(v + r, gf[j], gf[g + j], gi[g + j]));
        }
    }
    MS_BARRIER();
}

/* Number of rows of the box (product of its extents over the first g - 1 dims); 0 when empty. */
MS_INLINE int ms_box_rows(MS_LOCAL_INT* box, int g)
{
    int rows = 1;
    for (int j = 0; j < g; ++j) {
        const int ext = box[MS_MAX_GRID_DIMS + j] - box[j] + 1;
        if (ext <= 0) return 0;
        if (j < g - 1) rows *= ext;
    }
    return rows;
}

/* Point range [*b, *e) of row r of the box (mixed radix over the first g - 1 dims, last fastest). */
MS_INLINE void ms_row_range(MS_LOCAL_INT* box, MS_CONST_GLOBAL int* gi, MS_CONST_GLOBAL int* start, int g, int r,
                            int* b, int* e)
{
    long cell = 0, mul = 1;
    int rest = r;
    for (int j = g - 2; j >= 0; --j) {
        const int lo = box[j];
        const int ext = box[MS_MAX_GRID_DIMS + j] - lo + 1;
        const int c = lo + rest % ext;
        rest /= ext;
        mul *= gi[g + j + 1];
        cell += (long)c * mul;
    }
    *b = start[cell + box[g - 1]];
    *e = start[cell + box[MS_MAX_GRID_DIMS + g - 1] + 1];
}

/* Points in the group's box (n for g = 0): the candidates of each of its modes, for the pair
 * count that the backends report (Timing::pair_interactions). Call after ms_range_sums. */
MS_INLINE long ms_box_points(MS_LOCAL_INT* box, MS_CONST_GLOBAL int* gi, MS_CONST_GLOBAL int* start, int g, int n)
{
    if (g == 0) return n;
    const int rows = ms_box_rows(box, g);
    long total = 0;
    for (int r = 0; r < rows; ++r) {
        int b, e;
        ms_row_range(box, gi, start, g, r, &b, &e);
        total += e - b;
    }
    return total;
}

/* Adds the pairs (y, x_i), i in [b, e) visited by PU `lane` (stride f_load), to s0, s1.
 * y, t, s0, s1: private arrays of k values (s0: 1 value for the shared model). nsh: minus the
 * mode's log2 shift (per-point model; 0 without one). profile: MS_PROFILE_* (a compile-time
 * constant at every call: MS_PROFILE in OpenCL, a template parameter in CUDA). */
MS_INLINE void ms_range_pairs(MS_CONST_GLOBAL float* points, MS_CONST_GLOBAL float* precision,
                              MS_CONST_GLOBAL float* log_weight, int per_point, int profile, int b, int e, int lane,
                              int f_load, int k, float cut2, float nsh, const float* y, float* t, float* s0,
                              float* s1)
{
    for (int i = b + lane; i < e; i += f_load) {
        MS_CONST_GLOBAL float* x = points + (long)i * k;
        float d2 = 0.0f;
        if (per_point) {
            MS_CONST_GLOBAL float* w = precision + (long)i * k;
            for (int d = 0; d < k; ++d) {
                t[d] = x[d] - y[d];
                d2 = MS_FMA(w[d] * t[d], t[d], d2);
            }
            if (!(d2 <= cut2)) continue;
            const float ew = ms_profile_weight(profile, d2, MS_FMA(MS_LOG2E, log_weight[i], nsh));
            for (int d = 0; d < k; ++d) {
                const float ewd = ew * w[d];
                s0[d] += ewd;
                s1[d] = MS_FMA(ewd, t[d], s1[d]);
            }
        } else {
            for (int d = 0; d < k; ++d) {
                t[d] = x[d] - y[d];
                d2 = MS_FMA(t[d], t[d], d2);
            }
            if (!(d2 <= cut2)) continue;
            const float ew = ms_profile_weight_unit(profile, d2);
            s0[0] += ew;
            for (int d = 0; d < k; ++d) s1[d] = MS_FMA(ew, t[d], s1[d]);
        }
    }
}

/* One mode's sums over the candidates of its group's box. Every work-item of the group calls it
 * (the box is built with barriers); `valid` = 0 for work-items past the last mode (they help
 * with nothing but the barriers). yg: the mode in global memory (k floats); y: its private copy;
 * nsh: minus its log2 shift (ms_range_pairs). */
MS_INLINE void ms_range_sums(MS_CONST_GLOBAL float* points, MS_CONST_GLOBAL float* precision,
                             MS_CONST_GLOBAL float* log_weight, int per_point, int profile, int n, MS_CONST_GLOBAL int* start,
                             MS_CONST_GLOBAL int* gi, MS_CONST_GLOBAL float* gf, int g, MS_LOCAL_INT* box,
                             MS_CONST_GLOBAL float* yg, int valid, int lid, int tau, int lane, int f_load, int k,
                             float cut2, float nsh, const float* y, float* t, float* s0, float* s1)
{
    /* The barriers of ms_group_box are reached unconditionally (no early return, no barrier in
     * a branch, even a uniform one): PoCL turns work-group code into loops over the work-items
     * and hung or wrote out of bounds with barriers under a branch (2-core CI machine, PoCL 3). */
    const int works = valid && lane < f_load;
    ms_group_box(box, yg, valid, gi, gf, g, lid, tau);
    const int rows = !works ? 0 : g == 0 ? 1 : ms_box_rows(box, g);
    for (int r = 0; r < rows; ++r) {
        int b = 0, e = n;
        if (g > 0) ms_row_range(box, gi, start, g, r, &b, &e);
        ms_range_pairs(points, precision, log_weight, per_point, profile, b, e, lane, f_load, k, cut2, nsh, y, t, s0, s1);
    }
}

#endif /* MEANSHIFT_RANGES_H */
