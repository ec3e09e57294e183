#pragma once
// Internal interface of the OpenMP backend's GEMM form of the step: the exponents of a
// block of modes against tiles of points come from matrix products, fused with exp and the
// weighted sums, which beats the direct SIMD loop at high k (docs/backend-openmp.md, "GEMM form").
// Like the SIMD kernels, gemm_step_impl.hpp is compiled once per instruction set (gemm_step.cpp,
// gemm_step_avx2.cpp, gemm_step_avx512.cpp) and each unit exports only its table; its Eigen is
// renamed per unit, so no Eigen function compiled for AVX-512 can be picked by the linker for code
// that runs elsewhere. Nothing here includes the public headers (they include the library's Eigen).

#include <cstddef>
#include <cstdint>

namespace meanshift::openmp_detail {

/// The bound data in prepared units (PreparedData's float32 copies, not the SIMD kernel units).
struct GemmData {
    bool per_point = false;
    std::int64_t n = 0;
    int k = 0;
    const float* x = nullptr;  ///< n × k row-major, PreparedData::points_f
    const float* w = nullptr;  ///< n × k row-major, PreparedData::precision_f (PerPoint only)
    const float* c = nullptr;  ///< n, PreparedData::log_weight_f (PerPoint only)
    /// Truncated kernel: pairs with (Mahalanobis) D² > cutoff2 get weight 0; inf = exact kernel.
    double cutoff2 = __builtin_huge_val();
    int modes_per_block = 128;  ///< largest m a block may have (sizes the scratch; AMX unit: a multiple of 16)
    int rows_per_tile =
        256;  ///< points per product tile (float32 sums over at most this many terms; AMX unit: a multiple of 32)
};

/// Advances modes [0, m) (m ≤ modes_per_block): positions and out are m × k row-major, prepared
/// units (float64). The block visits the rows [ranges[2r], ranges[2r+1]) for r < nranges
/// (nranges < 0: all n rows; 0: none), gathered into tiles. supported[j] = 0 when every weight of
/// mode j underflowed (out_j = positions_j then). scratch: scratch_bytes(data) bytes, any alignment.
using GemmBlockFn = void (*)(const GemmData& data, const double* positions, int m, const std::int64_t* ranges,
                             int nranges, double* out, unsigned char* supported, void* scratch);

struct GemmTable {
    const char* isa = "";  ///< "AVX-512+AMX", "AVX-512", "AVX2", "SSE2", "generic"
    std::size_t (*scratch_bytes)(const GemmData& data) = nullptr;
    GemmBlockFn run = nullptr;
    /// The unit's measured block size (GemmData::modes_per_block): the AMX pipeline's per-point work
    /// is spread over more modes (docs/backend-openmp.md, "AMX").
    int modes_per_block = 128;
    /// PairForm::Auto takes the unit from this k on (measured crossover, openmp_binding.hpp).
    int min_k = 32;
};

/// Tables of the instruction sets compiled into this build (nullptr when not compiled); the caller
/// picks the one of the SIMD kernel it runs, which cpu_features.cpp has checked.
const GemmTable* gemm_table_avx512();
const GemmTable* gemm_table_avx2();
const GemmTable* gemm_table_generic();

/// The AVX-512 unit with its products on AMX bf16 tiles (gemm_step_amx.cpp, gemm_amx.hpp), compiled
/// where the compiler has the AMX intrinsics (MEANSHIFT_OPENMP_AMX); call only where amx_usable().
const GemmTable* gemm_table_amx();
/// The AMX unit compiled in, the AVX-512 kernels usable, AMX-TILE, AMX-BF16 and AVX512-BF16 by CPUID,
/// the tile state enabled by the OS (XCR0) and, on Linux, this process's permission to use it
/// (arch_prctl ARCH_REQ_XCOMP_PERM, asked on the first call). In cpu_features.cpp: baseline flags.
bool amx_usable();

}  // namespace meanshift::openmp_detail
