#pragma once
/// @file stage_report.hpp
/// Where a run of the tool spent its time, stage by stage ("every stage accounted for"):
/// the tool's own stages (reading and decoding the input, writing the outputs, image regions) around
/// the library's (meanshift::Timing::stages()), the wall time and the process's peak memory. As a
/// `stages` line of the summary and, with --json, as one JSON object on the last line of stdout.

#include <meanshift/meanshift.hpp>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace mscli {

class StageReport {
public:
    StageReport() : start_(std::chrono::steady_clock::now()) {}
    /// Appends a stage of the tool (seconds); library stages come from add_library().
    void add(const std::string& name, double seconds) { stages_.emplace_back(name, seconds); }
    /// Appends the library's stages in their run order.
    void add_library(const meanshift::Timing& t);
    double wall_seconds() const;
    /// "read 0.12, validate 0.03, ..., write 0.05 s; wall 0.61 s, peak memory 1.2 GB"
    std::string line() const;
    /// {"command": ..., "wall_seconds": ..., "stages": {"read": ..., ...}, "peak_memory_bytes": ...} plus `extra`
    /// (already JSON-encoded key/value pairs).
    std::string json(const std::string& command, const std::vector<std::pair<std::string, std::string>>& extra) const;

private:
    std::chrono::steady_clock::time_point start_;
    std::vector<std::pair<std::string, double>> stages_;
};

/// Seconds since `t0`.
double seconds_since(std::chrono::steady_clock::time_point t0);

}  // namespace mscli
