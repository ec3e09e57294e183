// bench_cuda: pair interactions per second of the cuda backend's Binding::step() (one mean-shift
// iteration, float32 on the device) and the seeds' end-to-end benchmark through cluster().
// Public API only (meanshift.hpp): tuning through BackendOptions / CudaTuning, kernel time from
// StepReport::kernel_seconds.
//
//   bench_cuda [--n N] [section ...]   sections: throughput tiles modes topology e2e (default: all),
//                                      variants (A/B of the fast kernels' point loops; not in the default)
//   --n N                              points of the throughput runs (default 2^20)
//
// Throughput: every query against every point; "step" is timed around Binding::step() (all modes
// active, retire = false: kernels, the finish kernel and the (index, shift², status) records back
// to the host), "kernel" is StepReport::kernel_seconds (CUDA events around the step's kernels);
// medians of 3 after one warm-up step. Results go to stdout as a table.
#include <meanshift/meanshift.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace ms = meanshift;

namespace {

using Clock = std::chrono::steady_clock;

/// make_blobs as in paper 000: `centres` centres uniform in [-10, 10]^k, isotropic std `sd`.
ms::MatrixF make_blobs(ms::Index n, int k, int centres, double sd, unsigned seed)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> box(-10.0, 10.0);
    std::normal_distribution<double> g(0.0, sd);
    ms::MatrixD c(centres, k);
    for (int i = 0; i < centres; ++i)
        for (int d = 0; d < k; ++d) c(i, d) = box(rng);
    ms::MatrixF x(n, k);
    for (ms::Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d) x(i, d) = static_cast<float>(c(i % centres, d) + g(rng));
    return x;
}

/// What the skeleton hands a backend: centred, whitened (shared) or with per-point precisions.
ms::PreparedData prepare(const ms::MatrixF& raw, double h, ms::KernelModel model, unsigned seed)
{
    ms::PreparedData p;
    p.model = model;
    const ms::Index n = raw.rows();
    const int k = static_cast<int>(raw.cols());
    ms::MatrixD x = raw.cast<double>();
    for (int d = 0; d < k; ++d) {
        const double mid = 0.5 * (x.col(d).minCoeff() + x.col(d).maxCoeff());
        x.col(d).array() -= mid;
    }
    if (model == ms::KernelModel::Shared) {
        p.points = x / h;
    } else {
        std::mt19937_64 rng(seed);
        std::uniform_real_distribution<double> u(0.75, 1.25);
        p.points = x;
        p.precision.resize(n, k);
        for (ms::Index i = 0; i < n; ++i)
            for (int d = 0; d < k; ++d) {
                const double hi = h * u(rng);
                p.precision(i, d) = 1.0 / (hi * hi);
            }
    }
    p.finalize();
    return p;
}

struct Config {
    std::string label;
    ms::Preload preload = ms::Preload::Auto;  // Auto = the backend's default (on)
    int tile = 0;
    int r = 0;  // modes per PU (fast kernels), 0 = default
    ms::Topology topology;
    ms::Index queries = 0;  // 0 = all n
    int variant = 0;  // fast-kernel point loop (CudaTuning::kernel_variant), 0 = default
};

ms::Preload pre(bool on)
{
    return on ? ms::Preload::On : ms::Preload::Off;
}

struct Rate {
    double step = 0;  ///< pairs/s over the whole step()
    double kernel = 0;  ///< pairs/s over the kernels alone
};

/// Median pairs/s of 3 timed steps (after one warm-up) for one configuration.
Rate pairs_per_second(const std::shared_ptr<const ms::PreparedData>& data, const Config& c, ms::Topology* resolved)
{
    ms::BackendOptions o;
    o.preload = c.preload;
    o.preload_size = c.tile;
    o.cuda.modes_per_pu = c.r;
    o.cuda.kernel_variant = c.variant;
    auto b = ms::make_backend("cuda", o);
    const ms::Topology t = b->resolve_topology(c.topology, *data);
    if (resolved) *resolved = t;
    auto binding = b->bind(data, t);
    const ms::Index m = c.queries > 0 ? std::min(c.queries, data->n()) : data->n();
    binding->set_modes(data->points.data(), m);
    ms::StepReport report;
    binding->step(0.0, false, report);  // warm-up; every mode stays active (retire = false)
    std::vector<double> s, kt;
    for (int rep = 0; rep < 3; ++rep) {
        const auto t0 = Clock::now();
        binding->step(0.0, false, report);
        s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        kt.push_back(report.kernel_seconds);
    }
    std::sort(s.begin(), s.end());
    std::sort(kt.begin(), kt.end());
    const double pairs = static_cast<double>(m) * static_cast<double>(data->n());
    return {pairs / s[1], pairs / kt[1]};
}

