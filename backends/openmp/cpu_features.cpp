// CPU feature detection for the OpenMP backend's kernel dispatch. __builtin_cpu_supports reads
// CPUID and, for AVX/AVX-512, also checks through XGETBV that the operating system saves the
// wide registers, so a kernel is only chosen when it can really run.
#include "cpu_features.hpp"

namespace meanshift::openmp_detail {

const std::vector<const KernelTable*>& usable_kernels()
{
    static const std::vector<const KernelTable*> tables = [] {
        std::vector<const KernelTable*> t;
#if MEANSHIFT_OPENMP_X86_KERNELS
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
            t.push_back(kernel_table_avx512());
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            t.push_back(kernel_table_avx2());
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

}  // namespace meanshift::openmp_detail
