// bench_cpu_baseline: how many Gaussian pair interactions per second the openmp backend makes,
// against the plain way to write the loop (plain_loop.cpp: `#pragma omp parallel for` over the
// modes, `#pragma omp simd` over the points, libmvec expf), on the same data in the same run.
//
//   bench_cpu_baseline [--n N] [--modes M] [--variant-modes V] [--reps R] [--threads Z]
//
// Data: three Gaussian blobs in k = 3 dimensions, isotropic bandwidth h = 1 (so the data are
// already in the unit-bandwidth units the backend receives), every point a mode (M = N). One
// iteration (one step() for all modes) is timed, best of R repetitions; pairs = modes × points.
// Prints a readable table, then one JSON line with every figure.
#include <meanshift/meanshift.hpp>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

void plain_loop_256(const float* x, const float* y, const float* z, long n, const float* modes, long m,
                    float* out, int threads);
void plain_loop_512(const float* x, const float* y, const float* z, long n, const float* modes, long m,
                    float* out, int threads);

namespace {

using namespace meanshift;

struct Args {
    Index n = 30000;
    Index modes = 0;           // 0 = n
    Index variant_modes = 6144;
    int reps = 3;
    int threads = 0;           // 0 = all
};

Args parse(int argc, char** argv)
{
    Args a;
    for (int i = 1; i < argc; ++i) {
        auto value = [&](const char* flag) -> long {
            if (i + 1 >= argc) throw InvalidArgument(std::string(flag) + " needs a value");
            return std::strtol(argv[++i], nullptr, 10);
        };
        if (!std::strcmp(argv[i], "--n")) a.n = value("--n");
        else if (!std::strcmp(argv[i], "--modes")) a.modes = value("--modes");
        else if (!std::strcmp(argv[i], "--variant-modes")) a.variant_modes = value("--variant-modes");
        else if (!std::strcmp(argv[i], "--reps")) a.reps = static_cast<int>(value("--reps"));
        else if (!std::strcmp(argv[i], "--threads")) a.threads = static_cast<int>(value("--threads"));
        else throw InvalidArgument(std::string("unknown argument ") + argv[i]);
    }
    if (a.n < 1 || a.reps < 1 || a.threads < 0 || a.modes < 0 || a.variant_modes < 1)
        throw InvalidArgument("arguments must be positive");
    if (a.modes == 0) a.modes = a.n;
    a.modes = std::min(a.modes, a.n);
    a.variant_modes = std::min(a.variant_modes, a.n);
    if (a.threads == 0) a.threads = omp_get_max_threads();
    return a;
}

/// Three blobs (σ = 1, centres 6 apart), centred on the origin like the skeleton's preparation.
PreparedData make_blobs(Index n, bool per_point)
{
    const int k = 3;
    const double centres[3][3] = {{-3, -2, 0}, {3, -2, 1}, {0, 3, -1}};
    std::mt19937_64 rng(20261122);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> variance(0.5, 2.0);
    PreparedData D;
    D.model = per_point ? KernelModel::PerPoint : KernelModel::Shared;
    D.points.resize(n, k);
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d) D.points(i, d) = centres[i % 3][d] + normal(rng);
    if (per_point) {  // diagonal H_i with variances in [0.5, 2]
        D.precision.resize(n, k);
        D.log_weight.resize(n);
        for (Index i = 0; i < n; ++i) {
            double log_det = 0;
            for (int d = 0; d < k; ++d) {
                const double h = variance(rng);
                D.precision(i, d) = 1.0 / h;
                log_det += std::log(h);
            }
            D.log_weight[i] = -0.5 * log_det;
        }
        D.log_weight.array() -= D.log_weight.maxCoeff();
        D.precision_f = D.precision.cast<float>();
        D.log_weight_f = D.log_weight.cast<float>();
    }
    D.points_f = D.points.cast<float>();
    return D;
}

