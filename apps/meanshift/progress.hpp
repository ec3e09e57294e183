#pragma once
/// @file progress.hpp
/// One-line progress display on stderr for long clustering runs (only when stderr is a terminal).

#include <meanshift/meanshift.hpp>

#include <chrono>
#include <string>

namespace mscli {

class TerminalProgress {
public:
    /// Active only if `enabled` and stderr is a TTY; otherwise callback() returns an empty function.
    explicit TerminalProgress(bool enabled);
    ~TerminalProgress();
    TerminalProgress(const TerminalProgress&) = delete;
    TerminalProgress& operator=(const TerminalProgress&) = delete;

    /// For Options::progress. Redraws at most 10 times a second; never cancels.
    meanshift::ProgressCallback callback();
    /// Erases the progress line (also done by the destructor).
    void finish();

private:
    bool active_ = false;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point start_, last_;
};

/// meanshift::cluster() with a progress line on stderr unless `quiet` (what every subcommand runs).
meanshift::Result cluster_with_progress(const meanshift::MatrixF& data, meanshift::Options options, bool quiet);

}  // namespace mscli
