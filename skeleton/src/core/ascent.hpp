// The mode ascent of Alg. 4 (mean shift clustering, lines 3-21), written once: every strategy
// that moves modes towards their densest neighbourhood (the driver, the boundary refinement of
// bin seeding, the MPI domain decomposition and the MPI ring) runs this loop and supplies only
// what differs: where the active modes live, how one iteration steps them, and what happens
// between iterations (read-back, migration, progress).
#pragma once

#include <meanshift/backend.hpp>
#include <meanshift/meanshift.hpp>

#include <cstddef>
#include <functional>
#include <vector>

namespace meanshift::detail {

/// The stopping rule of Alg. 4/5: tolerance t_d (squared, in the metric given to set_modes),
/// the iteration cap m_it, and Options::fixed_iterations (then exactly that many iterations, no
/// mode retires on its shift, and every supported mode counts as converged).
struct AscentLimits {
    double tol2 = 0;
    int max_iterations = 1;
    bool fixed = false;
    /// Whether a converged mode leaves the active set (Binding::step's `retire`).
    bool retire() const { return !fixed; }
};

/// The limits Options ask for (validate_options has checked them).
AscentLimits ascent_limits(const Options& options);

/// Per mode: the iterations it made and the status of its last step (Active before any).
struct ModeLedger {
    std::vector<int> iterations;
    std::vector<ModeStatus> status;

    explicit ModeLedger(std::size_t modes = 0) : iterations(modes, 0), status(modes, ModeStatus::Active) {}
    void record(std::size_t mode, ModeStatus s)
    {
        ++iterations[mode];
        status[mode] = s;
    }
    bool no_support(std::size_t mode) const { return status[mode] == ModeStatus::NoSupport; }
    /// Result::converged: under fixed iterations every supported mode counts as converged.
    bool converged(std::size_t mode, bool fixed) const
    {
        return fixed ? !no_support(mode) : status[mode] == ModeStatus::Converged;
    }
};

/// What one ascent cost: iterations run (the longest mode's), candidate pairs evaluated, and
/// the kernels' own time where the backend measured it (seconds).
struct AscentTotals {
    int iterations = 0;
    double pairs = 0;
    double kernel_seconds = 0;
};

/// What differs between the ascents. `active`, `step` and `record` are required, `after` optional.
struct AscentHooks {
    /// Modes still ascending, 0 ends the ascent. Called before every iteration while the cap
    /// allows one; it may upload modes again (the refinement) or be a collective (MPI).
    std::function<Index()> active;
    /// One iteration of the active modes. The report comes cleared; the step fills it: stepped
    /// modes (as slots `record` understands), their statuses, pairs (>= 0) and kernel time.
    std::function<void(StepReport&)> step;
    /// The bookkeeping of one stepped mode: its slot and the status of its step.
    std::function<void(Index slot, ModeStatus)> record;
    /// After each iteration's bookkeeping, with the iterations run so far: read-back,
    /// migration, progress. Returning false ends the ascent.
    std::function<bool(int iterations)> after;
};

/// Runs Alg. 4's loop: while fewer than `limits.max_iterations` iterations ran and `active()`
/// is positive: step, record each stepped mode, then `after`. Exceptions of the hooks pass
/// through (the caller's state is then that of the iteration that threw).
AscentTotals ascend(const AscentLimits& limits, const AscentHooks& hooks);

/// The usual step: Binding::step(limits.tol2, limits.retire(), report) of the binding's active
/// modes; a backend that does not count pairs is counted active × `n_points` (every pair).
std::function<void(StepReport&)> binding_step(Binding& binding, const AscentLimits& limits, Index n_points);

}  // namespace meanshift::detail
