#include "backends/opencl/cpu_plan.hpp"

namespace meanshift::detail {
namespace {
/// Modes in lanes from kModesInLanesMinK to kModesInLanesMaxK. Below, the candidate-lane kernel
/// was as fast (k = 3: 0.30-0.32 s vs 0.36-0.42 s, its own boxes hold fewer candidates); at
/// k = 16, 4.1 s vs 5.0 s (n = 50,000, 2-core EPYC, PoCL, docs/backend-opencl.md). Above the
/// maximum its private arrays (modes, S0, S1: about 3 k · cpu_vw floats) grow past the registers.
constexpr int kModesInLanesMinK = 16;
constexpr int kModesInLanesMaxK = 64;
}  // namespace

CpuRangePlan cpu_range_plan(int k, bool per_point, int cpu_vw)
{
    (void)per_point;
    CpuRangePlan p;
    p.modes_in_lanes = cpu_vw > 0 && k >= kModesInLanesMinK && k <= kModesInLanesMaxK;
    // One vector of modes a work-item: a small union box (16 modes: 10 % more candidates at k = 3).
    p.modes_per_item = p.modes_in_lanes ? cpu_vw : 16;
    return p;
}

void apply_cpu_range_plan(KernelConfig& c)
{
    const CpuRangePlan p = cpu_range_plan(c.k, c.per_point, c.cpu_vw);
    c.cpu_range_modes = p.modes_per_item;
    c.cpu_range_block = p.modes_in_lanes;
}

}  // namespace meanshift::detail
