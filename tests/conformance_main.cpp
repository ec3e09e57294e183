// Main of meanshift_conformance: runs the conformance suite against one backend.
//
//   meanshift_conformance --backend=NAME [doctest options]     (or MEANSHIFT_TEST_BACKEND=NAME)
//
// Exit code 77 (CTest SKIP_RETURN_CODE) when NAME is a known backend that is not compiled into
// this build or has no usable device here, so CTest reports Skipped, never Passed. An unknown
// name is an error (exit code 2).
#define DOCTEST_CONFIG_IMPLEMENT
#include "conformance.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
std::string g_backend;
constexpr int kSkip = 77;
}  // namespace

const std::string& conf::backend()
{
    return g_backend;
}

int main(int argc, char** argv)
{
    std::vector<char*> rest;
    if (const char* env = std::getenv("MEANSHIFT_TEST_BACKEND")) g_backend = env;
    for (int i = 0; i < argc; ++i) {
        if (i > 0 && std::strncmp(argv[i], "--backend=", 10) == 0)
            g_backend = argv[i] + 10;
        else
            rest.push_back(argv[i]);
    }
    if (g_backend.empty()) {
        std::fprintf(stderr, "usage: %s --backend=serial|openmp|opencl|cuda [doctest options]\n", argv[0]);
        return 2;
    }
    const char* const known[] = {"serial", "openmp", "opencl", "cuda"};
    bool is_known = false;
    for (const char* k : known) is_known = is_known || g_backend == k;
    if (!is_known) {
        std::fprintf(stderr, "conformance: unknown backend '%s'\n", g_backend.c_str());
        return 2;
    }
    const auto compiled = meanshift::compiled_backends();
    if (std::find(compiled.begin(), compiled.end(), g_backend) == compiled.end()) {
        std::printf("SKIPPED: backend '%s' is not compiled into this build\n", g_backend.c_str());
        return kSkip;
    }
    for (const auto& s : meanshift::list_backends()) {
        if (s.name != g_backend) continue;
        if (!s.usable) {
            std::printf("SKIPPED: backend '%s' is compiled in but not usable here: %s\n", g_backend.c_str(),
                        s.reason.c_str());
            return kSkip;
        }
        std::printf("conformance of backend '%s' against the float64 serial oracle\n", g_backend.c_str());
        for (const auto& d : s.devices)
            std::printf("  device %d: %s (%s, %d compute units x %d PUs)\n", d.index, d.name.c_str(), d.kind.c_str(),
                        d.compute_units, d.pus_per_ppu);
    }
    std::printf("  random seed %llu (set MEANSHIFT_TEST_SEED=%llu to reproduce this run)\n",
                static_cast<unsigned long long>(mstest::base_seed()),
                static_cast<unsigned long long>(mstest::base_seed()));
    std::fflush(stdout);
    doctest::Context context(static_cast<int>(rest.size()), rest.data());
    const int rc = context.run();
    return rc == kSkip ? 1 : rc;
}
