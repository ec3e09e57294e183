// GpuBinding: the GPU backends' Binding lifecycle (gpu_binding.hpp), once for CUDA and OpenCL.
#include "backends/gpu/gpu_binding.hpp"

#include "backends/gpu/step_report.hpp"
#include "skeleton/src/core/parallel.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <exception>
#include <utility>

namespace meanshift::gpu {

GpuBinding::GpuBinding(std::shared_ptr<const PreparedData> data, const Topology& topology, std::string who,
                       std::size_t shares)
    : data_(std::move(data)), topology_(topology), who_(std::move(who)), shares_(std::max<std::size_t>(1, shares))
{
    if (!data_) throw InvalidArgument(who_ + ": bind() without data");
    k_ = data_->k();
}

Index GpuBinding::active_count() const noexcept
{
    Index a = 0;
    for (const Share& s : shares_) a += s.active;
    return a;
}

void GpuBinding::drop_modes()
{
    has_modes_ = false;
    m_ = 0;
    for (Share& s : shares_) s = Share{};
}

void GpuBinding::for_each_share(const std::function<void(std::size_t)>& f) const
{
    for (std::size_t i = 0; i < shares_.size(); ++i) f(i);
}

void GpuBinding::set_modes(const double* positions, Index m, const double* metric)
{
    if (m < 1) throw InvalidArgument(who_ + ": set_modes() needs at least one mode, got m = " + std::to_string(m));
    if (!positions) throw InvalidArgument(who_ + ": set_modes() without positions");
    const Index parts = static_cast<Index>(shares_.size());
    const Index per = (m + parts - 1) / parts;
    if (per > INT32_MAX)  // the records and active lists index a share's modes with 32 bits
        throw InvalidArgument(who_ + ": at most 2^31 - 1 modes per device, got " + std::to_string(per));
    drop_modes();
    for (Index i = 0; i < parts; ++i) {
        Share& s = shares_[static_cast<std::size_t>(i)];
        s.m0 = std::min(m, i * per);
        s.m = std::min(m, s.m0 + per) - s.m0;
    }
    for_each_share([&](std::size_t i) {
        const Share& s = shares_[i];
        if (s.m > 0) load_modes(i, positions + s.m0 * k_, s.m, metric ? metric + s.m0 * k_ : nullptr);
    });
    for (Share& s : shares_) s.active = s.m;
    m_ = m;
    has_modes_ = true;
}

void GpuBinding::step(double tol2, bool retire, StepReport& report)
{
    if (!has_modes_) throw Error(who_ + ": step() before set_modes()");
    if (active_count() == 0) return report.clear();
    // float32 threshold; a negative tol2 lets nothing converge, a huge one everything
    const float tol2f = static_cast<float>(std::min(tol2, static_cast<double>(FLT_MAX)));
    std::vector<ShareStep> steps(shares_.size());
    for_each_share([&](std::size_t i) {
        if (shares_[i].active > 0) steps[i] = advance(i, shares_[i].active, tol2f);
    });
    Index total = 0;
    double seconds = -1, pairs = 0;
    for (std::size_t i = 0; i < shares_.size(); ++i) {
        if (shares_[i].active == 0) continue;
        total += shares_[i].active;
        seconds = std::max(seconds, steps[i].kernel_seconds);  // the devices run at once
        pairs = steps[i].pairs < 0 || pairs < 0 ? -1.0 : pairs + steps[i].pairs;
    }
    resize_report(report, total);
    std::vector<Index> at(shares_.size(), 0), still(shares_.size(), 0);
    Index o = 0;
    for (std::size_t i = 0; i < shares_.size(); ++i) {
        const Share& s = shares_[i];
        at[i] = o;
        if (s.active == 0) continue;
        still[i] = unpack_records(steps[i].records, s.active, s.m0, s.m, report, o, who_.c_str());
        o += s.active;
    }
    report.pairs = pairs;
    report.kernel_seconds = seconds;
    if (!retire) return;
    // The survivors in the order of the list (increasing mode): O(count) on the host, the one way.
    for_each_share([&](std::size_t i) {
        const Share& s = shares_[i];
        if (still[i] == s.active || still[i] == 0) return;
        std::vector<std::int32_t> list;
        list.reserve(static_cast<std::size_t>(still[i]));
        for (Index j = at[i]; j < at[i] + s.active; ++j)
            if (report.status[static_cast<std::size_t>(j)] == ModeStatus::Active)
                list.push_back(static_cast<std::int32_t>(report.mode[static_cast<std::size_t>(j)] - s.m0));
        write_active(i, list.data(), static_cast<Index>(list.size()));
    });
    for (std::size_t i = 0; i < shares_.size(); ++i) shares_[i].active = still[i];
}

void GpuBinding::read_modes(double* out) const
{
    if (!has_modes_) throw Error(who_ + ": read_modes() before set_modes()");
    for_each_share([&](std::size_t i) {
        const Share& s = shares_[i];
        if (s.m == 0) return;
        const std::size_t values = static_cast<std::size_t>(s.m) * static_cast<std::size_t>(k_);
        const float* f = fetch_modes(i);
        double* o = out + s.m0 * k_;
        MS_PARALLEL_FOR(values)
        for (std::size_t j = 0; j < values; ++j) o[j] = static_cast<double>(f[j]);
    });
}

}  // namespace meanshift::gpu
