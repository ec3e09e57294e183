// The calibration cache (meanshift/calibration.hpp): the choice on synthetic timings, k buckets,
// the file's round trip, a corrupt file, concurrent writers' entries kept, Off / Auto / Rerun, and
// the openmp backend's measured entry (its shape only: no timing is asserted).
#include <meanshift/calibration.hpp>
#include <meanshift/errors.hpp>
#include <meanshift/registry.hpp>

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

using namespace meanshift;

namespace {

/// A fresh path under /tmp (the file itself does not exist yet).
std::string temp_path(const std::string& name)
{
    static int serial = 0;
    return "/tmp/meanshift-calibration-test-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + "/" +
           name;
}

bool exists(const std::string& path)
{
    return std::ifstream(path).good();
}

CalibrationEntry entry(const std::string& key, const std::string& choice)
{
    CalibrationEntry e;
    e.key = key;
    e.backend = "openmp";
    e.device = "2 threads, AVX2 (8 float lanes)";
    e.model = "shared";
    e.k_bucket = 64;
    e.timings = {{"direct", 0.02}, {"gemm", 0.01}};
    e.choice = choice;
    e.measured = "2026-11-27T00:00:00Z";
    return e;
}

}  // namespace

TEST_CASE("calibration: the fastest candidate on synthetic timings")
{
    CHECK(choose_fastest({{"direct", 0.020}, {"gemm", 0.012}}) == "gemm");
    CHECK(choose_fastest({{"direct", 0.010}, {"gemm", 0.012}, {"gemm-amx", 0.011}}) == "direct");
    CHECK(choose_fastest({{"direct", 0.5}, {"gemm", 0.5}}) == "direct");  // a tie keeps the earlier
    // Not finite or not > 0: not a measurement.
    CHECK(choose_fastest({{"direct", 0.0}, {"gemm", 0.3}}) == "gemm");
    CHECK(choose_fastest({{"direct", -1.0}, {"gemm", std::numeric_limits<double>::quiet_NaN()}, {"amx", 2.0}}) ==
          "amx");
    CHECK(choose_fastest({{"direct", std::numeric_limits<double>::infinity()}}).empty());
    CHECK(choose_fastest({}).empty());
    // A margin for the first (reference) form: the others must beat it by more than the factor.
    CHECK(choose_fastest({{"direct", 0.013}, {"gemm", 0.010}}, 1.3) == "direct");
    CHECK(choose_fastest({{"direct", 0.014}, {"gemm", 0.010}}, 1.3) == "gemm");
    CHECK(choose_fastest({{"direct", 0.020}, {"gemm", 0.012}, {"gemm-amx", 0.009}}, 1.3) == "gemm-amx");
    // Each later form must beat the one chosen so far by the margin, not only the first.
    CHECK(choose_fastest({{"direct", 0.020}, {"gemm", 0.012}, {"gemm-amx", 0.010}}, 1.3) == "gemm");
    CHECK(choose_fastest({{"direct", 0.055}, {"gemm", 0.034}, {"gemm-amx", 0.033}}, 1.3) == "gemm");
    CHECK(choose_fastest({{"direct", 0.0}, {"gemm", 0.012}}, 1.3) == "gemm");  // no valid reference
}

TEST_CASE("calibration: k buckets and key")
{
    CHECK(calibration_k_bucket(1) == 1);
    CHECK(calibration_k_bucket(3) == 4);
    CHECK(calibration_k_bucket(16) == 16);
    CHECK(calibration_k_bucket(17) == 32);
    CHECK(calibration_k_bucket(384) == 512);
    CHECK(calibration_k_bucket(100000) == 4096);
    CHECK_THROWS_AS(calibration_k_bucket(0), InvalidArgument);
    const std::string key = calibration_key("openmp", "2 threads, AVX2", "shared", 512);
    CHECK(key.find(calibration_machine()) == 0);
    CHECK(key.find(calibration_build()) != std::string::npos);
    CHECK(key.find("| openmp | 2 threads, AVX2 | shared | k<=512") != std::string::npos);
    CHECK(calibration_build().find("meanshift ") == 0);
}

