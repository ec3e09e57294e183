#include "memory.hpp"

#include "text.hpp"

#include <meanshift/errors.hpp>
#include <meanshift/meanshift.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace mscli {

std::uint64_t available_memory()
{
    return static_cast<std::uint64_t>(meanshift::available_memory());  // the library's one reading of MemAvailable
}

std::string format_bytes(double bytes)
{
    static const char* units[] = {"bytes", "kB", "MB", "GB", "TB", "PB", "EB"};
    int u = 0;
    while (bytes >= 1000 && u < 6) {
        bytes /= 1000;
        ++u;
    }
    char buf[64];
    if (u == 0)
        std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
    else
        std::snprintf(buf, sizeof buf, bytes < 10 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}

void MemoryOption::add_to(CLI::App& app)
{
    app.add_option("--max-memory", text,
                   "memory budget in MB (10^6 bytes) that the run's estimated need (checked before reading the "
                   "data or decoding the image) may not exceed; auto = the memory available now (MemAvailable); "
                   "0 = no check")
        ->check([](const std::string& t) -> std::string {
            if (t == "auto") return {};
            char* end = nullptr;
            const double v = std::strtod(t.c_str(), &end);
            if (end == t.c_str() || *end != '\0' || !std::isfinite(v) || v < 0)
                return "must be a number of MB >= 0 or auto, got " + clip(t);
            return {};
        })
        ->capture_default_str();
}

double MemoryOption::budget(std::string& name) const
{
    if (text != "auto") {
        const double mb = std::strtod(text.c_str(), nullptr);
        name = "the --max-memory budget of " + format_bytes(mb * 1e6);
        return mb * 1e6;
    }
    const std::uint64_t available = available_memory();
    name = "the " + format_bytes(static_cast<double>(available)) +
           " of memory available (MemAvailable; set a budget with --max-memory MB)";
    return static_cast<double>(available);
}

void MemoryOption::check(double need_bytes, const std::string& what, const std::string& how,
                         const std::string& hint) const
{
    std::string name;
    const double limit = budget(name);
    if (limit <= 0 || !(need_bytes > limit)) return;
    throw meanshift::InvalidArgument(what + " needs about " + format_bytes(need_bytes) + " (" + how + "), more than " +
                                     name + (hint.empty() ? "" : "; " + hint));
}

std::size_t MemoryOption::library_budget() const
{
    if (text == "auto") return 0;
    const double mb = std::strtod(text.c_str(), nullptr);
    if (!(mb > 0)) return std::numeric_limits<std::size_t>::max();
    const double bytes = mb * 1e6;
    return bytes >= 1.8e19 ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(bytes);
}

double segment_memory(double pixels, double segmented, double file_bytes)
{
    return file_bytes + pixels * kDecodeBytesPerPixel + segmented * kSegmentBytesPerPixel;
}

double file_size(const std::string& path)
{
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    return static_cast<double>(st.st_size);
}

double cluster_memory(double n, double k, double input_bytes)
{
    return input_bytes + n * (kClusterBytesPerPoint + kClusterBytesPerValue * k);
}

}  // namespace mscli
