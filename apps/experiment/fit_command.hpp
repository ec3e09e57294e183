#pragma once
// `fit`: reads sweep CSVs, fits the cost model (cost_model.hpp) per backend, prints R², the worst
// relative residual and the constants, and optionally checks thresholds (the CI gate).

#include "csv.hpp"

#include <cstddef>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

namespace experiment {

struct FitConfig {
    std::vector<std::string> inputs;  ///< CSV files
    std::vector<std::string> sweeps{"model", "n", "fload"};  ///< rows of these sweeps are fitted
    std::string backend;  ///< only this backend (empty = each backend separately)
    double min_r2_log = -std::numeric_limits<double>::infinity();
    double max_worst = std::numeric_limits<double>::infinity();
    /// Which timing is fitted: "median" (the default: what the tables show) or "min" (best of
    /// the repeats: on a shared machine other jobs only ever add time, so the minimum is the
    /// least disturbed estimate; the CI gate uses it).
    std::string statistic = "median";
    std::string predictions;  ///< write the fitted rows with `predicted` filled
};

/// Fits every backend found in `rows`; prints a report to `os`. Returns 0 when every fit meets
/// the thresholds, 1 otherwise (2 when no row could be fitted).
int fit_rows(const std::vector<Row>& rows, const FitConfig& cfg, std::ostream& os);

/// Indices into `rows` of the samples whose relative residual exceeds `max_relative` when each
/// backend's rows are fitted on their `seconds_min` (the CI gate's statistic).
std::vector<std::size_t> misfits(const std::vector<Row>& rows, double max_relative);

/// Reads cfg.inputs and calls fit_rows.
int run_fit(const FitConfig& cfg);

}  // namespace experiment