TEST_CASE("calibration: file round trip, corrupt file, concurrent writers")
{
    const std::string path = temp_path("c.json");
    CalibrationFile a(path);
    a.load();  // missing: empty, no warning
    CHECK(a.entries().empty());
    CHECK(a.warning().empty());
    a.put(entry("key one", "gemm"));
    a.save();  // creates the folder

    CalibrationFile b(path);
    b.load();
    REQUIRE(b.find("key one"));
    CHECK(b.find("key one")->choice == "gemm");
    CHECK(b.find("key one")->k_bucket == 64);
    CHECK(b.find("key one")->timings.size() == 2);
    CHECK(!b.find("key two"));

    // A second writer that loaded before `a` saved its next entry: both entries survive.
    CalibrationFile c(path);
    c.load();
    a.put(entry("key two", "direct"));
    a.save();
    c.put(entry("key three", "gemm"));
    c.save();
    CalibrationFile d(path);
    d.load();
    CHECK(d.entries().size() == 3);
    CHECK(d.find("key two")->choice == "direct");

    for (const char* junk : {"{ not json", "[1, 2, 3]", "{\"format\": 99, \"entries\": []}",
                             "{\"format\": 1, \"entries\": [{\"key\": 3}]}", ""}) {
        CAPTURE(junk);
        std::ofstream(path, std::ios::trunc) << junk;
        CalibrationFile e(path);
        e.load();
        CHECK(e.entries().empty());
        CHECK(e.warning().find("ignored") != std::string::npos);
        e.put(entry("key four", "gemm"));
        e.save();  // rewritten whole
        CalibrationFile f(path);
        f.load();
        CHECK(f.warning().empty());
        CHECK(f.entries().size() == 1);
    }
    std::remove(path.c_str());
}

TEST_CASE("calibration: off, auto and rerun")
{
    BackendOptions o;
    o.calibration_file = temp_path("modes.json");
    CalibrationEntry id;
    id.backend = "test-backend";
    id.device = "device " + o.calibration_file;  // a key no other test meets
    id.model = "shared";
    id.k_bucket = 8;
    int calls = 0;
    auto measure = [&] {
        ++calls;
        return std::vector<CalibrationTiming>{{"direct", 0.03}, {"gemm", 0.01 * calls}};
    };

    o.calibration = Calibration::Off;  // nothing measured, nothing written
    CHECK(!calibrated(o, id, measure));
    CHECK(calls == 0);
    CHECK(!exists(o.calibration_file));

    o.calibration = Calibration::Auto;
    CHECK(!calibrated(o, id, measure, /*may_measure=*/false));  // not yet measured, not allowed to
    CHECK(calls == 0);
    auto first = calibrated(o, id, measure);
    REQUIRE(first);
    CHECK(calls == 1);
    CHECK(first->choice == "gemm");
    CHECK(exists(o.calibration_file));
    CHECK(calibrated(o, id, measure)->choice == "gemm");  // cached: not measured again
    CHECK(calls == 1);

    o.calibration = Calibration::Rerun;  // once per process and key
    CHECK(calibrated(o, id, measure)->timings[1].seconds == doctest::Approx(0.02));
    CHECK(calibrated(o, id, measure)->timings[1].seconds == doctest::Approx(0.02));
    CHECK(calls == 2);
    CalibrationFile file(o.calibration_file);
    file.load();
    REQUIRE(file.entries().size() == 1);
    CHECK(file.entries()[0].timings[1].seconds == doctest::Approx(0.02));
    std::remove(o.calibration_file.c_str());
}

TEST_CASE("calibration: the openmp backend measures direct and GEMM forms")
{
    BackendOptions o;
    o.threads = 1;
    o.calibration_file = temp_path("openmp.json");
    o.calibration = Calibration::Off;
    try {
        make_backend("openmp", o);
    } catch (const Error&) {
        return;  // not compiled in
    }
    CHECK(!calibrate("openmp", o, 4, KernelModel::Shared));
    CHECK(!calibrate("serial", BackendOptions{}, 4, KernelModel::Shared));  // nothing to calibrate
    CHECK(!exists(o.calibration_file));

    o.calibration = Calibration::Rerun;
    const auto e = calibrate("openmp", o, 3, KernelModel::PerPoint);
    REQUIRE(e);
    CHECK(e->k_bucket == 4);
    CHECK(e->model == "per-point");
    CHECK(e->device.find("1 thread, ") == 0);
    REQUIRE(e->timings.size() >= 2);
    CHECK(e->timings[0].form == "direct");
    CHECK(e->timings[1].form == "gemm");
    // The backend's margin (1.3) applied in the candidates' order.
    CHECK(e->choice == choose_fastest(e->timings, 1.3));
    CalibrationFile file(o.calibration_file);
    file.load();
    CHECK(file.find(e->key));
    std::remove(o.calibration_file.c_str());
}
