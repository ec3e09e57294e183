#pragma once
// Internal interface between the OpenMP backend (threads, data layout, dispatch) and its SIMD
// kernels. Each kernel translation unit (kernel_avx512.cpp, kernel_avx2.cpp, kernel_generic.cpp)
// is compiled with its own instruction-set flags and exports one KernelTable; nothing else
// crosses the boundary, so no inline function compiled for AVX-512 can be picked by the linker
// for code that runs on a CPU without it.
//
// Units: every array holds float32 values in "kernel units", prepared by bind():
//   Shared   : x = σ·x_prepared with σ = sqrt(½·log2 e), so exp(-|y-x|²/2) = exp2(-|y'-x'|²);
//   PerPoint : w = ½·log2(e)·precision, sw = √w, x = sw·x_prepared, wx = w·x_prepared,
//              c2 = log2(e)·log_weight, so e = exp2(c2 - Σ_d (sw_d·y_d - x_d)²) (one FMA per
//              dimension forms sw_d·y_d - x_d) and the sums Σ e·w, Σ e·w·x carry a common factor
//              ½·log2 e that cancels in y = Σ e w x / Σ e w.

#include <cstddef>
#include <cstdint>

namespace meanshift::openmp_detail {

struct KernelData {
    bool per_point = false;
    std::int64_t n = 0;
    int k = 0;
    int f_vppu = 1;  ///< PUs (SIMD lanes) per vPPU, divides the SIMD width
    int f_load = 1;  ///< lanes of a vPPU that share the n-loop, 1 ≤ f_load ≤ f_vppu
    int regs = 1;  ///< f_vppu = 1 only: SIMD vectors of modes held in registers per block

    // f_vppu = 1 (one mode per lane, points broadcast): row-major n × k.
    const float* x = nullptr;
    const float* sw = nullptr;  ///< PerPoint only
    const float* w = nullptr;  ///< PerPoint only
    const float* wx = nullptr;  ///< PerPoint only
    const float* c2 = nullptr;  ///< PerPoint only, n values

    // f_vppu > 1 (lanes of a vPPU split the n-loop): dimension-major k × stride, zero-padded to
    // stride ≥ n + SIMD width so vector loads past n stay inside the arrays.
    std::int64_t stride = 0;
    const float* xs = nullptr;
    const float* sws = nullptr;  ///< PerPoint only
    const float* ws = nullptr;  ///< PerPoint only
    const float* wxs = nullptr;  ///< PerPoint only
    const float* c2s = nullptr;  ///< PerPoint only, stride values

    double y_scale = 1.0;  ///< kernel units per prepared unit (σ for Shared, 1 for PerPoint)

    /// Weight profile of the pairs, as the MS_PROFILE_* values (kernels/profiles/profiles.h):
    /// 0 = Gaussian (also vMF, whose weights are the Gaussian's), 1 = flat, 2 = Epanechnikov,
    /// 3 = biweight. A compile-time parameter of the kernels, chosen once per block by select().
    /// Compact profiles weigh a pair 2^c2 · g(q) with q = D² = (c2 − a)·2 ln 2 from the Gaussian's
    /// log2 weight a, masked to a ≥ c2 + cut where cut ≥ −½·log2(e) (q ≤ 1, their support).
    int profile = 0;
    const float* p2 = nullptr;  ///< PerPoint compact profiles, f_vppu = 1: 2^c2 per point (n values)
    const float* p2s = nullptr;  ///< PerPoint compact profiles, f_vppu > 1: 2^c2 (stride values)

    /// Truncated kernel: the block visits only rows [ranges[2r], ranges[2r+1]) for r < nranges
    /// (nullptr = [0, n)), and a pair counts only when its exponent without the log-weight,
    /// −Σ_d (kernel-unit distance)², is ≥ cut (= −½·log2(e)·cutoff²; −inf = exact kernel).
    /// One compare and one AND per pair.
    const std::int64_t* ranges = nullptr;
    int nranges = 0;
    float cut = -__builtin_huge_valf();

    /// Binding::accumulate: when set, each mode's float64 sums are also added to
    /// sums + q · sums_width as [S0 (1 or k) | S1 (k, prepared units)], q = (out − sums_out) / k the
    /// mode's row in the output array the caller passed (sums_out = its first row).
    double* sums = nullptr;
    const double* sums_out = nullptr;
    std::int64_t sums_width = 0;
};

/// Advances modes [0, m) of one block: positions and out are m × k row-major, prepared units;
/// supported[j] = 0 when mode j had no support. scratch holds at least
/// KernelTable::scratch_bytes(data) bytes, any alignment.
using RunBlockFn = void (*)(const KernelData& data, const double* positions, int m, double* out,
                            unsigned char* supported, void* scratch);

struct KernelTable {
    int width = 0;  ///< τ: float32 lanes per vector
    const char* isa = "";  ///< "AVX-512", "AVX2", "SSE2", "generic"
    /// Modes one block advances together: regs·τ for f_vppu = 1, τ / f_vppu otherwise.
    int (*modes_per_block)(const KernelData& data) = nullptr;
    std::size_t (*scratch_bytes)(const KernelData& data) = nullptr;
    /// The specialisation for (k, f_vppu, regs, model); never null for a valid KernelData.
    RunBlockFn (*select)(const KernelData& data) = nullptr;
};

/// Kernel tables of the instruction sets compiled into this build; nullptr when not compiled
/// (non-x86 builds have only the generic one). Whether the CPU can run them is checked by the
/// caller (cpu_features.hpp).
const KernelTable* kernel_table_avx512();
const KernelTable* kernel_table_avx2();
const KernelTable* kernel_table_generic();

}  // namespace meanshift::openmp_detail
