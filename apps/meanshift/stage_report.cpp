#include "stage_report.hpp"

#include "memory.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace mscli {

double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void StageReport::add_library(const meanshift::Timing& t)
{
    for (const auto& [name, seconds] : t.stages()) stages_.emplace_back(name, seconds);
}

double StageReport::wall_seconds() const
{
    return seconds_since(start_);
}

std::string StageReport::line() const
{
    std::string out;
    char buf[64];
    for (const auto& [name, seconds] : stages_) {
        std::snprintf(buf, sizeof buf, "%s%s %.3f", out.empty() ? "" : ", ", name.c_str(), seconds);
        out += buf;
    }
    std::snprintf(buf, sizeof buf, " s; wall %.3f s, peak memory ", wall_seconds());
    return out + buf + format_bytes(static_cast<double>(meanshift::peak_memory_bytes()));
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
    j["peak_memory_bytes"] = meanshift::peak_memory_bytes();
    return j.dump();
}

}  // namespace mscli
