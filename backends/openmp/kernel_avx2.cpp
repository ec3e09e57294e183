// The AVX2 kernel: Alg. 3 on 8 float32 lanes per vector. Compiled with its own -m flags (see
// CMakeLists.txt); the backend calls it only after a run-time CPU check (cpu_features.cpp).
#define MS_SIMD_WIDTH 8
#include "simd_kernel_impl.hpp"

namespace meanshift::openmp_detail {

const KernelTable* kernel_table_avx2()
{
    static const KernelTable table = {8, "AVX2", &modes_per_block, &scratch_bytes, &select_kernel};
    return &table;
}

}  // namespace meanshift::openmp_detail
