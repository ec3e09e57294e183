#include "stage_report.hpp"

#include "memory.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sys/resource.h>

namespace mscli {

double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::size_t peak_memory_bytes()
{
    rusage u{};
    if (getrusage(RUSAGE_SELF, &u) != 0 || u.ru_maxrss < 0) return 0;
    return static_cast<std::size_t>(u.ru_maxrss) * 1024u;  // Linux: KiB
}

void StageReport::add_library(const meanshift::Timing& t)
{
    for (const auto& [name, seconds] : t.stages()) stages_.emplace_back(name, seconds);
}

double StageReport::wall_seconds() const { return seconds_since(start_); }

std::string StageReport::line() const
{
    std::string out;
    char buf[64];
    for (const auto& [name, seconds] : stages_) {
        std::snprintf(buf, sizeof buf, "%s%s %.3f", out.empty() ? "" : ", ", name.c_str(), seconds);
        out += buf;
    }
    std::snprintf(buf, sizeof buf, " s; wall %.3f s, peak memory ", wall_seconds());
    return out + buf + format_bytes(static_cast<double>(peak_memory_bytes()));
}

std::string StageReport::json(const std::string& command,
                              const std::vector<std::pair<std::string, std::string>>& extra) const
{
    nlohmann::ordered_json j;
    j["command"] = command;
    for (const auto& [key, value] : extra) j[key] = nlohmann::ordered_json::parse(value);
    j["wall_seconds"] = wall_seconds();
    nlohmann::ordered_json s = nlohmann::ordered_json::object();
    for (const auto& [name, seconds] : stages_) s[name] = seconds;
    j["stages"] = s;
    j["peak_memory_bytes"] = peak_memory_bytes();
    return j.dump();
}

}  // namespace mscli
