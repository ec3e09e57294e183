#pragma once
// One CSV schema for every sweep, so `fit` and plot.py read any of them.

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace experiment {

/// One measured configuration. Empty/NaN fields are written as empty cells.
struct Row {
    std::string sweep;  ///< n, fload, preload, error, blobs, threads, model
    std::string backend;
    std::string device;
    std::string kernel = "shared";  ///< shared | perpoint
    long long n = 0;  ///< data points
    int k = 0;  ///< dimensions
    long long m = 0;  ///< modes advanced per step
    int z = 0, tau = 0, f_vppu = 0, f_load = 0;  ///< resolved topology
    int preload = 0;  ///< Alg. 7 local-memory preloading: 1 on, 0 off, -1 auto (backend default)
    int preload_size = 0;  ///< points per batch / tile width (0 = backend default)
    int threads = 0;  ///< OpenMP threads requested (0 = all)
    int iterations = 1;  ///< steps per timed run
    int repeats = 0;  ///< timed repeats (median taken)
    double seconds = 0;  ///< median seconds of one run of `iterations` steps
    double seconds_min = 0, seconds_max = 0;
    double pairs_per_second = 0;  ///< m · n · iterations / seconds
    double utilisation = 0;  ///< Theorem 1-2 utilisation of the PU-slots (cost_model.hpp)
    double predicted = 0;  ///< model prediction (fit --predictions only)
    double error = -1;  ///< E_CPU-GPU (eq. 7-8) vs serial; -1 = not measured
    double error_max = -1;  ///< largest per-mode |.|_pos; -1 = not measured
    double speedup = 0;  ///< vs the reference named in note; 0 = none
    /// Truncated kernel: candidate pairs per step (Timing::pair_interactions / iterations); 0 = m·n.
    double candidates = 0;
    std::string note;
};

class CsvWriter {
public:
    /// Opens `path` ("-" = stdout only) and writes the header. Throws meanshift::IoError.
    explicit CsvWriter(const std::string& path, bool echo = true);
    ~CsvWriter();
    /// Writes and flushes one row (partial sweeps survive an interruption); echoes a short line
    /// to stderr so a long sweep shows progress.
    void write(const Row& r);

private:
    std::unique_ptr<std::ofstream> file_;
    bool echo_ = true;
};

std::string header();
std::string format(const Row& r);

/// Reads rows written by CsvWriter (columns found by name; unknown columns ignored).
/// Throws meanshift::IoError.
std::vector<Row> read_csv(const std::string& path);

}  // namespace experiment
