#include "progress.hpp"

#include <cstdio>
#include <unistd.h>

namespace mscli {

TerminalProgress::TerminalProgress(bool enabled)
    : active_(enabled && isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()), last_(start_)
{
}

TerminalProgress::~TerminalProgress()
{
    finish();
}

meanshift::ProgressCallback TerminalProgress::callback()
{
    if (!active_) return {};
    return [this](int iteration, meanshift::Index active, meanshift::Index total) {
        const auto now = std::chrono::steady_clock::now();
        if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return true;
        last_ = now;
        drawn_ = true;
        const double elapsed = std::chrono::duration<double>(now - start_).count();
        // \r + erase-to-end-of-line keeps it on one line; the width stays under 80 columns.
        std::fprintf(stderr, "\r  iteration %d: %lld of %lld modes still moving (%.1f s)\x1b[K", iteration,
                     static_cast<long long>(active), static_cast<long long>(total), elapsed);
        std::fflush(stderr);
        return true;
    };
}

void TerminalProgress::finish()
{
    if (active_ && drawn_) {
        std::fprintf(stderr, "\r\x1b[K");
        std::fflush(stderr);
    }
    drawn_ = false;
}

meanshift::Result cluster_with_progress(const meanshift::MatrixF& data, meanshift::Options options, bool quiet)
{
    TerminalProgress progress(!quiet);
    options.progress = progress.callback();
    meanshift::Result r = meanshift::cluster(data, options);
    // Seeds far from every point get no kernel weight at all: they stay where they started.
    if (r.modes_without_support > 0)
        std::fprintf(stderr,
                     "warning: %lld of %lld modes had no support (no data point within reach of the "
                     "kernel; they kept their starting position and are not counted as converged)\n",
                     static_cast<long long>(r.modes_without_support), static_cast<long long>(r.modes.rows()));
    progress.finish();
    return r;
}

}  // namespace mscli
