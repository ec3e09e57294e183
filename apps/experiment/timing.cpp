#include "timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

namespace experiment {

using Clock = std::chrono::steady_clock;

namespace {

double now_seconds(bool cpu_clock)
{
    if (cpu_clock) {
        timespec ts{};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
    }
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

}  // namespace

Stats summarize(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    Stats s;
    s.repeats = static_cast<int>(v.size());
    s.min = v.front();
    s.max = v.back();
    const std::size_t h = v.size() / 2;
    s.median = v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
    return s;
}

StepBench::StepBench(const std::string& backend, const meanshift::BackendOptions& options)
    : backend_(meanshift::make_backend(backend, options))
{
}

StepBench::~StepBench() = default;

meanshift::Topology StepBench::bind(const meanshift::PreparedData& data, const meanshift::Topology& requested)
{
    const meanshift::Topology t = backend_->resolve_topology(requested, data);
    binding_.reset();
    binding_ = backend_->bind(std::make_shared<const meanshift::PreparedData>(data), t);
    return t;
}

Stats StepBench::time_step(meanshift::Index m, int repeats, double min_seconds, bool cpu_clock)
{
    if (!binding_) throw meanshift::Error("StepBench: time_step() before bind()");
    const meanshift::PreparedData& D = binding_->data();
    const int k = D.k();
    const meanshift::Index n = D.n();
    std::vector<double> pos(static_cast<std::size_t>(m * k));
    for (meanshift::Index q = 0; q < m; ++q)
        for (int d = 0; d < k; ++d) pos[static_cast<std::size_t>(q * k + d)] = D.points(q % n, d);
    // The modes stay on the device across the timed steps (as in cluster()); no mode retires, so
    // every step costs m × n pair interactions.
    binding_->set_modes(pos.data(), m);
    meanshift::StepReport report;
    auto step = [&] { binding_->step(0.0, false, report); };

    auto once = [&] {
        const double t0 = now_seconds(cpu_clock);
        step();
        return now_seconds(cpu_clock) - t0;
    };
    once();  // warm-up: first launch, JIT, page faults
    const double probe = once();
    const int inner = probe >= min_seconds ? 1 : static_cast<int>(std::ceil(min_seconds / std::max(probe, 1e-9)));
    std::vector<double> samples;
    for (int r = 0; r < std::max(1, repeats); ++r) {
        const double t0 = now_seconds(cpu_clock);
        for (int i = 0; i < inner; ++i) step();
        samples.push_back((now_seconds(cpu_clock) - t0) / inner);
    }
    return summarize(samples);
}

std::string StepBench::name() const
{
    return backend_->name();
}

std::string StepBench::device() const
{
    const auto d = backend_->devices();
    return d.empty() ? std::string() : d.front().name;
}

Stats time_cluster(const meanshift::MatrixF& data, const meanshift::Options& options, int repeats, bool warmup,
                   meanshift::Result* last)
{
    std::vector<double> samples;
    meanshift::Clusterer clusterer(options);  // backend and its device context built once
    if (warmup) clusterer.fit(data);
    double spent = 0;
    for (int r = 0; r < std::max(1, repeats); ++r) {
        meanshift::Result res = clusterer.fit(data);
        samples.push_back(res.timing.seconds_total);
        spent += res.timing.seconds_total;
        if (last) *last = std::move(res);
        // Long runs vary little relative to their length: stop repeating after a minute.
        if (spent > 60.0) break;
    }
    return summarize(samples);
}

}  // namespace experiment
