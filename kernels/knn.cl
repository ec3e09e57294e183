/* knn.cl: the brute-force k-nearest-neighbour search in OpenCL C 1.2; the body is ms_knn_query of
 * meanshift_knn.h (one source with the CUDA kernel). One query per work-item. */
#ifndef MEANSHIFT_KNN_H
#include "meanshift_knn.h"
#endif

__kernel void knn_distances(__global const float* points, const int n, __global const float* queries, const long m,
                            const int k, const int count, __global float* out)
{
    __local float tile[MS_KNN_TILE];
    const int lid = (int)get_local_id(0);
    const int T = (int)get_local_size(0);
    ms_knn_query(points, n, queries, m, k, count, tile, lid, T, (long)get_global_id(0), out);
}
