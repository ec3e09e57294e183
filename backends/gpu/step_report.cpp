// The GPU step report's host side (step_report.hpp): one parallel pass over the device's records.
#include "backends/gpu/step_report.hpp"

#include "skeleton/src/core/parallel.hpp"

#include <meanshift/errors.hpp>

#include <cstring>
#include <string>

namespace meanshift::gpu {

void resize_report(StepReport& report, Index total)
{
    const auto t = static_cast<std::size_t>(total);
    report.mode.resize(t);
    report.shift2.resize(t);
    report.status.resize(t);
    report.pairs = -1;
    report.kernel_seconds = -1;
}

Index unpack_records(const std::int32_t* words, Index count, Index offset, Index limit, StepReport& report, Index at,
                     const char* who)
{
    Index* mode = report.mode.data() + at;
    double* shift2 = report.shift2.data() + at;
    ModeStatus* status = report.status.data() + at;
    Index active = 0;
    bool bad = false;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(+ : active) reduction(|| : bad) \
    num_threads(::meanshift::detail::host_threads()) if (count * 6 >= ::meanshift::detail::kParallelMinValues)
#endif
    for (Index j = 0; j < count; ++j) {
        const std::int32_t* r = words + 3 * j;
        float s2;
        std::memcpy(&s2, &r[1], sizeof s2);
        bad = bad || r[0] < 0 || r[0] >= limit || r[2] < 0 || r[2] > 2;
        mode[j] = offset + r[0];
        shift2[j] = s2;
        status[j] = static_cast<ModeStatus>(r[2]);
        active += r[2] == static_cast<std::int32_t>(ModeStatus::Active) ? 1 : 0;
    }
    if (bad)
        for (Index j = 0; j < count; ++j) {
            const std::int32_t* r = words + 3 * j;
            if (r[0] < 0 || r[0] >= limit || r[2] < 0 || r[2] > 2)
                throw Error(std::string(who) + ": the kernels left slot " + std::to_string(j) + " of " +
                            std::to_string(count) + " without a report (mode " + std::to_string(r[0]) + ", status " +
                            std::to_string(r[2]) + ")");
        }
    return active;
}

}  // namespace meanshift::gpu
