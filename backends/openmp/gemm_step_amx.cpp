// The GEMM form of the step (gemm_step_impl.hpp) with its two products on Intel AMX (gemm_amx.hpp:
// bf16 tiles, three-limb split, float32 accuracy), compiled with the AVX-512 flags plus AMX-TILE,
// AMX-BF16 and AVX512-BF16. Compiled only into apps/bench/amx_step_probe (its CMakeLists.txt): the
// probe measured it at 1.7-1.8× the direct kernels at k = 64, not the 2× issue 11 asks, so the backend
// does not use it (docs/backend-openmp.md, "AMX probe").
#define Eigen meanshift_gemm_eigen_amx  // this unit's own Eigen symbols (gemm_step.hpp)
#define MS_SIMD_WIDTH 16
#define MS_GEMM_AMX 1
// GCC 12's bogus -Wmaybe-uninitialized inside its own AVX-512 intrinsics (simd_vec.hpp), here before
// gemm_amx.hpp as well as in gemm_step_impl.hpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "gemm_amx.hpp"
#include "gemm_step_impl.hpp"
#include "cpu_features.hpp"

#include <cpuid.h>
#if defined(__linux__)
#  include <sys/syscall.h>
#  include <unistd.h>
#endif

namespace meanshift::openmp_detail {

bool amx_usable()
{
    static const bool usable = [] {
#if defined(__linux__)
        if (!kernel_for_width(16)) return false;  // the unit is the AVX-512 GEMM form plus AMX
        unsigned a = 0, b = 0, c = 0, d = 0;
        if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE (xgetbv)
        if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
        if (!(d & (1u << 22)) || !(d & (1u << 24))) return false;  // AMX-BF16, AMX-TILE
        if (!__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a & (1u << 5))) return false;  // AVX512-BF16
        unsigned lo = 0, hi = 0;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        if ((lo & (3u << 17)) != (3u << 17)) return false;  // XTILECFG and XTILEDATA state on
        // Linux enables the 8 KB tile state per process on request (kernel 5.16+); without it the
        // first tile instruction raises SIGILL.
        constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
        if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
        unsigned long granted = 0;
        if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0) return false;
        return (granted & (1ul << kXfeatureXtiledata)) != 0;
#else
        return false;
#endif
    }();
    return usable;
}

const GemmTable* gemm_table_amx()
{
    static const GemmTable table = {"AVX-512+AMX", &scratch_bytes, &run_block};
    return &table;
}

}  // namespace meanshift::openmp_detail
