#pragma once
// Internal: the clock of the stage timings (Timing, SegmentTiming).

#include <chrono>

namespace meanshift::detail {

using Clock = std::chrono::steady_clock;

/// Seconds from t0 to now.
inline double since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace meanshift::detail
