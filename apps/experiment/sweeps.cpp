#include "sweeps.hpp"

#include "datasets.hpp"
#include "timing.hpp"

#include <meanshift/cost_model.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>

namespace experiment {

using meanshift::Index;
using meanshift::KernelModel;
using meanshift::Topology;

namespace {

KernelModel kernel_of(const std::string& s)
{
    if (s == "shared") return KernelModel::Shared;
    if (s == "perpoint") return KernelModel::PerPoint;
    throw meanshift::InvalidArgument("--kernel must be 'shared' or 'perpoint', got '" + s + "'");
}

Row base_row(const std::string& sweep, const SweepConfig& c, const std::string& backend, const std::string& device)
{
    Row r;
    r.sweep = sweep;
    r.backend = backend;
    r.device = device;
    r.kernel = c.kernel;
    r.k = c.k;
    r.preload = c.backend_options.preload == meanshift::Preload::On    ? 1
                : c.backend_options.preload == meanshift::Preload::Off ? 0
                                                                       : -1;
    r.preload_size = c.backend_options.preload_size;
    r.threads = c.backend_options.threads;
    return r;
}

void set_topology(Row& r, const Topology& t)
{
    r.z = t.ppus;
    r.tau = t.pus_per_ppu;
    r.f_vppu = t.f_vppu;
    r.f_load = t.f_load;
}

void set_stats(Row& r, const Stats& s)
{
    r.seconds = s.median;
    r.seconds_min = s.min;
    r.seconds_max = s.max;
    r.repeats = s.repeats;
    r.pairs_per_second =
        s.median > 0 ? static_cast<double>(r.m) * static_cast<double>(r.n) * r.iterations / s.median : 0;
}

double utilisation(const Row& r, KernelModel kernel)
{
    meanshift::model::Workload w;
    w.n = r.n;
    w.k = r.k;
    w.m = r.m;
    w.kernel = kernel;
    w.topology.ppus = r.z;
    w.topology.pus_per_ppu = r.tau;
    w.topology.f_vppu = r.f_vppu;
    w.topology.f_load = r.f_load;
    try {
        return meanshift::model::cost_terms(w).utilisation;
    } catch (const meanshift::Error&) {
        return 0;
    }
}

void skipped(const std::string& what, const std::exception& e)
{
    std::cerr << "skipped " << what << ": " << e.what() << '\n';
}

// One-step timing of m modes on a bound bench, written as one row.
void step_row(const std::string& sweep, const SweepConfig& c, StepBench& bench, const meanshift::PreparedData& data,
              const Topology& requested, Index m, CsvWriter& out, std::vector<Row>* keep = nullptr,
              const std::string& note = {})
{
    Row r = base_row(sweep, c, bench.name(), bench.device());
    r.n = data.n();
    r.m = m;
    r.note = note;
    try {
        set_topology(r, bench.bind(data, requested));
        set_stats(r, bench.time_step(m, c.repeats, c.min_seconds, c.cpu_clock));
        if (c.cpu_clock) r.note += std::string(r.note.empty() ? "" : "; ") + "cpu clock";
    } catch (const meanshift::InvalidArgument& e) {
        skipped(sweep + " n=" + std::to_string(r.n) + " " + requested.to_string(), e);
        return;
    } catch (const meanshift::NotSupported& e) {
        skipped(sweep + " n=" + std::to_string(r.n), e);
        return;
    }
    r.utilisation = utilisation(r, kernel_of(c.kernel));
    out.write(r);
    if (keep) keep->push_back(r);
}

meanshift::PreparedData step_data(const SweepConfig& c, Index n)
{
    const meanshift::MatrixF x = make_blobs(n, c.k, c.centres, c.std_dev, c.seed);
    return prepare_for_steps(x, c.bandwidth, kernel_of(c.kernel), c.seed);
}

bool is_gpu_backend(const std::string& b)
{
    return b == "cuda" || b == "opencl";
}

}  // namespace

void sweep_n(const SweepConfig& c, CsvWriter& out)
{
    StepBench bench(c.backend, c.backend_options);
    for (long long n : c.n_list) {
        const auto data = step_data(c, n);
        step_row("n", c, bench, data, c.topology, c.modes > 0 ? c.modes : n, out);
    }
}

void sweep_fload(const SweepConfig& c, CsvWriter& out)
{
    StepBench bench(c.backend, c.backend_options);
    for (long long n : c.n_list) {
        const auto data = step_data(c, n);
        for (int fv : c.f_vppu_list)
            for (int fl : c.f_load_list) {
                const int f_load = fl == 0 ? fv : fl;
                if (f_load > fv) continue;
                Topology t = c.topology;
                t.f_vppu = fv;
                t.f_load = f_load;
                step_row("fload", c, bench, data, t, c.modes > 0 ? c.modes : n, out);
            }
    }
}

void sweep_preload(const SweepConfig& c, CsvWriter& out)
{
    // One backend instance per option set: preloading is chosen when the backend is created.
    std::vector<std::pair<SweepConfig, std::unique_ptr<StepBench>>> variants;
    auto add = [&](bool on, int size) {
        SweepConfig v = c;
        v.backend_options.preload = on ? meanshift::Preload::On : meanshift::Preload::Off;
        v.backend_options.preload_size = size;
        try {
            variants.emplace_back(v, std::make_unique<StepBench>(c.backend, v.backend_options));
        } catch (const meanshift::Error& e) {
            skipped("preload=" + std::to_string(on) + " size=" + std::to_string(size), e);
        }
    };
    add(false, 0);
    for (int s : c.preload_sizes) add(true, s);
    for (long long n : c.n_list) {
        const auto data = step_data(c, n);
        for (auto& [v, bench] : variants)
            step_row("preload", v, *bench, data, c.topology, c.modes > 0 ? c.modes : n, out);
    }
}

void sweep_error(const SweepConfig& c, CsvWriter& out)
{
    // Paper 001, Sec. V: ε = 0, m_it = 100, t_d = 1e-5, integer 3-D tuples; eq. 7-8 between the
    // backend's modes and the float64 serial oracle's.
    meanshift::Options opt;
    opt.bandwidth = meanshift::Bandwidth::isotropic(c.bandwidth);
    opt.max_iterations = 100;
    opt.tolerance = 1e-5;
    opt.merge_eps = 0;
    opt.backend_options = c.backend_options;
    opt.topology = c.topology;
    meanshift::Options ref = opt;
    ref.backend = "serial";
    ref.backend_options = {};
    ref.topology = {};
    opt.backend = c.backend;
    for (long long n : c.n_list) {
        if (n > c.serial_max_n) {
            std::cerr << "error sweep: n=" << n
                      << " skipped, the serial oracle is capped at --serial-max-n=" << c.serial_max_n << '\n';
            continue;
        }
        const meanshift::MatrixF x = make_integer_tuples(n, c.k, c.centres, c.std_dev, c.seed);
        meanshift::Result rb, rs;
        const Stats sb = time_cluster(x, opt, c.repeats, is_gpu_backend(c.backend), &rb);
        time_cluster(x, ref, 1, false, &rs);
        double sum = 0, worst = 0;
        for (Index i = 0; i < n; ++i) {
            const double pos = (rb.modes.row(i).cast<double>() - rs.modes.row(i).cast<double>()).cwiseAbs().sum();
            sum += pos;
            worst = std::max(worst, pos);
        }
        Row r = base_row("error", c, rb.backend, "");
        r.n = n;
        r.m = n;
        set_topology(r, rb.topology);
        r.iterations = rb.timing.iterations;
        set_stats(r, sb);
        r.error = sum / static_cast<double>(n);
        r.error_max = worst;
        r.note = "clusters " + std::to_string(rb.centres.rows()) + " vs serial " + std::to_string(rs.centres.rows());
        out.write(r);
    }
}

namespace {

struct ClusterMeasurement {
    Stats stats;
    meanshift::Result result;
};

ClusterMeasurement measure_blobs(const SweepConfig& c, const meanshift::MatrixF& x, const std::string& backend,
                                 const meanshift::BackendOptions& bopt)
{
    meanshift::Options opt;
    opt.backend = backend;
    opt.backend_options = backend == "serial" ? meanshift::BackendOptions{} : bopt;
    opt.topology = backend == "serial" ? Topology{} : c.topology;
    opt.bandwidth = meanshift::Bandwidth::isotropic(c.bandwidth);
    opt.fixed_iterations = c.iterations;
    ClusterMeasurement m;
    m.stats = time_cluster(x, opt, backend == "serial" ? 1 : c.repeats, is_gpu_backend(backend), &m.result);
    return m;
}

}  // namespace

void sweep_blobs(const SweepConfig& c, CsvWriter& out)
{
    std::vector<std::string> backends = c.backends.empty() ? std::vector<std::string>{c.backend} : c.backends;
    // The serial oracle first, so every other backend's row can carry its speedup.
    std::stable_partition(backends.begin(), backends.end(), [](const std::string& b) { return b == "serial"; });
    for (long long n : c.n_list) {
        const meanshift::MatrixF x = make_blobs(n, c.k, c.centres, c.std_dev, c.seed);
        double serial_seconds = 0;
        for (const std::string& b : backends) {
            if (b == "serial" && n > c.serial_max_n) {
                std::cerr << "blobs: serial not run at n=" << n << " (> --serial-max-n=" << c.serial_max_n << ")\n";
                continue;
            }
            if (b != "serial" && c.max_n > 0 && n > c.max_n) {
                std::cerr << "blobs: " << b << " not run at n=" << n << " (> --max-n=" << c.max_n << ")\n";
                continue;
            }
            ClusterMeasurement m;
            try {
                m = measure_blobs(c, x, b, c.backend_options);
            } catch (const meanshift::BackendUnavailable& e) {
                skipped("blobs backend " + b, e);
                continue;
            }
            Row r = base_row("blobs", c, m.result.backend, "");
            r.kernel = "shared";
            r.n = n;
            r.m = n;
            r.iterations = c.iterations;
            if (b == "serial") r.preload = r.preload_size = r.threads = 0;
            set_topology(r, m.result.topology);
            set_stats(r, m.stats);
            r.utilisation = utilisation(r, KernelModel::Shared);
            if (b == "serial") serial_seconds = m.stats.median;
            if (serial_seconds > 0 && b != "serial") r.speedup = serial_seconds / m.stats.median;
            // 10 fixed iterations leave a few stragglers between the blobs as tiny extra groups: say how
            // many points the `centres` largest clusters hold, so a wrong clustering is visible.
            Index top = 0;
            for (std::size_t g = 0; g < m.result.cluster_sizes.size() && g < static_cast<std::size_t>(c.centres); ++g)
                top += m.result.cluster_sizes[g];
            r.note = "clusters=" + std::to_string(m.result.centres.rows()) + "; largest " + std::to_string(c.centres) +
                     " hold " + std::to_string(100.0 * static_cast<double>(top) / static_cast<double>(n)).substr(0, 5) +
                     "%" + (r.speedup > 0 ? "; speedup vs serial" : "");
            out.write(r);
        }
    }
}

void sweep_threads(const SweepConfig& c, CsvWriter& out)
{
    for (long long n : c.n_list) {
        const meanshift::MatrixF x = make_blobs(n, c.k, c.centres, c.std_dev, c.seed);
        double serial_seconds = 0;
        if (n <= c.serial_max_n) {
            ClusterMeasurement s = measure_blobs(c, x, "serial", {});
            serial_seconds = s.stats.median;
            Row r = base_row("threads", c, "serial", "");
            r.n = r.m = n;
            r.iterations = c.iterations;
            r.preload = r.preload_size = 0;
            r.threads = 1;
            set_topology(r, s.result.topology);
            set_stats(r, s.stats);
            r.note = "reference";
            out.write(r);
        }
        for (int t : c.threads_list) {
            meanshift::BackendOptions bo = c.backend_options;
            bo.threads = t;
            ClusterMeasurement m;
            try {
                m = measure_blobs(c, x, c.backend, bo);
            } catch (const meanshift::Error& e) {
                skipped("threads=" + std::to_string(t), e);
                continue;
            }
            Row r = base_row("threads", c, m.result.backend, "");
            r.n = r.m = n;
            r.iterations = c.iterations;
            r.threads = t;
            set_topology(r, m.result.topology);
            set_stats(r, m.stats);
            r.utilisation = utilisation(r, KernelModel::Shared);
            if (serial_seconds > 0) r.speedup = serial_seconds / m.stats.median;
            r.note = r.speedup > 0 ? "speedup vs serial" : "";
            out.write(r);
        }
    }
}

void sweep_cutoff(const SweepConfig& c, CsvWriter& out)
{
    for (long long n : c.n_list) {
        const meanshift::MatrixF x = make_blobs(n, c.k, c.centres, c.std_dev, c.seed);
        for (double cut : c.cutoff_list) {
            meanshift::Options opt;
            opt.backend = c.backend;
            opt.backend_options = c.backend_options;
            opt.topology = c.topology;
            opt.bandwidth = meanshift::Bandwidth::isotropic(c.bandwidth);
            opt.fixed_iterations = c.iterations;
            opt.seeding = meanshift::Seeding::AllPoints;  // m = n modes every step: the model's workload
            opt.cutoff = cut;
            opt.search = std::isfinite(cut) ? meanshift::NeighbourSearch::Grid : meanshift::NeighbourSearch::BruteForce;
            opt.grouping = meanshift::GroupingMethod::None;  // time the steps, not Alg. 6
            meanshift::Result res;
            Stats s;
            try {
                s = time_cluster(x, opt, c.repeats, is_gpu_backend(c.backend), &res);
            } catch (const meanshift::Error& e) {
                skipped("cutoff " + std::to_string(cut), e);
                continue;
            }
            Row r = base_row("cutoff", c, res.backend, "");
            r.n = r.m = n;
            r.iterations = c.iterations;
            set_topology(r, res.topology);
            set_stats(r, s);
            r.candidates = res.timing.pair_interactions / std::max(1, res.timing.iterations);
            r.utilisation = utilisation(r, KernelModel::Shared);
            r.note = "cutoff " + std::to_string(cut).substr(0, 4) + "; " + res.search;
            out.write(r);
        }
    }
}

void sweep_model(const SweepConfig& c, CsvWriter& out, std::vector<Row>* rows)
{
    StepBench bench(c.backend, c.backend_options);
    const std::vector<int> fvs = c.f_vppu_list.empty() ? std::vector<int>{c.topology.f_vppu} : c.f_vppu_list;
    const std::vector<int> fls = c.f_load_list.empty() ? std::vector<int>{c.topology.f_load} : c.f_load_list;
    const std::vector<double> fr = c.mode_fractions.empty() ? std::vector<double>{1.0} : c.mode_fractions;
    for (long long n : c.n_list) {
        const auto data = step_data(c, n);
        for (int fv : fvs)
            for (int fl : fls) {
                if (fv > 0 && fl > fv) continue;
                Topology t = c.topology;
                t.f_vppu = fv;
                t.f_load = fl;
                for (double f : fr) {
                    const Index m = std::max<Index>(1, static_cast<Index>(std::llround(f * static_cast<double>(n))));
                    step_row("model", c, bench, data, t, m, out, rows);
                }
            }
    }
}

void remeasure_model_rows(const SweepConfig& c, std::vector<Row>& rows, const std::vector<std::size_t>& which)
{
    StepBench bench(c.backend, c.backend_options);
    std::map<long long, std::vector<std::size_t>> by_n;  // one data set per n, as in sweep_model
    for (std::size_t i : which) by_n[rows[i].n].push_back(i);
    for (const auto& [n, list] : by_n) {
        const auto data = step_data(c, n);
        for (std::size_t i : list) {
            Row& r = rows[i];
            Topology t;
            t.ppus = r.z;
            t.pus_per_ppu = r.tau;
            t.f_vppu = r.f_vppu;
            t.f_load = r.f_load;
            bench.bind(data, t);
            const Stats s = bench.time_step(r.m, c.repeats, c.min_seconds, c.cpu_clock);
            std::cerr << "re-measured model n=" << r.n << " m=" << r.m << " " << t.to_string() << ": min "
                      << r.seconds_min << " s -> " << s.min << " s\n";
            r.seconds_min = std::min(r.seconds_min, s.min);
            r.repeats += s.repeats;
        }
    }
}

}  // namespace experiment
