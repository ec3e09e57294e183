// BackendOptions::set: the one parser of tuning overrides (CLI --tune, benchmarks, tests).
#include <meanshift/errors.hpp>
#include <meanshift/tuning.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <thread>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace meanshift {
namespace {

long long parse_int(const std::string& key, const std::string& v, long long lo, long long hi)
{
    errno = 0;
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || !end || *end != '\0' || errno == ERANGE || x < lo || x > hi)
        throw InvalidArgument("tuning option " + key + ": expected an integer in [" + std::to_string(lo) + ", " +
                              std::to_string(hi) + "], got '" + v + "'");
    return x;
}

bool parse_bool(const std::string& key, const std::string& v)
{
    if (v == "1" || v == "on" || v == "true") return true;
    if (v == "0" || v == "off" || v == "false") return false;
    throw InvalidArgument("tuning option " + key + ": expected 0/1, on/off or true/false, got '" + v + "'");
}

template <class T>
T parse_choice(const std::string& key, const std::string& v, std::initializer_list<std::pair<const char*, T>> choices)
{
    std::string names;
    for (const auto& [name, value] : choices) {
        if (v == name) return value;
        names += (names.empty() ? "" : ", ") + std::string(name);
    }
    throw InvalidArgument("tuning option " + key + ": expected one of " + names + ", got '" + v + "'");
}

constexpr long long kIntMax = std::numeric_limits<int>::max();
constexpr long long kIndexMax = std::numeric_limits<long long>::max();

}  // namespace

int max_threads() noexcept
{
    static const int cached = [] {  // hardware_concurrency() may read /sys: once per process
        const long long hw = std::max(1u, std::thread::hardware_concurrency());
        long long limit = hw * kMaxThreadsPerHardwareThread;
#if defined(_OPENMP)
        limit = std::min<long long>(limit, omp_get_thread_limit());
#endif
        return static_cast<int>(std::clamp<long long>(limit, 1, std::numeric_limits<int>::max()));
    }();
    return cached;
}

void check_thread_count(const std::string& who, const std::string& option, long long value)
{
    const int limit = max_threads();
    if (value > limit)
        throw InvalidArgument(who + ": " + option + " = " + std::to_string(value) + " exceeds the limit of " +
                              std::to_string(limit) + " threads (" + std::to_string(kMaxThreadsPerHardwareThread) +
                              " x the " + std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
                              " hardware threads, or OMP_THREAD_LIMIT); more threads than that cannot run faster");
}

std::vector<std::string> BackendOptions::keys()
{
    return {"preload",
            "preload_size",
            "threads",
            "devices",
            "device",
            "pair_form",
            "calibration",
            "calibration_file",
            "openmp.isa",
            "cuda.modes_per_pu",
            "cuda.kernel_variant",
            "cuda.max_queries",
            "cuda.max_points",
            "cuda.wgmma",
            "opencl.modes_per_pu",
            "opencl.exponent",
            "opencl.segments",
            "opencl.nv_ex2",
            "opencl.build_options",
            "opencl.gemm_modes",
            "opencl.gemm_points",
            "opencl.gemm_dim_chunk",
            "opencl.gemm_min_k",
            "opencl.gemm_wide_min_k"};
}

void BackendOptions::set(const std::string& key, const std::string& v)
{
    if (key == "preload")
        preload = parse_choice<Preload>(key, v,
                                        {{"auto", Preload::Auto},
                                         {"on", Preload::On},
                                         {"off", Preload::Off},
                                         {"1", Preload::On},
                                         {"0", Preload::Off}});
    else if (key == "preload_size")
        preload_size = static_cast<int>(parse_int(key, v, 0, 1 << 20));
    else if (key == "pair_form")
        pair_form = parse_choice<PairForm>(
            key, v, {{"auto", PairForm::Auto}, {"direct", PairForm::Direct}, {"gemm", PairForm::Gemm}});
    else if (key == "calibration")
        calibration = parse_choice<Calibration>(
            key, v, {{"auto", Calibration::Auto}, {"off", Calibration::Off}, {"rerun", Calibration::Rerun}});
    else if (key == "calibration_file")
        calibration_file = v;
    else if (key == "threads")
        threads = static_cast<int>(parse_int(key, v, 0, 1 << 16));
    else if (key == "devices") {
        devices.clear();
        std::size_t start = 0;
        while (start <= v.size()) {
            const std::size_t comma = v.find(',', start);
            const std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            devices.push_back(static_cast<int>(parse_int(key, item, 0, 1 << 16)));
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
    } else if (key == "device")
        device_spec = v;
    else if (key == "openmp.isa")
        openmp.isa = parse_choice<std::string>(
            key, v, {{"auto", "auto"}, {"amx", "amx"}, {"avx512", "avx512"}, {"avx2", "avx2"}, {"generic", "generic"}});
    else if (key == "cuda.modes_per_pu")
        cuda.modes_per_pu =
            static_cast<int>(parse_choice<long long>(key, v, {{"0", 0}, {"1", 1}, {"2", 2}, {"4", 4}, {"8", 8}}));
    else if (key == "cuda.kernel_variant")
        cuda.kernel_variant = static_cast<int>(parse_int(key, v, 0, 3));
    else if (key == "cuda.max_queries")
        cuda.max_queries = parse_int(key, v, 0, kIndexMax);
    else if (key == "cuda.max_points")
        cuda.max_points = parse_int(key, v, 0, kIndexMax);
    else if (key == "cuda.wgmma")
        cuda.wgmma = parse_bool(key, v);
    else if (key == "opencl.modes_per_pu")
        opencl.modes_per_pu = static_cast<int>(parse_int(key, v, 0, 16));
    else if (key == "opencl.exponent")
        opencl.exponent = parse_choice<ExponentForm>(
            key, v, {{"expanded", ExponentForm::Expanded}, {"direct", ExponentForm::Direct}});
    else if (key == "opencl.segments")
        opencl.segments = static_cast<int>(parse_int(key, v, 0, kIntMax));
    else if (key == "opencl.nv_ex2")
        opencl.nv_ex2 = parse_bool(key, v);
    else if (key == "opencl.build_options")
        opencl.extra_build_options = v;
    else if (key == "opencl.gemm_modes")
        opencl.gemm_modes = static_cast<int>(parse_int(key, v, 0, 256));
    else if (key == "opencl.gemm_points")
        opencl.gemm_points = static_cast<int>(parse_int(key, v, 0, 256));
    else if (key == "opencl.gemm_dim_chunk")
        opencl.gemm_dim_chunk = static_cast<int>(parse_int(key, v, 0, 64));
    else if (key == "opencl.gemm_min_k")
        opencl.gemm_min_k = static_cast<int>(parse_int(key, v, 0, 1 << 20));
    else if (key == "opencl.gemm_wide_min_k")
        opencl.gemm_wide_min_k = static_cast<int>(parse_int(key, v, 0, 1 << 20));
    else {
        std::string known;
        for (const auto& k : keys()) known += (known.empty() ? "" : ", ") + k;
        throw InvalidArgument("unknown tuning option '" + key + "'; known: " + known);
    }
}

void BackendOptions::set(const std::string& assignment)
{
    const std::size_t eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
        throw InvalidArgument("tuning option: expected key=value, got '" + assignment + "'");
    set(assignment.substr(0, eq), assignment.substr(eq + 1));
}

}  // namespace meanshift
