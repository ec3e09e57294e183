// bench_cpu_baseline: how many Gaussian pair interactions per second the openmp backend makes,
// against the plain way to write the loop (plain_loop.cpp: `#pragma omp parallel for` over the
// modes, `#pragma omp simd` over the points, libmvec expf), on the same data in the same run.
//
//   bench_cpu_baseline [--n N] [--modes M] [--variant-modes V] [--reps R] [--threads Z]
//
// Data: three Gaussian blobs in k = 3 dimensions, isotropic bandwidth h = 1 (so the data are
// already in the unit-bandwidth units the backend receives), every point a mode (M = N). One
// iteration (one step() for all modes) is timed, best of R interleaved repetitions; pairs =
// modes × points. One-thread figures are also given from the thread's CPU time, which other
// processes on a shared machine cannot inflate. Prints a readable table, then one JSON line.
#include <meanshift/meanshift.hpp>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

void plain_loop_256(const float* x, const float* y, const float* z, long n, const float* modes, long m, float* out,
                    int threads);
void plain_loop_512(const float* x, const float* y, const float* z, long n, const float* modes, long m, float* out,
                    int threads);
void plain_loop_aos_256(const float* points, long n, const float* modes, long m, float* out, int threads);
void plain_loop_aos_512(const float* points, long n, const float* modes, long m, float* out, int threads);

namespace {

using namespace meanshift;

struct Args {
    Index n = 30000;
    Index modes = 0;  // 0 = n
    Index variant_modes = 6144;
    int reps = 3;
    int threads = 0;  // 0 = all
};

Args parse(int argc, char** argv)
{
    Args a;
    for (int i = 1; i < argc; ++i) {
        auto value = [&](const char* flag) -> long {
            if (i + 1 >= argc) throw InvalidArgument(std::string(flag) + " needs a value");
            return std::strtol(argv[++i], nullptr, 10);
        };
        if (!std::strcmp(argv[i], "--n"))
            a.n = value("--n");
        else if (!std::strcmp(argv[i], "--modes"))
            a.modes = value("--modes");
        else if (!std::strcmp(argv[i], "--variant-modes"))
            a.variant_modes = value("--variant-modes");
        else if (!std::strcmp(argv[i], "--reps"))
            a.reps = static_cast<int>(value("--reps"));
        else if (!std::strcmp(argv[i], "--threads"))
            a.threads = static_cast<int>(value("--threads"));
        else
            throw InvalidArgument(std::string("unknown argument ") + argv[i]);
    }
    if (a.n < 1 || a.reps < 1 || a.threads < 0 || a.modes < 0 || a.variant_modes < 1)
        throw InvalidArgument("arguments must be positive");
    if (a.modes == 0) a.modes = a.n;
    a.modes = std::min(a.modes, a.n);
    a.variant_modes = std::min(a.variant_modes, a.n);
    if (a.threads == 0) a.threads = omp_get_max_threads();
    return a;
}

/// Three blobs (σ = 1, centres 6 apart), centred on the origin like the skeleton's preparation;
/// dimensions beyond the third are pure N(0, 1) noise.
PreparedData make_blobs(Index n, bool per_point, int k = 3)
{
    const double centres[3][3] = {{-3, -2, 0}, {3, -2, 1}, {0, 3, -1}};
    std::mt19937_64 rng(20261122);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> variance(0.5, 2.0);
    PreparedData D;
    D.model = per_point ? KernelModel::PerPoint : KernelModel::Shared;
    D.points.resize(n, k);
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d) D.points(i, d) = (d < 3 ? centres[i % 3][d] : 0.0) + normal(rng);
    if (per_point) {  // diagonal H_i with variances in [0.5, 2]
        D.precision.resize(n, k);
        for (Index i = 0; i < n; ++i)
            for (int d = 0; d < k; ++d) D.precision(i, d) = 1.0 / variance(rng);
    }
    D.finalize();
    return D;
}

