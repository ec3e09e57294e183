// The AVX-512 kernel: Alg. 3 on 16 float32 lanes per vector. Compiled with its own -m flags (see
// CMakeLists.txt); the backend calls it only after a run-time CPU check (cpu_features.cpp).
#define MS_SIMD_WIDTH 16
#include "simd_kernel_impl.hpp"

namespace meanshift::openmp_detail {

const KernelTable* kernel_table_avx512()
{
    static const KernelTable table = {16, "AVX-512", &modes_per_block, &scratch_bytes, &select_kernel};
    return &table;
}

}  // namespace meanshift::openmp_detail
