// The GEMM form of the step (gemm_step_impl.hpp) with the baseline flags (SSE2 on x86-64), so it
// runs on any CPU; gemm_step_avx2.cpp / gemm_step_avx512.cpp are the same code with wider vectors.
#define Eigen meanshift_gemm_eigen_generic  // this unit's own Eigen symbols (gemm_step.hpp)
#define MS_SIMD_WIDTH 4
#include "gemm_step_impl.hpp"

namespace meanshift::openmp_detail {

const GemmTable* gemm_table_generic()
{
#if defined(__SSE2__)
    static const GemmTable table = {"SSE2", &scratch_bytes, &run_block};
#else
    static const GemmTable table = {"generic", &scratch_bytes, &run_block};
#endif
    return &table;
}

}  // namespace meanshift::openmp_detail