double now_wall()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// CPU time of the calling thread: with one OpenMP thread the parallel region runs on it, and
/// this figure is immune to other processes sharing the cores (the wall time is not).
double now_thread_cpu()
{
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

/// One timed case: a closure doing one full iteration over `pairs` pair interactions.
struct Case {
    std::string name;
    std::string topology;
    int threads = 0;
    double pairs = 0;
    std::function<void()> run;
    double best_wall = 1e300, best_cpu = 1e300;
    double wall_pps() const { return pairs / best_wall; }
    double cpu_pps() const { return pairs / best_cpu; }
};

/// Runs every case once to warm up, then `reps` rounds in which each case runs once; keeps the
/// best time of each. Interleaving makes a burst of load from other processes hit all cases alike.
void measure(std::vector<Case>& cases, int reps)
{
    for (Case& c : cases) c.run();
    for (int r = 0; r < reps; ++r)
        for (Case& c : cases) {
            const double w0 = now_wall(), c0 = now_thread_cpu();
            c.run();
            c.best_cpu = std::min(c.best_cpu, now_thread_cpu() - c0);
            c.best_wall = std::min(c.best_wall, now_wall() - w0);
        }
}

/// A case running one step of the openmp backend on the first `modes` data points as modes.
Case backend_case(const std::string& label, const PreparedData& D, Index modes, Topology req, int threads,
                  std::vector<double>* result = nullptr)
{
    BackendOptions o;
    o.threads = threads;
    std::shared_ptr<Backend> backend = make_backend("openmp", o);
    const Topology t = backend->resolve_topology(req, D);
    std::shared_ptr<Binding> binding = backend->bind(std::make_shared<const PreparedData>(D), t);
    const int k = D.k();
    auto pos = std::make_shared<std::vector<double>>(D.points.data(), D.points.data() + modes * k);
    auto out = std::make_shared<std::vector<double>>(pos->size());
    Case c;
    c.name = label;
    c.topology = t.to_string();
    c.threads = threads;
    c.pairs = double(modes) * double(D.n());
    // Every run steps the same starting positions (set_modes + one step + read back), so the
    // repetitions time identical work.
    c.run = [binding, pos, out, modes, result] {
        binding->step_once(pos->data(), out->data(), modes);
        if (result) *result = *out;
    };
    return c;
}

/// A case running the row-major plain loop (plain_loop.cpp) on the same data.
Case plain_aos_case(const char* label, decltype(&plain_loop_aos_256) fn, const PreparedData& D, Index modes,
                    int threads)
{
    const Index n = D.n();
    auto pts = std::make_shared<std::vector<float>>(D.points_f.data(), D.points_f.data() + n * 3);
    auto m = std::make_shared<std::vector<float>>(D.points_f.data(), D.points_f.data() + modes * 3);
    auto out = std::make_shared<std::vector<float>>(m->size());
    Case c;
    c.name = label;
    c.topology = "plain loop";
    c.threads = threads;
    c.pairs = double(modes) * double(n);
    c.run = [=] { fn(pts->data(), n, m->data(), modes, out->data(), threads); };
    return c;
}

/// A case running a plain loop (plain_loop.cpp) on the same data, stored as x, y, z arrays.
Case plain_case(const char* label, decltype(&plain_loop_256) fn, const PreparedData& D, Index modes, int threads,
                std::vector<float>* result = nullptr)
{
    const Index n = D.n();
    auto xyz = std::make_shared<std::vector<float>>(3 * n);
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < 3; ++d) (*xyz)[d * n + i] = D.points_f(i, d);
    auto m = std::make_shared<std::vector<float>>(D.points_f.data(), D.points_f.data() + modes * 3);
    auto out = std::make_shared<std::vector<float>>(m->size());
    Case c;
    c.name = label;
    c.topology = "plain loop";
    c.threads = threads;
    c.pairs = double(modes) * double(n);
    c.run = [=] {
        fn(xyz->data(), xyz->data() + n, xyz->data() + 2 * n, n, m->data(), modes, out->data(), threads);
        if (result) *result = *out;
    };
    return c;
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

    // (a) plain loops and (b) the backend, all threads, then one thread (per-core figures; the
    // one-thread runs use fewer modes so that they take about as long).
    std::vector<float> plain_out;
    std::vector<double> ours_out;
    std::vector<Case> main_all, main_one;
    const Index m1 = std::max<Index>(1, a.modes / a.threads);
    main_all.push_back(
        plain_case("plain omp simd + libmvec expf (256-bit)", &plain_loop_256, shared, a.modes, a.threads, &plain_out));
    main_all.push_back(
        plain_case("plain omp simd + libmvec expf (512-bit)", &plain_loop_512, shared, a.modes, a.threads));
    main_all.push_back(
        plain_aos_case("plain loop, row-major points (256-bit)", &plain_loop_aos_256, shared, a.modes, a.threads));
    main_all.push_back(
        plain_aos_case("plain loop, row-major points (512-bit)", &plain_loop_aos_512, shared, a.modes, a.threads));
    main_all.push_back(
        backend_case("openmp backend step (default topology)", shared, a.modes, {}, a.threads, &ours_out));
    main_one.push_back(plain_case("plain omp simd + libmvec expf (256-bit)", &plain_loop_256, shared, m1, 1));
    main_one.push_back(plain_case("plain omp simd + libmvec expf (512-bit)", &plain_loop_512, shared, m1, 1));
    main_one.push_back(plain_aos_case("plain loop, row-major points (256-bit)", &plain_loop_aos_256, shared, m1, 1));
    main_one.push_back(plain_aos_case("plain loop, row-major points (512-bit)", &plain_loop_aos_512, shared, m1, 1));
    main_one.push_back(backend_case("openmp backend step (default topology)", shared, m1, {}, 1));
    measure(main_all, a.reps);
    measure(main_one, a.reps);
    double max_diff = 0;
    for (std::size_t i = 0; i < plain_out.size(); ++i)
        max_diff = std::max(max_diff, std::fabs(double(plain_out[i]) - ours_out[i]));

    struct Ratio {
        double plain, ours;
        double ratio() const { return ours / plain; }
    };
    auto ratio = [](const std::vector<Case>& cs, bool cpu) {
        Ratio r{0, 0};
        for (const Case& c : cs) {
            const double v = cpu ? c.cpu_pps() : c.wall_pps();
            if (c.topology == "plain loop")
                r.plain = std::max(r.plain, v);
            else
                r.ours = v;
        }
        return r;
    };
    const Ratio all = ratio(main_all, false), one = ratio(main_one, false), one_cpu = ratio(main_one, true);

    // Whole pipeline through the public API: cluster() with one fixed iteration (iterate phase).
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
        for (int rep = 0; rep <= a.reps; ++rep)
            cluster_pps = std::max(cluster_pps, cluster(data, opt, &seeds_ref).timing.pairs_per_second());
    }

    // Topology, instruction-set and kernel-model variants on one thread (figures per core, from
    // the thread's CPU time and from wall time).
    std::vector<Case> var;
    const Index vm = a.variant_modes;
    auto topo = [](int tau, int f_vppu, int f_load) {
        Topology t;
        t.pus_per_ppu = tau;
        t.f_vppu = f_vppu;
        t.f_load = f_load;
        return t;
    };
    const int tau = make_backend("openmp")->devices().front().pus_per_ppu;
    var.push_back(plain_case("plain omp simd + libmvec expf (512-bit)", &plain_loop_512, shared, vm, 1));
    var.push_back(backend_case("shared, f_vppu=1 (one mode per lane)", shared, vm, topo(tau, 1, 1), 1));
    for (int w : {8, 4})
        if (w < tau)
            var.push_back(
                backend_case("shared, f_vppu=1, narrower ISA tau=" + std::to_string(w), shared, vm, topo(w, 1, 1), 1));
    for (int g = 2; g <= tau; g *= 2) {
        var.push_back(backend_case("shared, f_vppu=" + std::to_string(g) + " f_load=" + std::to_string(g), shared, vm,
                                   topo(tau, g, g), 1));
        var.push_back(backend_case("shared, f_vppu=" + std::to_string(g) + " f_load=" + std::to_string(g / 2), shared,
                                   vm, topo(tau, g, g / 2), 1));
    }
    var.push_back(backend_case("shared, f_vppu=tau f_load=1", shared, vm, topo(tau, tau, 1), 1));
    var.push_back(backend_case("per-point diagonal, f_vppu=1", per_point, vm, topo(tau, 1, 1), 1));
    var.push_back(backend_case("per-point diagonal, f_vppu=tau", per_point, vm, topo(tau, tau, tau), 1));
    measure(var, a.reps);

    // Dimension sweep: default topology, one thread, both kernel models (k ≤ 8 are compiled
    // specialisations, larger k the generic loop).
    std::vector<Case> sweep;
    std::vector<PreparedData> sweep_data;
    const std::vector<int> ks = {1, 2, 3, 4, 6, 8, 9, 17, 64};
    sweep_data.reserve(2 * ks.size());  // cases keep pointers to these
    const Index sm = std::min<Index>(a.n, 2048);
    for (int k : ks)
        for (bool pp : {false, true}) {
            sweep_data.push_back(make_blobs(a.n, pp, k));
            sweep.push_back(backend_case(std::string(pp ? "per-point" : "shared") + ", k=" + std::to_string(k),
                                         sweep_data.back(), sm, {}, 1));
        }
    measure(sweep, a.reps);

    std::printf("\n%-44s %7s %14s %14s  %s\n", "variant", "threads", "pairs/s(wall)", "pairs/s(cpu)", "topology");
    for (const auto* list : {&main_all, &main_one, &var, &sweep})
        for (const Case& c : *list) {
            char cpu[32] = "-";
            if (c.threads == 1) std::snprintf(cpu, sizeof cpu, "%.3e", c.cpu_pps());
            std::printf("%-44s %7d %14.3e %14s  %s\n", c.name.c_str(), c.threads, c.wall_pps(), cpu,
                        c.topology.c_str());
        }
    std::printf("cluster(fixed_iterations=1) through the public API: %.3e pairs/s (iterate phase, wall)\n",
                cluster_pps);
    std::printf("max |plain - openmp| after one step: %.3g (unit bandwidth)\n", max_diff);
    std::printf("RESULT: %d threads: openmp %.3e pairs/s vs best plain loop %.3e -> ratio %.2f (wall); "
                "1 thread: ratio %.2f (wall), %.2f (thread CPU time: %.3e vs %.3e)\n",
                a.threads, all.ours, all.plain, all.ratio(), one.ratio(), one_cpu.ratio(), one_cpu.ours, one_cpu.plain);

    std::ostringstream js;
    js << "{\"bench\":\"cpu_baseline\",\"n\":" << a.n << ",\"k\":3,\"modes\":" << a.modes
       << ",\"threads\":" << a.threads << ",\"device\":\"" << json_escape(device)
       << "\",\"plain_pairs_per_s\":" << all.plain << ",\"openmp_pairs_per_s\":" << all.ours
       << ",\"ratio\":" << all.ratio() << ",\"ratio_1thread_wall\":" << one.ratio()
       << ",\"plain_pairs_per_s_1thread_cpu\":" << one_cpu.plain
       << ",\"openmp_pairs_per_s_1thread_cpu\":" << one_cpu.ours << ",\"ratio_1thread_cpu\":" << one_cpu.ratio()
       << ",\"cluster_api_pairs_per_s\":" << cluster_pps << ",\"max_abs_diff\":" << max_diff << ",\"figures\":[";
    bool first = true;
    for (const auto* list : {&main_all, &main_one, &var, &sweep})
        for (const Case& c : *list) {
            js << (first ? "" : ",") << "{\"name\":\"" << json_escape(c.name) << "\",\"threads\":" << c.threads
               << ",\"pairs_per_s_wall\":" << c.wall_pps();
            if (c.threads == 1) js << ",\"pairs_per_s_cpu\":" << c.cpu_pps();
            js << ",\"topology\":\"" << json_escape(c.topology) << "\"}";
            first = false;
        }
    js << "]}";
    std::printf("%s\n", js.str().c_str());
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cpu_baseline: %s\n", e.what());
    return 1;
}
