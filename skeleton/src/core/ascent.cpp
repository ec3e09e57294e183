// The one Alg. 4 loop (ascent.hpp); the strategies differ only in their hooks.
#include "skeleton/src/core/ascent.hpp"

namespace meanshift::detail {

AscentLimits ascent_limits(const Options& options)
{
    AscentLimits l;
    l.fixed = options.fixed_iterations.has_value();
    l.max_iterations = l.fixed ? *options.fixed_iterations : options.max_iterations;
    l.tol2 = options.tolerance * options.tolerance;
    return l;
}

AscentTotals ascend(const AscentLimits& limits, const AscentHooks& hooks)
{
    AscentTotals totals;
    StepReport report;
    while (totals.iterations < limits.max_iterations && hooks.active() > 0) {
        report.clear();
        hooks.step(report);
        for (std::size_t j = 0; j < report.mode.size(); ++j) hooks.record(report.mode[j], report.status[j]);
        if (report.pairs > 0) totals.pairs += report.pairs;
        if (report.kernel_seconds > 0) totals.kernel_seconds += report.kernel_seconds;
        ++totals.iterations;
        if (hooks.after && !hooks.after(totals.iterations)) break;
    }
    return totals;
}

std::function<void(StepReport&)> binding_step(Binding& binding, const AscentLimits& limits, Index n_points)
{
    return [&binding, limits, n_points](StepReport& report) {
        const Index a = binding.active_count();
        binding.step(limits.tol2, limits.retire(), report);
        // Candidate pairs the backend visited (a neighbour grid visits fewer than a × n).
        if (report.pairs < 0) report.pairs = static_cast<double>(a) * static_cast<double>(n_points);
    };
}

}  // namespace meanshift::detail
