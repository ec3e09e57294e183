// CPU feature detection for the OpenMP backend's kernel dispatch. __builtin_cpu_supports reads
// CPUID and, for AVX/AVX-512, also checks through XGETBV that the operating system saves the
// wide registers, so a kernel is only chosen when it can really run.
#include "cpu_features.hpp"

#include "gemm_step.hpp"

#if MEANSHIFT_OPENMP_AMX
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

namespace meanshift::openmp_detail {

const std::vector<const KernelTable*>& usable_kernels()
{
    static const std::vector<const KernelTable*> tables = [] {
        std::vector<const KernelTable*> t;
#if MEANSHIFT_OPENMP_X86_KERNELS
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) t.push_back(kernel_table_avx512());
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) t.push_back(kernel_table_avx2());
#endif
        t.push_back(kernel_table_generic());
        return t;
    }();
    return tables;
}

const KernelTable* kernel_for_width(int width)
{
    for (const KernelTable* t : usable_kernels())
        if (t->width == width) return t;
    return nullptr;
}

bool amx_usable()
{
    static const bool usable = [] {
#if MEANSHIFT_OPENMP_AMX && defined(__linux__)
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
        return false;  // not compiled in, or not Linux (other OSes: not tried)
#endif
    }();
    return usable;
}

}  // namespace meanshift::openmp_detail
