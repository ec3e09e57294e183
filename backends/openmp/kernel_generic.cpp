// The portable kernel: Alg. 3 on 4 float32 lanes per vector, compiled with the baseline flags
// (SSE2 on x86-64, NEON or plain scalar code elsewhere), so it runs on any CPU.
#define MS_SIMD_WIDTH 4
#include "simd_kernel_impl.hpp"

namespace meanshift::openmp_detail {

const KernelTable* kernel_table_generic()
{
#if defined(__SSE2__)
    static const KernelTable table = {4, "SSE2", &modes_per_block, &scratch_bytes, &select_kernel};
#else
    static const KernelTable table = {4, "generic", &modes_per_block, &scratch_bytes, &select_kernel};
#endif
    return &table;
}

}  // namespace meanshift::openmp_detail