double best_seconds(int reps, const std::function<void()>& run)
{
    run();  // warm-up: page faults, thread pool start, frequency ramp
    double best = 1e300;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        run();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

struct Figure {
    std::string name;
    int threads = 0;
    double pairs_per_second = 0;
    std::string topology;
};

/// One openmp step over `modes` modes (the first data points), pairs/s; stores the result.
Figure time_backend(const std::string& label, const PreparedData& D, Index modes, Topology req,
                    int threads, int reps, std::vector<double>* result = nullptr)
{
    BackendOptions o;
    o.threads = threads;
    auto backend = make_backend("openmp", o);
    const Topology t = backend->resolve_topology(req, D);
    backend->bind(D, t);
    const int k = D.k();
    std::vector<double> pos(D.points.data(), D.points.data() + modes * k), out(pos.size());
    StepRequest s;
    s.positions = pos.data();
    s.out = out.data();
    s.count = modes;
    const double sec = best_seconds(reps, [&] { backend->step(s); });
    if (result) *result = out;
    return {label, threads, double(modes) * double(D.n()) / sec, t.to_string()};
}

Figure time_plain(const char* label, decltype(&plain_loop_256) fn, const PreparedData& D, Index modes,
                  int threads, int reps, std::vector<float>* result = nullptr)
{
    const Index n = D.n();
    std::vector<float> x(n), y(n), z(n), m(D.points_f.data(), D.points_f.data() + modes * 3), out(m.size());
    for (Index i = 0; i < n; ++i) {
        x[i] = D.points_f(i, 0);
        y[i] = D.points_f(i, 1);
        z[i] = D.points_f(i, 2);
    }
    const double sec = best_seconds(reps, [&] { fn(x.data(), y.data(), z.data(), n, m.data(), modes, out.data(), threads); });
    if (result) *result = out;
    return {label, threads, double(modes) * double(n) / sec, "plain loop"};
}

std::string json_escape(const std::string& s)
{
    std::string r;
    for (char c : s) r += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    return r;
}

}  // namespace

