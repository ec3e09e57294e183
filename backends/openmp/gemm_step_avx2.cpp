// The GEMM form of the step (gemm_step_impl.hpp) compiled for AVX2 (flags in CMakeLists.txt); the
// backend calls it only when it runs the AVX2 SIMD kernel, i.e. after the CPU check.
#define Eigen meanshift_gemm_eigen_avx2  // this unit's own Eigen symbols (gemm_step.hpp)
#define MS_SIMD_WIDTH 8
#include "gemm_step_impl.hpp"

namespace meanshift::openmp_detail {

const GemmTable* gemm_table_avx2()
{
    static const GemmTable table = {"AVX2", &scratch_bytes, &run_block};
    return &table;
}

}  // namespace meanshift::openmp_detail
