// The calibration cache (calibration.hpp): key, file format, atomic writes, the process-wide lookup.
#include <meanshift/calibration.hpp>
#include <meanshift/errors.hpp>
#include <meanshift/version.hpp>

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace meanshift {
namespace {

constexpr int kFormat = 1;
constexpr int kMaxBucket = 4096;

std::string cpu_model()
{
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) != 0) continue;
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) break;
        std::string name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(" \t"));
        return name;
    }
    return "unknown CPU";
}

/// The ISA features that change which kernels run (the openmp backend's dispatch, cpu_features.cpp).
std::string isa_features()
{
    std::string out;
#if defined(__x86_64__) || defined(__i386__)
    auto add = [&](bool has, const char* name) {
        if (has) out += (out.empty() ? "" : " ") + std::string(name);
    };
    __builtin_cpu_init();
    add(__builtin_cpu_supports("avx2"), "avx2");
    add(__builtin_cpu_supports("fma"), "fma");
    add(__builtin_cpu_supports("avx512f"), "avx512f");
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        add(d & (1u << 24), "amx-tile");
        add(d & (1u << 22), "amx-bf16");
    }
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) add(a & (1u << 5), "avx512bf16");
#endif
    return out.empty() ? "baseline" : out;
}

std::string utc_now()
{
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

nlohmann::json to_json(const CalibrationEntry& e)
{
    nlohmann::json timings = nlohmann::json::object();
    for (const CalibrationTiming& t : e.timings) timings[t.form] = t.seconds;
    return {{"key", e.key},           {"backend", e.backend}, {"device", e.device}, {"model", e.model},
            {"k_bucket", e.k_bucket}, {"seconds", timings},   {"choice", e.choice}, {"measured", e.measured}};
}

/// Throws nlohmann's exceptions on a wrong shape (load() turns them into a warning).
CalibrationEntry from_json(const nlohmann::json& j)
{
    CalibrationEntry e;
    e.key = j.at("key").get<std::string>();
    e.backend = j.at("backend").get<std::string>();
    e.device = j.at("device").get<std::string>();
    e.model = j.at("model").get<std::string>();
    e.k_bucket = j.at("k_bucket").get<int>();
    for (const auto& [form, seconds] : j.at("seconds").items()) e.timings.push_back({form, seconds.get<double>()});
    e.choice = j.at("choice").get<std::string>();
    e.measured = j.value("measured", std::string());
    if (e.key.empty() || e.choice.empty()) throw std::runtime_error("an entry without key or choice");
    return e;
}

/// Parses a whole file's text; throws (std::exception) when it is not a calibration file.
std::vector<CalibrationEntry> parse(const std::string& text)
{
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object() || j.value("format", 0) != kFormat)
        throw std::runtime_error("not a calibration file of format " + std::to_string(kFormat));
    std::vector<CalibrationEntry> out;
    for (const auto& item : j.at("entries")) out.push_back(from_json(item));
    return out;
}

/// mkdir -p of the folder that holds `path`.
void make_parent(const std::string& path)
{
    const std::size_t slash = path.find_last_of('/');
    if (slash == std::string::npos || slash == 0) return;
    const std::string dir = path.substr(0, slash);
    for (std::size_t p = dir.find('/', 1);; p = dir.find('/', p + 1)) {
        const std::string part = dir.substr(0, p);
        if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST)
            throw Error("calibration file " + path + ": cannot create folder " + part + ": " + std::strerror(errno));
        if (p == std::string::npos) break;
    }
}

void warn(const std::string& message)
{
    std::fprintf(stderr, "meanshift: warning: %s\n", message.c_str());
}

}  // namespace

std::string default_calibration_file()
{
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') return std::string(xdg) + "/meanshift/calibration.json";
    const char* home = std::getenv("HOME");
    if (home && home[0] == '/') return std::string(home) + "/.cache/meanshift/calibration.json";
    return "";
}

std::string calibration_machine()
{
    static const std::string cached = cpu_model() + " | " + isa_features() + " | " +
                                      std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " threads";
    return cached;
}

std::string calibration_build()
{
#if defined(__clang__)
    const std::string compiler = "Clang " + std::string(__clang_version__);
#elif defined(__GNUC__)
    const std::string compiler = "GCC " + std::string(__VERSION__);
#else
    const std::string compiler = "unknown compiler";
#endif
    return "meanshift " + std::string(MEANSHIFT_VERSION_STRING) + " | " + compiler;
}

int calibration_k_bucket(int k)
{
    if (k < 1) throw InvalidArgument("calibration_k_bucket: k must be >= 1, got " + std::to_string(k));
    int b = 1;
    while (b < k && b < kMaxBucket) b *= 2;
    return b;
}