int main(int argc, char** argv)
try {
    const Args a = parse(argc, argv);
    const PreparedData shared = make_blobs(a.n, false);
    const PreparedData per_point = make_blobs(a.n, true);
    const std::string device = make_backend("openmp")->devices().front().name;
    std::printf("bench_cpu_baseline: n = %lld points, k = 3, %lld modes, %d threads, openmp device: %s\n",
                (long long)a.n, (long long)a.modes, a.threads, device.c_str());

    // (a) plain loops and (b) the backend, all threads, then one thread (per-core figures).
    std::vector<Figure> figs;
    std::vector<float> plain_out;
    std::vector<double> ours_out;
    for (int z : {a.threads, 1}) {
        const Index m = z == a.threads ? a.modes : std::max<Index>(1, a.modes / a.threads);
        figs.push_back(time_plain("plain omp simd + libmvec expf (256-bit)", &plain_loop_256, shared, m, z, a.reps,
                                  z == a.threads ? &plain_out : nullptr));
        figs.push_back(time_plain("plain omp simd + libmvec expf (512-bit)", &plain_loop_512, shared, m, z, a.reps));
        figs.push_back(time_backend("openmp backend step (default topology)", shared, m, {}, z, a.reps,
                                    z == a.threads ? &ours_out : nullptr));
    }
    double max_diff = 0;
    for (std::size_t i = 0; i < plain_out.size(); ++i)
        max_diff = std::max(max_diff, std::fabs(double(plain_out[i]) - ours_out[i]));

    auto ratio_for = [&](int z) {
        double plain = 0, ours = 0;
        for (const Figure& f : figs) {
            if (f.threads != z) continue;
            if (f.topology == "plain loop") plain = std::max(plain, f.pairs_per_second);
            else ours = f.pairs_per_second;
        }
        return std::make_pair(plain, ours);
    };
    const auto all = ratio_for(a.threads), one = ratio_for(1);

    // Whole-pipeline figure through the public API: cluster() with one fixed iteration.
    double cluster_pps = 0;
    {
        Options opt;
        opt.backend = "openmp";
        opt.backend_options.threads = a.threads;
        opt.fixed_iterations = 1;
        opt.bandwidth = Bandwidth::isotropic(1.0);
        const MatrixF data = shared.points_f;
        const MatrixF seeds = data.topRows(a.modes);
        const Eigen::Ref<const MatrixF> seeds_ref(seeds);
        Result r = cluster(data, opt, &seeds_ref);
        for (int rep = 0; rep < a.reps; ++rep)
            cluster_pps = std::max(cluster_pps, cluster(data, opt, &seeds_ref).timing.pairs_per_second());
    }

    // Topology and kernel-model variants, all threads, fewer modes (pairs/s does not depend on it
    // once every thread has blocks).
    std::vector<Figure> var;
    const Index vm = a.variant_modes;
    auto topo = [](int tau, int f_vppu, int f_load) {
        Topology t;
        t.pus_per_ppu = tau;
        t.f_vppu = f_vppu;
        t.f_load = f_load;
        return t;
    };
    const int tau = make_backend("openmp")->devices().front().pus_per_ppu;
    var.push_back(time_backend("shared, f_vppu=1 (one mode per lane)", shared, vm, topo(tau, 1, 1), a.threads, a.reps));
    for (int w : {8, 4})
        if (w < tau)
            var.push_back(time_backend("shared, narrower ISA tau=" + std::to_string(w), shared, vm, topo(w, 1, 1), a.threads, a.reps));
    for (int g = 2; g <= tau; g *= 2) {
        var.push_back(time_backend("shared, f_vppu=" + std::to_string(g) + " f_load=" + std::to_string(g), shared, vm,
                                   topo(tau, g, g), a.threads, a.reps));
        var.push_back(time_backend("shared, f_vppu=" + std::to_string(g) + " f_load=" + std::to_string(g / 2), shared,
                                   vm, topo(tau, g, g / 2), a.threads, a.reps));
    }
    var.push_back(time_backend("shared, f_vppu=tau f_load=1", shared, vm, topo(tau, tau, 1), a.threads, a.reps));
    var.push_back(time_backend("per-point diagonal, f_vppu=1", per_point, vm, topo(tau, 1, 1), a.threads, a.reps));
    var.push_back(time_backend("per-point diagonal, f_vppu=tau", per_point, vm, topo(tau, tau, tau), a.threads, a.reps));

    std::printf("\n%-44s %7s %14s  %s\n", "variant", "threads", "pairs/s", "topology");
    for (const auto* list : {&figs, &var})
        for (const Figure& f : *list)
            std::printf("%-44s %7d %14.3e  %s\n", f.name.c_str(), f.threads, f.pairs_per_second, f.topology.c_str());
    std::printf("cluster(fixed_iterations=1) through the public API: %.3e pairs/s (iterate phase)\n", cluster_pps);
    std::printf("max |plain - openmp| after one step: %.3g (unit bandwidth)\n", max_diff);
    std::printf("RESULT: %d threads: openmp %.3e pairs/s vs best plain loop %.3e -> ratio %.2f; "
                "1 thread: %.3e vs %.3e -> ratio %.2f\n",
                a.threads, all.second, all.first, all.second / all.first, one.second, one.first, one.second / one.first);

    std::ostringstream js;
    js << "{\"bench\":\"cpu_baseline\",\"n\":" << a.n << ",\"k\":3,\"modes\":" << a.modes << ",\"threads\":" << a.threads
       << ",\"device\":\"" << json_escape(device) << "\",\"plain_pairs_per_s\":" << all.first
       << ",\"openmp_pairs_per_s\":" << all.second << ",\"ratio\":" << all.second / all.first
       << ",\"plain_pairs_per_s_1thread\":" << one.first << ",\"openmp_pairs_per_s_1thread\":" << one.second
       << ",\"ratio_1thread\":" << one.second / one.first << ",\"cluster_api_pairs_per_s\":" << cluster_pps
       << ",\"max_abs_diff\":" << max_diff << ",\"figures\":[";
    bool first = true;
    for (const auto* list : {&figs, &var})
        for (const Figure& f : *list) {
            js << (first ? "" : ",") << "{\"name\":\"" << json_escape(f.name) << "\",\"threads\":" << f.threads
               << ",\"pairs_per_s\":" << f.pairs_per_second << ",\"topology\":\"" << json_escape(f.topology) << "\"}";
            first = false;
        }
    js << "]}";
    std::printf("%s\n", js.str().c_str());
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cpu_baseline: %s\n", e.what());
    return 1;
}