void row(const char* model, const Config& c, const std::shared_ptr<const ms::PreparedData>& data)
{
    ms::Topology t;
    try {
        const Rate r = pairs_per_second(data, c, &t);
        std::printf("%-9s %-30s %-58s %.3e %.3e\n", model, c.label.c_str(), t.to_string().c_str(), r.step, r.kernel);
    } catch (const std::exception& e) {
        std::printf("%-9s %-30s failed: %s\n", model, c.label.c_str(), e.what());
    }
    std::fflush(stdout);
}

/// Sections named on the command line (empty: the default set).
std::vector<std::string> g_sections;

bool wanted(const char* s, bool by_default = true)
{
    if (g_sections.empty()) return by_default;
    return std::find(g_sections.begin(), g_sections.end(), s) != g_sections.end();
}

}  // namespace

int main(int argc, char** argv)
{
    try {
        for (const auto& s : ms::list_backends())
            if (s.name == "cuda") {
                std::printf("cuda backend: %s%s\n", s.usable ? "usable" : "not usable: ", s.reason.c_str());
                for (const auto& d : s.devices)
                    std::printf("  device %d: %s, %d SMs, %.1f GiB\n", d.index, d.name.c_str(), d.compute_units,
                                d.global_memory / 1073741824.0);
                if (!s.usable) return 77;
            }
        ms::Index n = ms::Index(1) << 20;
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "--n" && i + 1 < argc)
                n = std::atoll(argv[++i]);
            else
                g_sections.push_back(a);
        }
        if (n < 1) throw std::invalid_argument("--n must be >= 1");
        const ms::MatrixF raw = make_blobs(n, 3, 3, 1.5, 42);
        const auto iso = std::make_shared<const ms::PreparedData>(prepare(raw, 2.0, ms::KernelModel::Shared, 1));
        const auto pp = std::make_shared<const ms::PreparedData>(prepare(raw, 2.0, ms::KernelModel::PerPoint, 1));
        std::printf("\nn = %lld points, k = 3, float32, one iteration, pairs/s = queries * n / step time\n",
                    static_cast<long long>(n));
        std::printf("%-9s %-30s %-58s %-9s %s\n", "model", "variant", "topology", "step", "kernel (pairs/s)");

        if (wanted("throughput")) {
            for (const auto* d : {&iso, &pp}) {
                const char* m = d == &iso ? "isotropic" : "per-point";
                row(m, {"default (no tuning)", ms::Preload::Auto, 0, 0, {}, 0}, *d);
                row(m, {"naive (no preload, W=1024)", ms::Preload::Off, 0, 0, {}, 0}, *d);
            }
        }
        if (wanted("variants", false)) {
            // Point-loop variants of the fast kernels (kernel_params.hpp), interleaved and repeated so
            // that drift during the run shows: 1 = run-time W, unroll 2; 2 / 3 = W fixed at compile
            // time, unroll 4 / 8 (per-point in Horner form), at W = 512 and 1024.
            for (int rep = 0; rep < 2; ++rep)
                for (const auto* d : {&iso, &pp})
                    for (int w : {512, 1024})
                        for (int v : {1, 2, 3}) {
                            Config c{"variant " + std::to_string(v) + " W=" + std::to_string(w),
                                     ms::Preload::On,
                                     w,
                                     0,
                                     {},
                                     0};
                            c.variant = v;
                            row(d == &iso ? "isotropic" : "per-point", c, *d);
                        }
        }
        if (wanted("tiles")) {
            for (const auto* d : {&iso, &pp})
                for (bool pre : {true, false})
                    for (int w : {32, 64, 128, 256, 512, 1024}) {
                        Config c{std::string(pre ? "preload" : "naive") + " W=" + std::to_string(w),
                                 ::pre(pre),
                                 w,
                                 0,
                                 {},
                                 0};
                        row(d == &iso ? "isotropic" : "per-point", c, *d);
                    }
        }
        if (wanted("modes")) {
            for (const auto* d : {&iso, &pp})
                for (int r : {2, 4, 8})
                    for (int tau : {128, 256}) {
                        Config c{
                            "r=" + std::to_string(r) + " tau=" + std::to_string(tau), ms::Preload::On, 0, r, {}, 0};
                        c.topology.pus_per_ppu = tau;
                        row(d == &iso ? "isotropic" : "per-point", c, *d);
                    }
        }
        if (wanted("topology")) {
            // Alg. 3 kernels (direct form), 2^14 queries against all n points.
            const int combos[][2] = {{1, 1},   {2, 2},  {4, 4},   {8, 8},     {8, 2},
                                     {32, 32}, {32, 8}, {64, 64}, {128, 128}, {128, 32}};
            for (const auto* d : {&iso, &pp})
                for (bool pre : {false, true})
                    for (const auto& fv : combos) {
                        Config c{std::string("alg3 ") + (pre ? "preload" : "naive") + " fv=" + std::to_string(fv[0]) +
                                     " fl=" + std::to_string(fv[1]),
                                 ::pre(pre),
                                 0,
                                 0,
                                 {},
                                 ms::Index(1) << 14};
                        c.topology.f_vppu = fv[0];
                        c.topology.f_load = fv[1];
                        if (fv[0] == 1) c.topology.f_vppu = 1;  // fast path, for comparison
                        row(d == &iso ? "isotropic" : "per-point", c, *d);
                    }
        }
        if (wanted("e2e")) {
            // Paper 000 / 002: make_blobs 3 centres std 1.5, 1,000,000 points, bandwidth 2, 10 iterations.
            // Seed chosen (first from 7 up) so that the three centres are ≥ 8 apart: three clusters
            // exist; closer centres merge at bandwidth 2, which says nothing about speed.
            unsigned seed = 7;
            for (;; ++seed) {
                const ms::MatrixF c = make_blobs(3, 3, 3, 1e-9, seed);
                if ((c.row(0) - c.row(1)).norm() >= 8 && (c.row(0) - c.row(2)).norm() >= 8 &&
                    (c.row(1) - c.row(2)).norm() >= 8)
                    break;
            }
            const ms::MatrixF x = make_blobs(1000000, 3, 3, 1.5, seed);
            std::printf("\nblob seed %u\n", seed);
            ms::Options opt;
            opt.backend = "cuda";
            opt.bandwidth = ms::Bandwidth::isotropic(2.0);
            opt.fixed_iterations = 10;  // default tuning (preloading on)
            for (int rep = 0; rep < 2; ++rep) {
                const auto t0 = Clock::now();
                const ms::Result r = ms::cluster(x, opt);
                const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
                std::printf("\ne2e 1,000,000 points, k=3, h=2, 10 iterations (run %d): wall %.3f s; total %.3f "
                            "prepare %.3f iterate %.3f group %.3f s; %.3e pairs/s in iterate; %zu clusters\n",
                            rep + 1, wall, r.timing.seconds_total, r.timing.seconds_prepare, r.timing.seconds_iterate,
                            r.timing.seconds_group, r.timing.pairs_per_second(), r.cluster_sizes.size());
                for (std::size_t c = 0; c < std::min<std::size_t>(r.cluster_sizes.size(), 5); ++c)
                    std::printf("  cluster %zu: %lld points at (%.3f, %.3f, %.3f)\n", c,
                                static_cast<long long>(r.cluster_sizes[c]), r.centres(c, 0), r.centres(c, 1),
                                r.centres(c, 2));
                std::fflush(stdout);
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_cuda: %s\n", e.what());
        return 1;
    }
    return 0;
}
