/* meanshift_knn.h: the k-nearest-neighbour search of the bandwidth selection (adaptive
 * per-point bandwidths from the distance to the K-th nearest neighbour) by brute force on a GPU,
 * one source for the CUDA (backends/cuda/knn_kernel.cu) and OpenCL (kernels/knn.cl) kernels. Same
 * language subset as meanshift_device.h.
 *
 * It is Alg. 3's loop over points with a different reduction: a work-item (PU) holds one query and
 * keeps the `count` smallest squared distances it has seen, sorted, in private memory (an insertion
 * step only for a candidate below the current count-th); the work-group (PPU) stages the points in
 * tiles in local memory (Alg. 7's preloading), so that each point is read from global memory once
 * per group. A query that is also a point finds itself at distance 0 (the caller skips it). */
#ifndef MEANSHIFT_KNN_H
#define MEANSHIFT_KNN_H

#ifndef MEANSHIFT_DEVICE_H
#include "meanshift_device.h"
#endif

/* Largest neighbour count (private array) and the local-memory tile of points in floats (8 KB):
 * floor(MS_KNN_TILE / k) points per tile, so k <= MS_KNN_TILE. */
#define MS_KNN_MAX 64
#define MS_KNN_TILE 2048

#if defined(__OPENCL_VERSION__)
#  define MS_KNN_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#  define MS_KNN_INF INFINITY
#else
#  define MS_KNN_BARRIER() __syncthreads()
#  define MS_KNN_INF __int_as_float(0x7f800000)
#endif

/* Work-item lid of a group of T: query q (valid when q < m) against the n points; writes
 * out[q · count + i], i < count, ascending. Every work-item of the group calls it (barriers). */
MS_INLINE void ms_knn_query(MS_CONST_GLOBAL float* points, int n, MS_CONST_GLOBAL float* queries, long m, int k,
                            int count, MS_LOCAL float* tile, int lid, int T, long q, MS_GLOBAL float* out)
{
    float best[MS_KNN_MAX];
    for (int i = 0; i < count; ++i) best[i] = MS_KNN_INF;
    const int valid = q < m;
    MS_CONST_GLOBAL float* y = queries + (valid ? q : m - 1) * (long)k;
    const int rows = MS_KNN_TILE / k;
    for (int base = 0; base < n; base += rows) {
        const int r = n - base < rows ? n - base : rows;
        MS_KNN_BARRIER();
        for (int i = lid; i < r * k; i += T) tile[i] = points[(long)base * k + i];
        MS_KNN_BARRIER();
        if (!valid) continue;
        for (int j = 0; j < r; ++j) {
            float s = 0.0f;
            for (int d = 0; d < k; ++d) {
                const float t = y[d] - tile[j * k + d];
                s += t * t;
            }
            if (s < best[count - 1]) {
                int i = count - 1;
                while (i > 0 && best[i - 1] > s) {
                    best[i] = best[i - 1];
                    --i;
                }
                best[i] = s;
            }
        }
    }
    if (valid)
        for (int i = 0; i < count; ++i) out[q * count + i] = best[i];
}

#endif
