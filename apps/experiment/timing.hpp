#pragma once
// Timing helpers: one-iteration timings through make_backend + bind + step, and whole runs
// through meanshift::cluster. Every figure is a median of repeats; a run shorter than
// `min_seconds` is repeated back to back inside one timing so timer and launch noise stay small.

#include <meanshift/meanshift.hpp>

#include <memory>
#include <string>
#include <vector>

namespace experiment {

struct Stats {
    double median = 0, min = 0, max = 0;
    int repeats = 0;
};

/// Median, min and max of `v` (not empty).
Stats summarize(std::vector<double> v);

/// A backend kept alive across configurations (GPU contexts and compiled programs are built once).
class StepBench {
public:
    StepBench(const std::string& backend, const meanshift::BackendOptions& options);
    ~StepBench();

    /// Resolves `requested` for `data`, binds (uploads) and returns the resolved topology.
    /// Throws what the backend throws (InvalidArgument for a topology it rejects).
    meanshift::Topology bind(const meanshift::PreparedData& data, const meanshift::Topology& requested);

    /// Seconds for one step() advancing m modes (the first m points, cycling), median of `repeats`.
    /// cpu_clock: measure the process's CPU time instead of wall time. For a single-threaded
    /// backend this is the work itself, unaffected by other jobs taking the core away (the CI
    /// gate on a shared machine); for several threads it is their sum, not a duration.
    Stats time_step(meanshift::Index m, int repeats, double min_seconds, bool cpu_clock = false);

    std::string name() const;
    std::string device() const;

private:
    std::unique_ptr<meanshift::Backend> backend_;
    std::unique_ptr<meanshift::Binding> binding_;  ///< owns a copy of the bound data
};

/// Seconds of cluster(data, options) (Timing::seconds_total), median of `repeats`, after one
/// untimed warm-up run when `warmup` (device start-up, program builds); the result of the last
/// run is returned through `last` when not null.
Stats time_cluster(const meanshift::MatrixF& data, const meanshift::Options& options, int repeats, bool warmup,
                   meanshift::Result* last = nullptr);

}  // namespace experiment