std::string calibration_key(const std::string& backend, const std::string& device, const std::string& model,
                            int k_bucket)
{
    return calibration_machine() + " | " + calibration_build() + " | " + backend + " | " + device + " | " + model +
           " | k<=" + std::to_string(k_bucket);
}

std::string choose_fastest(const std::vector<CalibrationTiming>& timings, double first_margin)
{
    // In the candidates' order (the reference form first, then more specialised ones), a later form
    // replaces the one chosen so far only when faster by more than the margin: AMX's GEMM measured
    // 1.06x Eigen's at k = 384 on the calibration's blobs and was 20x slower on other data (Xeon,
    // bench k = 384), so a near tie keeps the more general form.
    auto valid = [](const CalibrationTiming& t) { return std::isfinite(t.seconds) && t.seconds > 0; };
    const CalibrationTiming* best = nullptr;
    for (const CalibrationTiming& t : timings) {
        if (!valid(t)) continue;
        if (!best || t.seconds * first_margin < best->seconds) best = &t;
    }
    return best ? best->form : std::string();
}

CalibrationFile::CalibrationFile(std::string path) : path_(std::move(path)) {}

void CalibrationFile::load()
{
    entries_.clear();
    warning_.clear();
    if (path_.empty()) return;
    std::ifstream in(path_, std::ios::binary);
    if (!in) return;  // missing: an empty cache
    std::ostringstream text;
    text << in.rdbuf();
    try {
        entries_ = parse(text.str());
    } catch (const std::exception& e) {
        entries_.clear();
        warning_ = "calibration file " + path_ + " ignored (" + e.what() + "); it will be rewritten";
    }
}

std::optional<CalibrationEntry> CalibrationFile::find(const std::string& key) const
{
    for (const CalibrationEntry& e : entries_)
        if (e.key == key) return e;
    return std::nullopt;
}

void CalibrationFile::put(CalibrationEntry entry)
{
    for (CalibrationEntry& e : entries_)
        if (e.key == entry.key) {
            e = std::move(entry);
            return;
        }
    entries_.push_back(std::move(entry));
}

void CalibrationFile::save()
{
    if (path_.empty()) throw Error("calibration file: no path (neither $XDG_CACHE_HOME nor $HOME is set)");
    // Entries another process wrote since our load() are kept; ours replace theirs on the same key.
    CalibrationFile current(path_);
    current.load();
    for (const CalibrationEntry& e : entries_) current.put(e);
    entries_ = current.entries_;

    nlohmann::json list = nlohmann::json::array();
    for (const CalibrationEntry& e : entries_) list.push_back(to_json(e));
    const nlohmann::json doc = {{"format", kFormat}, {"entries", list}};

    make_parent(path_);
    static std::atomic<unsigned> serial{0};
    const std::string tmp = path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << doc.dump(2) << '\n';
        out.close();
        if (!out) {
            std::remove(tmp.c_str());
            throw Error("calibration file " + path_ + ": cannot write " + tmp);
        }
    }
    if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        std::remove(tmp.c_str());
        throw Error("calibration file " + path_ + ": cannot replace it: " + why);
    }
    warning_.clear();
}

std::optional<CalibrationEntry> calibrated(const BackendOptions& options, CalibrationEntry identity,
                                           const std::function<std::vector<CalibrationTiming>()>& measure,
                                           bool may_measure, double first_margin)
{
    if (options.calibration == Calibration::Off) return std::nullopt;
    identity.key = calibration_key(identity.backend, identity.device, identity.model, identity.k_bucket);
    const std::string path = options.calibration_file.empty() ? default_calibration_file() : options.calibration_file;

    static std::mutex mutex;
    static std::map<std::string, CalibrationFile> files;  // read once per process and path
    static std::set<std::string> rerun;  // path + key measured again in this process
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = files.find(path);
    if (it == files.end()) {
        it = files.emplace(path, CalibrationFile(path)).first;
        it->second.load();
        if (!it->second.warning().empty()) warn(it->second.warning());
    }
    CalibrationFile& file = it->second;
    const bool again = options.calibration == Calibration::Rerun && rerun.insert(path + "\n" + identity.key).second;
    if (!again)
        if (auto cached = file.find(identity.key)) return cached;
    if (!may_measure && !again) return std::nullopt;

    identity.timings = measure();
    identity.choice = choose_fastest(identity.timings, first_margin);
    if (identity.choice.empty()) return std::nullopt;
    identity.measured = utc_now();
    file.put(identity);
    if (!path.empty()) {
        try {
            file.save();
        } catch (const Error& e) {
            warn(std::string(e.what()) + " (the measurement serves this process only)");
        }
    }
    return identity;
}

}  // namespace meanshift
