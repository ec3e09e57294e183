#pragma once
// The complexity-validation sweeps (Theorems 1-3). Each writes one CSV row per configuration (csv.hpp) and skips, with a
// message on stderr, configurations the backend rejects (InvalidArgument / NotSupported).

#include "csv.hpp"

#include <meanshift/meanshift.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace experiment {

struct SweepConfig {
    std::string backend = "serial";
    std::vector<std::string> backends;  ///< blobs: backends compared (serial is the reference)
    meanshift::BackendOptions backend_options;
    meanshift::Topology topology;  ///< requested; zeros = backend defaults
    int k = 3;
    std::uint64_t seed = 1;
    double bandwidth = 2.0;  ///< isotropic h (standard deviation, data units)
    std::string kernel = "shared";  ///< shared | perpoint (step sweeps)
    int repeats = 5;
    double min_seconds = 0.02;  ///< per timing; shorter runs are repeated inside it
    bool cpu_clock = false;  ///< step sweeps: process CPU time instead of wall time
    std::vector<long long> n_list;
    long long modes = 0;  ///< modes per step; 0 = n
    std::vector<double> mode_fractions;  ///< model: m = fraction · n
    std::vector<int> f_vppu_list, f_load_list;  ///< fload / model sweeps (0 in f_load = f_vppu)
    std::vector<int> preload_sizes;  ///< preload: sizes tried with preloading on
    std::vector<int> threads_list;  ///< threads
    std::vector<double> cutoff_list{2.0, 2.5, 3.0, 3.5, 4.0, 5.0};  ///< cutoff sweep (bandwidths)
    int iterations = 10;  ///< blobs / threads: fixed iterations (papers: 10)
    int centres = 3;  ///< blobs (papers 000/004: 3)
    double std_dev = 1.5;  ///< blobs (paper 000: 1.5)
    long long serial_max_n = 20000;  ///< largest n the serial oracle runs
    long long max_n = 0;  ///< 0 = no cap for the other backends
};

void sweep_n(const SweepConfig& c, CsvWriter& out);  ///< (1) step time vs n (Fig. 3 with step 1)
void sweep_fload(const SweepConfig& c, CsvWriter& out);  ///< (2) time vs f_load for several f_vppu (Fig. 2)
void sweep_preload(const SweepConfig& c, CsvWriter& out);  ///< (3) preloading off / on and its size (Fig. 1)
void sweep_error(const SweepConfig& c, CsvWriter& out);  ///< (4) E_CPU-GPU of eq. 7-8 vs the serial oracle
void sweep_blobs(const SweepConfig& c, CsvWriter& out);  ///< (5) make_blobs table, speedup over serial
void sweep_threads(const SweepConfig& c, CsvWriter& out);  ///< (5) OpenMP thread scaling
/// (6) truncated kernel: cluster() with every point a seed, fixed iterations and the grid, for each
/// cutoff in cutoff_list (inf = exact); the rows carry the candidate pairs per step for `fit`.
void sweep_cutoff(const SweepConfig& c, CsvWriter& out);
/// Grid of n × m × (f_vppu, f_load) one-step timings for the cost-model fit.
void sweep_model(const SweepConfig& c, CsvWriter& out, std::vector<Row>* rows = nullptr);
/// Times the model rows rows[i], i in `which` (all of backend c.backend), again with c.repeats
/// repeats at their resolved topology and keeps the smaller minimum: other jobs on a shared machine
/// only ever add time, so a noisy sample converges to its undisturbed time while a true misfit of
/// the model stays.
void remeasure_model_rows(const SweepConfig& c, std::vector<Row>& rows, const std::vector<std::size_t>& which);

}  // namespace experiment
