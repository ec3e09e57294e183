#pragma once
// Internal: the truncated kernel's shape on CPU-class OpenCL devices (range_modes_cpu), chosen
// from k and the kernel model. GPUs never reach it (the CPU shapes are gated on the device type).

#include "backends/opencl/kernel_config.hpp"

namespace meanshift::detail {

/// range_modes_cpu's plan: which kernel of the two and how many modes (active-list slots) one
/// work-item takes (one work-item a work-group).
struct CpuRangePlan {
    /// true: kernels/range_modes_cpu.cl, the block's modes in the vector lanes, each candidate
    /// of the block's union box read once and broadcast (-D MS_CPU_RANGE_BLOCK=1); false:
    /// range_modes.cl's range_modes_cpu, one mode at a time against cpu_vw candidates of its own box.
    bool modes_in_lanes = false;
    int modes_per_item = 16;  ///< MS_CPU_RANGE_MODES (cpu_vw when modes_in_lanes)
};

/// The plan for dimension k (>= 1), the per-point model or not, and cpu_vw float lanes (4, 8 or
/// 16, cpu_vector_width). Modes in lanes for 16 <= k <= 64 (cpu_vw modes a work-item), candidates
/// in lanes otherwise (16 modes a work-item); figures in docs/backend-opencl.md.
CpuRangePlan cpu_range_plan(int k, bool per_point, int cpu_vw);

/// Sets c.cpu_range_modes and c.cpu_range_block from cpu_range_plan(c.k, c.per_point, c.cpu_vw)
/// (c.ranges with c.cpu_vw > 0).
void apply_cpu_range_plan(KernelConfig& c);

}  // namespace meanshift::detail
