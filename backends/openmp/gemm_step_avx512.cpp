// The GEMM form of the step (gemm_step_impl.hpp) compiled for AVX-512 (flags in CMakeLists.txt); the
// backend calls it only when it runs the AVX-512 SIMD kernel, i.e. after the CPU check.
#define Eigen meanshift_gemm_eigen_avx512  // this unit's own Eigen symbols (gemm_step.hpp)
#define MS_SIMD_WIDTH 16
#include "gemm_step_impl.hpp"

namespace meanshift::openmp_detail {

const GemmTable* gemm_table_avx512()
{
    static const GemmTable table = {"AVX-512", &scratch_bytes, &run_block};
    return &table;
}

}  // namespace meanshift::openmp_detail
