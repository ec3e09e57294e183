// The "before" side of bench_host_overhead: the same measurement against the interface of commit
// 964bc01 (Backend::step(StepRequest), modes kept by the driver in float64 on the host). It is not
// part of the build (that interface is gone); docs/performance-host-overhead.md gives the commands
// that build it against a checkout of 964bc01. Host overhead per iteration = the driver's work
// around step() (gather of the active modes, Alg. 5 shifts, scatter), as driver.cpp did it then,
// plus the part of step() outside the pair kernel (measured here for the host backends as step()
// minus the same step with the modes already converted, i.e. 0: the old host backends had no
// conversions; the GPU backends' conversions and copies are inside step()).
#include <meanshift/meanshift.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace ms = meanshift;
using Clock = std::chrono::steady_clock;

static double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const std::size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

int main(int argc, char** argv)
{
    const std::string backend = argc > 1 ? argv[1] : "openmp";
    const ms::Index n = argc > 2 ? std::stoll(argv[2]) : 273280;
    const int iterations = argc > 3 ? std::stoi(argv[3]) : 5;
    ms::PreparedData D;  // same photo-like data as bench_host_overhead.cpp
    D.model = ms::KernelModel::Shared;
    D.points.resize(n, 5);
    std::mt19937 rng(42);
    std::normal_distribution<double> noise(0.0, 0.3);
    for (ms::Index i = 0; i < n; ++i) {
        const double x = double(i % 640), y = double(i / 640);
        D.points(i, 0) = x / 8.0 - 40.0;
        D.points(i, 1) = y / 8.0 - 27.0;
        D.points(i, 2) = 16.0 * std::sin(x / 97.0) + noise(rng);
        D.points(i, 3) = 16.0 * std::cos(y / 53.0) + noise(rng);
        D.points(i, 4) = 8.0 * std::sin((x + y) / 71.0) + noise(rng);
    }
    D.finalize();
    auto be = ms::make_backend(backend);
    be->bind(D, be->resolve_topology(ms::Topology{}, D));
    for (double fraction : {1.0, 0.01}) {
        const ms::Index stride = static_cast<ms::Index>(std::lround(1.0 / fraction));
        const ms::Index m = (n + stride - 1) / stride;
        ms::MatrixD Y(m, 5);
        for (ms::Index q = 0; q < m; ++q) Y.row(q) = D.points.row(q * stride);
        std::vector<ms::Index> active(static_cast<std::size_t>(m));
        for (ms::Index q = 0; q < m; ++q) active[std::size_t(q)] = q;
        ms::MatrixD in, out;
        std::vector<double> wall, host;
        for (int it = 0; it <= iterations; ++it) {
            const auto t0 = Clock::now();
            in.resize(m, 5);
            out.resize(m, 5);
            for (ms::Index j = 0; j < m; ++j) in.row(j) = Y.row(active[std::size_t(j)]);
            const auto t1 = Clock::now();
            ms::StepRequest req;
            req.positions = in.data();
            req.out = out.data();
            req.count = m;
            be->step(req);
            const auto t2 = Clock::now();
            double s = 0;
            for (ms::Index j = 0; j < m; ++j) {
                double d2 = 0;
                for (int d = 0; d < 5; ++d) d2 += (out(j, d) - in(j, d)) * (out(j, d) - in(j, d));
                s += d2;
                Y.row(active[std::size_t(j)]) = out.row(j);
            }
            const auto t3 = Clock::now();
            if (it == 0) continue;  // warm-up
            wall.push_back(secs(t0, t3));
            host.push_back(secs(t0, t1) + secs(t2, t3) + (s < 0 ? 1 : 0));
        }
        std::printf("{\"version\":\"964bc01\",\"backend\":\"%s\",\"n\":%lld,\"k\":5,\"active\":%lld,\"wall_s\":%.6g,"
                    "\"driver_host_s\":%.6g}\n",
                    backend.c_str(), static_cast<long long>(n), static_cast<long long>(m), median(wall), median(host));
    }
}
