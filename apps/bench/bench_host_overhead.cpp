// bench_host_overhead: host time per mean-shift iteration outside the pair kernels, through the
// public Binding API, on a full-resolution photo's worth of points (n = 273,280 = 640 × 427,
// k = 5: x, y and three colour channels), with every mode active and with 1 % active.
//   host overhead per iteration = wall time of Binding::step() − StepReport::kernel_seconds
// (GPU backends: device time of the step's kernels; serial/openmp: time of the pair loop). It is
// the cost that keeping the modes on the device removes: before, every iteration gathered the
// active modes in float64 on the host, converted them to float32, copied them to the device and
// back and computed the shifts on the host (docs/performance-host-overhead.md).
//
//   bench_host_overhead [--backend NAME] [--n N] [--iterations I] [--tune key=value]...
// Prints one JSON line per (backend, active fraction).
#include <meanshift/meanshift.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace ms = meanshift;

namespace {

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const std::size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

/// Photo-like data in prepared units (spatial bandwidth 8 px, range bandwidth 8 levels): a
/// 640-wide lattice with smooth colour gradients plus noise.
std::shared_ptr<const ms::PreparedData> photo_like(ms::Index n)
{
    auto D = std::make_shared<ms::PreparedData>();
    D->model = ms::KernelModel::Shared;
    D->points.resize(n, 5);
    std::mt19937 rng(42);
    std::normal_distribution<double> noise(0.0, 0.3);
    const ms::Index w = 640;
    for (ms::Index i = 0; i < n; ++i) {
        const double x = double(i % w), y = double(i / w);
        D->points(i, 0) = x / 8.0 - 40.0;
        D->points(i, 1) = y / 8.0 - 27.0;
        D->points(i, 2) = 16.0 * std::sin(x / 97.0) + noise(rng);
        D->points(i, 3) = 16.0 * std::cos(y / 53.0) + noise(rng);
        D->points(i, 4) = 8.0 * std::sin((x + y) / 71.0) + noise(rng);
    }
    D->finalize();
    return D;
}

}  // namespace

int main(int argc, char** argv)
{
    std::string backend = "auto";
    ms::Index n = 273280;
    int iterations = 5;
    ms::BackendOptions bo;
    for (int a = 1; a < argc; ++a) {
        const std::string arg = argv[a];
        auto value = [&]() -> std::string {
            if (a + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", arg.c_str());
                std::exit(2);
            }
            return argv[++a];
        };
        if (arg == "--backend")
            backend = value();
        else if (arg == "--n")
            n = std::stoll(value());
        else if (arg == "--iterations")
            iterations = std::stoi(value());
        else if (arg == "--tune")
            bo.set(value());
        else {
            std::fprintf(stderr,
                         "usage: bench_host_overhead [--backend NAME] [--n N] [--iterations I] [--tune k=v]...\n");
            return 2;
        }
    }
    try {
        auto be = ms::make_backend(backend, bo);
        auto D = photo_like(n);
        auto binding = be->bind(D, ms::Topology{});
        const std::string device = be->devices().empty() ? "" : be->devices().front().name;
        for (double fraction : {1.0, 0.01}) {
            const ms::Index stride = static_cast<ms::Index>(std::lround(1.0 / fraction));
            const ms::Index m = (n + stride - 1) / stride;
            ms::MatrixD Y(m, 5);
            for (ms::Index q = 0; q < m; ++q) Y.row(q) = D->points.row(q * stride);
            using clock = std::chrono::steady_clock;
            auto since = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };
            auto t0 = clock::now();
            binding->set_modes(Y.data(), m);
            const double set_modes_s = since(t0);
            ms::StepReport report;
            // The first step is reported apart: one-time costs (first launch, buffers, page faults)
            // that a one-iteration run pays in full.
            t0 = clock::now();
            binding->step(0.0, false, report);
            const double first_wall = since(t0), first_kernel = report.kernel_seconds;
            std::vector<double> wall, kernel, overhead;
            for (int it = 0; it < iterations; ++it) {
                t0 = clock::now();
                binding->step(0.0, false, report);
                const double w = since(t0);
                wall.push_back(w);
                kernel.push_back(report.kernel_seconds);
                overhead.push_back(w - std::max(0.0, report.kernel_seconds));
            }
            std::vector<double> out(static_cast<std::size_t>(m) * 5);
            t0 = clock::now();
            binding->read_modes(out.data());
            const double read_modes_s = since(t0);
            std::printf(
                "{\"backend\":\"%s\",\"device\":\"%s\",\"n\":%lld,\"k\":5,\"active\":%lld,"
                "\"wall_s\":%.6g,\"kernel_s\":%.6g,\"host_overhead_s\":%.6g,\"host_overhead_us_per_mode\":%.4g,"
                "\"set_modes_s\":%.6g,\"first_step_wall_s\":%.6g,\"first_step_kernel_s\":%.6g,\"read_modes_s\":%.6g}\n",
                be->name().c_str(), device.c_str(), static_cast<long long>(n), static_cast<long long>(m), median(wall),
                median(kernel), median(overhead), 1e6 * median(overhead) / double(m), set_modes_s, first_wall,
                first_kernel, read_modes_s);
            std::fflush(stdout);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_host_overhead: %s\n", e.what());
        return 1;
    }
    return 0;
}
