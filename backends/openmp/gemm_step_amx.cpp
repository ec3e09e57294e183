// The GEMM form of the step with its two products on Intel AMX (gemm_amx_step.hpp, gemm_amx.hpp:
// bf16 tiles, three-limb split, float32 accuracy), compiled with the AVX-512 flags plus AMX-TILE,
// AMX-BF16 and AVX512-BF16. The backend takes it instead of the AVX-512 unit where amx_usable()
// (cpu_features.cpp) and openmp.isa allow (docs/backend-openmp.md, "AMX").
#define Eigen meanshift_gemm_eigen_amx  // this unit's own Eigen symbols (gemm_step.hpp)
#define MS_SIMD_WIDTH 16
// GCC 12's bogus -Wmaybe-uninitialized inside its own AVX-512 intrinsics (simd_vec.hpp), here before
// gemm_amx.hpp as well as in gemm_step_common.hpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "gemm_amx_step.hpp"

namespace meanshift::openmp_detail {

const GemmTable* gemm_table_amx()
{
    static const GemmTable table = {"AVX-512+AMX", &scratch_bytes, &run_block, 256, 16};
    return &table;
}

}  // namespace meanshift::openmp_detail
