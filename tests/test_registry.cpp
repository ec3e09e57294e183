// Backend registry: "compiled in" vs "usable now", creation by name, and the errors for unknown,
// compiled-out and unusable backends.
#include "test_support.hpp"

#include <meanshift/meanshift.hpp>
#include <meanshift/registry.hpp>

#include <algorithm>
#include <future>
#include <iostream>

using namespace meanshift;

namespace {
const char* const kKnown[] = {"serial", "openmp", "opencl", "cuda"};

bool has(const std::vector<std::string>& v, const std::string& s)
{
    return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

TEST_CASE("registry: compiled_backends and list_backends agree")
{
    const auto compiled = compiled_backends();
    CHECK(has(compiled, "serial"));
    for (const auto& n : compiled) CHECK(std::find(std::begin(kKnown), std::end(kKnown), n) != std::end(kKnown));

    const auto all = list_backends();
    REQUIRE(all.size() == 4);
    for (std::size_t i = 0; i < all.size(); ++i) {
        const BackendStatus& s = all[i];
        INFO("backend " << s.name << ": compiled_in=" << s.compiled_in << " usable=" << s.usable << " reason='"
                        << s.reason << "'");
        CHECK(s.name == kKnown[i]);
        CHECK(s.compiled_in == has(compiled, s.name));
        if (s.usable) {
            CHECK(s.compiled_in);
            CHECK(s.reason.empty());
            CHECK_FALSE(s.devices.empty());
        } else {
            CHECK_FALSE(s.reason.empty());
        }
        MESSAGE("backend " << s.name << ": "
                           << std::string(s.usable        ? "usable"
                                          : s.compiled_in ? "compiled in, not usable"
                                                          : "not compiled in")
                           << (s.reason.empty() ? "" : " (" + s.reason + ")"));
    }
    CHECK(all[0].usable);  // serial is always usable
}

TEST_CASE("registry: make_backend by name, auto resolves to a usable backend")
{
    auto be = make_backend("serial");
    REQUIRE(be);
    CHECK(be->name() == "serial");
    CHECK_FALSE(be->devices().empty());

    const std::string a = resolve_auto_backend();
    bool usable = false;
    for (const auto& s : list_backends())
        if (s.name == a) usable = s.usable;
    CHECK(usable);
    auto ab = make_backend("auto");
    REQUIRE(ab);
    CHECK(ab->name() == a);
}

TEST_CASE("registry: unknown, compiled-out and unusable backends throw BackendUnavailable")
{
    CHECK_THROWS_KEYWORD(BackendUnavailable, make_backend("nosuchbackend"), "unknown");
    CHECK_THROWS_KEYWORD(BackendUnavailable, make_backend("nosuchbackend"), "serial");  // lists what exists
    CHECK_THROWS_KEYWORD(BackendUnavailable, make_backend(""), "unknown");
    CHECK_THROWS_KEYWORD(BackendUnavailable, make_backend("SERIAL"), "unknown");

    for (const auto& s : list_backends()) {
        INFO(s.name);
        if (!s.compiled_in)
            CHECK_THROWS_KEYWORD(BackendUnavailable, make_backend(s.name), "not compiled");
        else if (!s.usable)
            CHECK_THROWS_KEYWORD(BackendUnavailable, make_backend(s.name), "not usable");
        else
            CHECK_NOTHROW(make_backend(s.name));
    }
}

TEST_CASE("registry: backends prepared on several threads at once (as the CLI prepares one while reading)")
{
    // Two threads initialising the OpenCL ICD loader at once crashed the tool; the registry serialises it.
    for (int round = 0; round < 4; ++round) {
        std::vector<std::future<std::string>> names;
        for (int t = 0; t < 4; ++t)
            names.push_back(std::async(std::launch::async, [] { return prepare_backend("auto"); }));
        const std::string first = names[0].get();
        CHECK_FALSE(first.empty());
        for (std::size_t t = 1; t < names.size(); ++t) CHECK(names[t].get() == first);
    }
}
