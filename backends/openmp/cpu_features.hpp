#pragma once
// Run-time choice of the SIMD kernel: which of the compiled kernel tables this CPU can execute.

#include "simd_kernel.hpp"

#include <vector>

namespace meanshift::openmp_detail {

/// Kernel tables this CPU (and its operating system) can run, widest SIMD width first. Never
/// empty: the generic kernel runs everywhere.
const std::vector<const KernelTable*>& usable_kernels();

/// The usable kernel with `width` float lanes, or nullptr.
const KernelTable* kernel_for_width(int width);

}  // namespace meanshift::openmp_detail
