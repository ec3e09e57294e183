// Regression tests of the adversarial audit for the core library and the openmp
// backend: wide inputs (item 1), thread counts no machine can start (item 2), bin keys that
// overflowed int64 (item 3), memory quadratic in k (item 5), the adaptive window's int overflow
// (item 6) and the memory estimate checked before allocating (Options::max_memory).
#include "test_data.hpp"
#include "test_support.hpp"

#include "skeleton/src/core/array_scan.hpp"
#include "skeleton/src/approx/boundary_bins.hpp"
#include "skeleton/src/core/parallel.hpp"
#include "skeleton/src/approx/seeding.hpp"

#include <meanshift/meanshift.hpp>
#include <meanshift/registry.hpp>
#include <meanshift/segmentation.hpp>

#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace meanshift;

namespace {

bool has_backend(const std::string& name)
{
    for (const auto& b : list_backends())
        if (b.name == name) return b.usable;
    return false;
}

using mstest::same_partition;

/// Default options (bin seeding, data binning, truncated kernel) against options.exact on the
/// same input: the same partition, and the default run says why it left the bins.
void check_like_exact(const MatrixF& X, Options o, const std::string& what, const float* weights = nullptr)
{
    INFO(what);
    o.backend = "serial";
    const Result fast = weights ? cluster(X, o, weights) : cluster(X, o);
    Options e = o;
    e.exact = true;
    const Result exact = weights ? cluster(X, e, weights) : cluster(X, e);
    INFO("default seeding: " << fast.seeding << "; search: " << fast.search);
    CHECK(same_partition(fast.labels, exact.labels));
    CHECK(fast.cluster_sizes.size() == exact.cluster_sizes.size());
}

/// This process's resident memory now (bytes), from /proc/self/statm; 0 where it cannot be read.
long long resident_bytes()
{
    std::ifstream statm("/proc/self/statm");
    long long pages = 0, resident = 0;
    if (!(statm >> pages >> resident)) return 0;
    return resident * static_cast<long long>(sysconf(_SC_PAGESIZE));
}

/// The peak resident memory (bytes) that `body` adds, run in a child process (fork: this
/// process's own peak does not count). Returns -1 when the child failed.
template <class F>
long long child_peak_bytes(F&& body)
{
    // The child starts with the parent's resident pages (all earlier tests, and ASan's shadow and
    // quarantine); only what the body adds is its own.
    const long long inherited = resident_bytes();
    const pid_t pid = fork();
    if (pid == 0) {
        int rc = 0;
        try {
            body();
        } catch (...) {
            rc = 3;
        }
        _exit(rc);
    }
    int status = 0;
    struct rusage ru {};
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    return std::max(1LL, static_cast<long long>(ru.ru_maxrss) * 1024 - inherited);  // Linux: kB
}

}  // namespace

// ---- item 1: wide inputs -----------------------------------------------------------------------

TEST_CASE("float_column_range: one row of 1,500,000 columns (per-thread copies overflowed the stack)")
{
    // 1.5M columns × 2 arrays × 4 bytes = 12 MB per thread copy: beyond an 8 MB stack.
    for (std::size_t rows : {std::size_t(1), std::size_t(3)}) {
        const std::size_t cols = 1500000;
        std::vector<float> x(rows * cols);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) - 500.0f;
        std::vector<float> lo, hi;
        REQUIRE(detail::float_column_range(x.data(), rows, cols, lo, hi));
        REQUIRE(lo.size() == cols);
        bool ok = true;
        for (std::size_t d = 0; d < cols; ++d) {
            float l = x[d], h = x[d];
            for (std::size_t i = 1; i < rows; ++i) {
                l = std::min(l, x[i * cols + d]);
                h = std::max(h, x[i * cols + d]);
            }
            ok = ok && lo[d] == l && hi[d] == h;
        }
        CHECK(ok);
        x[rows * cols - 1] = std::numeric_limits<float>::quiet_NaN();
        CHECK_FALSE(detail::float_column_range(x.data(), rows, cols, lo, hi));
    }
    // Narrow rows (the per-thread heap copies) agree with the definition too.
    std::vector<float> y(200000 * 3);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>((i * 104729) % 10007) * 0.5f;
    std::vector<float> lo, hi;
    REQUIRE(detail::float_column_range(y.data(), 200000, 3, lo, hi));
    for (std::size_t d = 0; d < 3; ++d) {
        float l = y[d], h = y[d];
        for (std::size_t i = 0; i < 200000; ++i) l = std::min(l, y[i * 3 + d]), h = std::max(h, y[i * 3 + d]);
        CHECK(lo[d] == l);
        CHECK(hi[d] == h);
    }
}

TEST_CASE("cluster: 3 x 1,500,000 points (the Python MeanShift crash) on serial and openmp")
{
    MatrixF X = MatrixF::Zero(3, 1500000);
    X(2, 7) = 10.0f;
    for (const char* backend : {"serial", "openmp"}) {
        if (!has_backend(backend)) continue;
        INFO(backend);
        Options o;
        o.backend = backend;
        o.bandwidth = Bandwidth::isotropic(1.0);
        const Result r = cluster(X, o);
        REQUIRE(r.labels.size() == 3);
        CHECK(r.labels[0] == r.labels[1]);
        CHECK(r.labels[0] != r.labels[2]);
    }
}

// ---- item 2: thread counts ---------------------------------------------------------------------

TEST_CASE("threads and ppus above max_threads() are refused with the option, the value and the limit")
{
    const int limit = max_threads();
    CHECK(limit >= 1);
    CHECK(limit <= kMaxThreadsPerHardwareThread * std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
    MatrixF X = MatrixF::Random(50, 2);
    struct Case {
        const char* backend;
        const char* option;  // the name the message must give
        int value;
        void (*set)(Options&, int);
    };
    const Case cases[] = {
        {"serial", "threads", 100000, [](Options& o, int v) { o.backend_options.threads = v; }},
        {"openmp", "threads", 100000, [](Options& o, int v) { o.backend_options.threads = v; }},
        {"openmp", "ppus", 1000000, [](Options& o, int v) { o.topology.ppus = v; }},
    };
    for (const Case& c : cases) {
        if (!has_backend(c.backend)) continue;
        INFO(c.backend << ", " << c.option << " = " << c.value);
        Options o;
        o.backend = c.backend;
        c.set(o, c.value);
        try {
            (void)cluster(X, o);
            FAIL("accepted");
        } catch (const InvalidArgument& e) {
            const std::string m = e.what();
            CHECK(m.find(c.option) != std::string::npos);
            CHECK(m.find(std::to_string(c.value)) != std::string::npos);
            CHECK(m.find(std::to_string(limit)) != std::string::npos);
        }
    }
    if (has_backend("openmp")) {
        Options o;
        o.backend = "openmp";
        // At the limit it runs.
        o.topology.ppus = std::min(limit, 4);
        CHECK(cluster(X, o).labels.size() == 50);
    }
    // The host passes never start more than the limit, whatever the caller asked.
    const detail::HostThreads scope(100000);
    CHECK(detail::host_threads() <= limit);
}

// ---- item 3: bin keys --------------------------------------------------------------------------

TEST_CASE("bins_fit: keys beyond 2^53 cells are refused, make_bins never overflows")
{
    MatrixD P(3, 2);
    P << 5e18, 2, -5e18, -2, -5e18, 2;
    CHECK_FALSE(detail::bins_fit(P, 0.5));
    CHECK_THROWS_AS(detail::make_bins(P, 0.5, nullptr), InvalidArgument);
    CHECK(detail::bins_fit(P, 1e4));
    CHECK_FALSE(detail::bins_fit(P, 0.0));
    MatrixD Q(2, 1);
    Q << 1, -1;
    CHECK_FALSE(detail::bins_fit(Q, 1e-300));
    CHECK(detail::bins_fit(Q, 1e-15));
}

TEST_CASE("tiny bandwidths and huge coordinates: the default options give exact's partition")
{
    auto rng = mstest::make_rng("hardening-bins");
    MSTEST_SEED_INFO();
    const auto blobs = mstest::make_blobs(rng, 2, {100, 100, 100}, {0.5, 0.5, 0.5}, 6.0, 3.0);
    const MatrixF& X = blobs.data;
    for (double h : {1e-20, 1e-30, 1e-15}) {
        Options o;
        o.bandwidth = Bandwidth::isotropic(h);
        o.bin_size = 0.45;  // an explicit bin size: bin seeding even where the exact answer is cheap (small n)
        check_like_exact(X, o, "isotropic bandwidth " + std::to_string(h));
        // Every point is its own mode here: 300 clusters.
        o.backend = "serial";
        const Result r = cluster(X, o);
        CHECK(r.cluster_sizes.size() == 300);
        if (h < 1e-15) CHECK(r.seeding.find("declined") != std::string::npos);
        o.bin_data = true;
        check_like_exact(X, o, "bin_data, bandwidth " + std::to_string(h));
    }
    struct Case {
        const char* what;
        Bandwidth bandwidth;
        double bin_size, data_bin_size;
    };
    const Case cases[] = {
        {"diagonal bandwidths 1e-30, 1", Bandwidth::diagonal({1e-30, 1.0}), 0, 0},
        {"per-point bandwidths 1e-30", Bandwidth::per_point(MatrixD::Constant(X.rows(), 2, 1e-30)), 0, 0},
        {"bin_size 1e-300", Bandwidth::isotropic(1.0), 1e-300, 0},
        {"data_bin_size 1e-300", Bandwidth::isotropic(1.0), 0.5, 1e-300},
    };
    for (const Case& c : cases) {
        Options o;
        o.bandwidth = c.bandwidth;
        if (c.bin_size > 0) o.bin_size = c.bin_size;
        if (c.data_bin_size > 0) o.data_bin_size = c.data_bin_size;
        check_like_exact(X, o, c.what);
        if (c.data_bin_size > 0) {
            o.backend = "serial";
            CHECK(cluster(X, o).seeding.find("not binned") != std::string::npos);
        }
    }
    {
        std::vector<float> w(static_cast<std::size_t>(X.rows()), 2.0f);
        Options o;
        o.bandwidth = Bandwidth::isotropic(1e-25);
        check_like_exact(X, o, "weighted, bandwidth 1e-25", w.data());
    }
}

TEST_CASE("a coordinate of 1e19 next to small ones: [[1e19, 1], [0, 1], [5, 5]] gives exact's three clusters")
{
    MatrixF X(3, 2);
    X << 1e19f, 1, 0, 1, 5, 5;
    for (const char* backend : {"serial", "openmp"}) {
        if (!has_backend(backend)) continue;
        INFO(backend);
        Options o;
        o.backend = backend;
        o.bandwidth = Bandwidth::isotropic(1.0);
        o.bin_size = 0.45;  // an explicit bin size: bin seeding even where the exact answer is cheap (small n)
        const Result r = cluster(X, o);
        INFO(r.seeding);
        CHECK(r.cluster_sizes.size() == 3);
        CHECK(r.labels[0] != r.labels[1]);
        CHECK(r.labels[1] != r.labels[2]);
        CHECK(r.seeding.find("declined") != std::string::npos);
        check_like_exact(X, o, std::string(backend) + ": 1e19");
    }
    // A uint64 NPY holding 2^64 - 1, as float32.
    MatrixF Y(3, 1);
    Y << 1.8446744e19f, 0, 3;
    Options o;
    o.bandwidth = Bandwidth::isotropic(1.0);
    check_like_exact(Y, o, "2^64 - 1");
}

TEST_CASE("openmp GEMM form (k >= 32): a bandwidth of 1e-20 gives every point its own cluster, as serial exact")
{
    // float32 squared norms of the expanded |y − x|² overflowed: 55 clusters instead of 300, or NaN.
    if (!has_backend("openmp")) return;
    auto rng = mstest::make_rng("hardening-gemm");
    MSTEST_SEED_INFO();
    const auto blobs = mstest::make_blobs(rng, 40, {100, 100, 100}, {0.5, 0.5, 0.5}, 6.0, 3.0);
    for (double h : {1e-20, 1e-36}) {
        INFO("h = " << h);
        Options o;
        o.bandwidth = Bandwidth::isotropic(h);
        o.backend = "serial";
        o.exact = true;
        const Result want = cluster(blobs.data, o);
        o.backend = "openmp";
        for (bool exact : {false, true}) {
            o.exact = exact;
            const Result got = cluster(blobs.data, o);
            CHECK(got.modes.allFinite());
            CHECK(same_partition(got.labels, want.labels));
            CHECK(got.cluster_sizes.size() == want.cluster_sizes.size());
        }
    }
}

TEST_CASE("openmp GEMM form: one outlier 1e5..1e16 bandwidths away leaves the other clusters as serial float64 exact")
{
    // The expansion −½|q − p|² = q'·p' − ½|q'|² − ½|p'|² around a block's centre cancelled when an
    // outlier's mode shared the block (the small points merged, fuzz_cluster), and from 1e8 on the
    // float32 layouts round the other points together along the outlier's axis (the direct form too).
    // 1e5: the float32 forms (the outlier's mode in the block of n = 31); from 1e6: float64 sums.
    if (!has_backend("openmp")) return;
    auto rng = mstest::make_rng("hardening-gemm-outlier");
    MSTEST_SEED_INFO();
    for (int k : {6, 64})
        for (int size : {10, 100}) {
            // n = 31: one block of modes with 1 thread (no grouping: the outlier's mode shares it);
            // n = 301 > 128 modes per block x 2 threads, so that Auto takes the GEMM form at k = 64. Blobs
            // of σ = 0.5 and h = 1 (k = 6) or 4 (k = 64), 8 bandwidths apart.
            const double h = k == 6 ? 1.0 : 4.0;
            const auto blobs = mstest::make_blobs(rng, k, {size, size, size}, {0.5, 0.5, 0.5}, 8.0 * h);
            MatrixF X(blobs.data.rows() + 1, k);
            X.topRows(blobs.data.rows()) = blobs.data;
            for (double far : {1e5, 1e6, 1e8, 1e12, 1e16}) {
                X.row(X.rows() - 1).setZero();
                X(X.rows() - 1, k / 2) = static_cast<float>(far * h);
                Options o;
                o.bandwidth = Bandwidth::isotropic(h);
                o.backend = "serial";
                o.exact = true;
                const Result want = cluster(X, o);
                // (serial's float64 keeps 2^-53 of the outlier's distance: at 1e16 it, too, rounds the blobs)
                if (far < 1e15) CHECK(want.cluster_sizes.size() == 4);
                o.backend = "openmp";
                for (PairForm form : {PairForm::Gemm, PairForm::Auto})
                    for (int threads : {1, 2}) {
                        INFO("k = " << k << ", n = " << X.rows() << ", outlier " << far << ", pair form "
                                    << (form == PairForm::Gemm ? "gemm" : "auto") << ", threads " << threads);
                        o.backend_options.pair_form = form;
                        o.backend_options.threads = threads;
                        const Result got = cluster(X, o);
                        CHECK(got.modes.allFinite());
                        CHECK(same_partition(got.labels, want.labels));
                        REQUIRE(got.cluster_sizes.size() == want.cluster_sizes.size());
                        // float32 resolves the other points' coordinates along the outlier's axis to
                        // 1e5 · 2^-25 = 0.003 bandwidths (beyond 2^16: float64 sums, as serial)
                        double worst = 0;
                        for (Index i = 0; i + 1 < X.rows(); ++i)
                            for (int d = 0; d < k; ++d)
                                worst = std::max(worst, double(std::abs(got.modes(i, d) - want.modes(i, d))));
                        CHECK(worst < (far < 1e6 ? 0.1 : 1e-6) * h);
                    }
            }
        }
}

// ---- item 5: memory linear in k ----------------------------------------------------------------

TEST_CASE("boundary_bins: no k x k table above k = 3, and the face rule unchanged")
{
    CHECK(detail::neighbour_offsets(20000).empty());  // was 2k rows of k offsets: 6.4 GB at k = 20,000
    CHECK(detail::neighbour_offsets(2).size() == 8 * 2);
    // k = 5: bins along a line in dim 3; bin 1's face neighbour (+1 in dim 3) has another label.
    const int k = 5;
    std::vector<std::int64_t> keys;
    for (int j = 0; j < 4; ++j)
        for (int d = 0; d < k; ++d) keys.push_back(d == 3 ? j : 0);
    keys.insert(keys.end(), {1, 1, 0, 0, 0});  // a diagonal neighbour only of bin 0 (not a face)
    const std::vector<int> label = {0, 0, 1, 1, 2};
    const std::vector<Index> count = {5, 5, 5, 5, 5};
    auto find = [&](const std::int64_t* c) { return detail::find_cell(keys, 5, k, c); };
    const std::vector<char> b = detail::boundary_bins(keys, label, count, 1, k, find);
    CHECK(b == std::vector<char>{0, 1, 1, 0, 0});
}

TEST_CASE("boundary_bins above k = 3: the hashed face lookup agrees with find() on every face")
{
    auto rng = mstest::make_rng("hardening-faces");
    MSTEST_SEED_INFO();
    for (int k : {4, 7, 12}) {
        // Random distinct keys in a small box (many face neighbours), sorted as make_bins sorts them.
        std::uniform_int_distribution<int> c(-2, 2), lab(0, 2);
        std::map<std::vector<std::int64_t>, int> cells;
        while (cells.size() < 300) {
            std::vector<std::int64_t> key(static_cast<std::size_t>(k));
            for (auto& v : key) v = c(rng);
            cells.emplace(key, lab(rng));
        }
        std::vector<std::int64_t> keys;
        std::vector<int> label;
        std::vector<Index> count;
        for (const auto& [key, l] : cells) {
            keys.insert(keys.end(), key.begin(), key.end());
            label.push_back(l);
            count.push_back(1 + l);
        }
        const std::size_t B = label.size();
        auto find = [&](const std::int64_t* cell) { return detail::find_cell(keys, B, std::size_t(k), cell); };
        const std::vector<char> got = detail::boundary_bins(keys, label, count, 2, k, find);
        for (std::size_t j = 0; j < B; ++j) {  // the definition: 2k faces through find()
            bool bd = count[j] < 2;
            std::vector<std::int64_t> cell(keys.begin() + std::ptrdiff_t(j * k),
                                           keys.begin() + std::ptrdiff_t((j + 1) * k));
            for (int d = 0; d < k; ++d)
                for (int sgn : {-1, 1}) {
                    cell[std::size_t(d)] += sgn;
                    const Index nb = find(cell.data());
                    bd = bd || (nb >= 0 && label[std::size_t(nb)] != label[j]);
                    cell[std::size_t(d)] -= sgn;
                }
            INFO("k = " << k << ", bin " << j);
            CHECK(bool(got[j]) == bd);
        }
    }
}

TEST_CASE("cluster: 10 x 20,000 points peak far below the old 8.5 GB (memory linear in k)")
{
    const long long peak = child_peak_bytes([] {
        MatrixF X(10, 20000);
        for (Index i = 0; i < X.size(); ++i) X.data()[i] = static_cast<float>((i * 7919) % 101) * 0.01f;
        Options o;
        o.backend = "serial";
        o.backend_options.threads = 1;  // the child of a fork: no OpenMP thread pool
        o.bandwidth = Bandwidth::isotropic(1.0);
        (void)cluster(X, o);
    });
    INFO("peak " << peak << " bytes");
    CHECK(peak > 0);
    CHECK(peak < (1LL << 30));  // 10 × 20,000 floats are 800 kB; the k × k table alone was 6.4 GB
}

// ---- item 6: the adaptive window ---------------------------------------------------------------

TEST_CASE("adaptive range bandwidths: window 100000 refused with the option, the value and the limit")
{
    const int H = 12, W = 9;
    std::vector<float> pixels(static_cast<std::size_t>(H * W * 3));
    for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>((i * 37) % 17);
    SegmentOptions::AdaptiveRange a;
    a.enabled = true;
    a.window = 100000;
    try {
        (void)adaptive_range_bandwidths(pixels.data(), H, W, 3, 2.0, 4.0, a);
        FAIL("window = 100000 was accepted");
    } catch (const InvalidArgument& e) {
        const std::string m = e.what();
        CHECK(m.find("window") != std::string::npos);
        CHECK(m.find("100000") != std::string::npos);
        CHECK(m.find(std::to_string(std::max(H, W))) != std::string::npos);
    }
    // The largest window and a default window from a huge hs (ceil(hs) overflowed int) both run and
    // agree: a window reaching past the image takes every pixel.
    a.window = std::max(H, W);
    const std::vector<float> at_limit = adaptive_range_bandwidths(pixels.data(), H, W, 3, 2.0, 4.0, a);
    a.window = 0;
    const std::vector<float> huge_hs = adaptive_range_bandwidths(pixels.data(), H, W, 3, 1e12, 4.0, a);
    CHECK(at_limit == huge_hs);
}

// ---- resource limits: Options::max_memory ------------------------------------------------------

TEST_CASE("max_memory: a run over the budget is refused before allocating, naming estimate and limit")
{
    MatrixF X = MatrixF::Random(2000, 4);
    Options o;
    o.backend = "serial";
    o.max_memory = 100000;  // 100 kB: below the 2000 x 4 points' prepared copies alone
    const std::size_t need = estimate_memory(2000, 4, o);
    CHECK(need > o.max_memory);
    try {
        (void)cluster(X, o);
        FAIL("a run over max_memory was accepted");
    } catch (const OutOfMemory& e) {
        const std::string m = e.what();
        CHECK(e.estimate() == need);
        CHECK(e.limit() == 100000);
        CHECK(m.find("max_memory") != std::string::npos);
        CHECK(m.find("100 kB") != std::string::npos);
    }
    o.max_memory = need;  // exactly the estimate: runs
    CHECK(cluster(X, o).labels.size() == 2000);
    o.max_memory = std::numeric_limits<std::size_t>::max();  // no check
    CHECK(cluster(X, o).labels.size() == 2000);
    o.max_memory = 0;  // the machine's available memory: a small run passes
    CHECK(cluster(X, o).labels.size() == 2000);
}

TEST_CASE("estimate_memory: grows with n, k, seeds and per-point bandwidths; saturates instead of overflowing")
{
    Options o;
    const std::size_t base = estimate_memory(1000, 4, o);
    CHECK(base >= 1000 * 4 * 12);  // at least the prepared float64 + float32 points
    CHECK(estimate_memory(2000, 4, o) > base);
    CHECK(estimate_memory(1000, 8, o) > base);
    CHECK(estimate_memory(1000, 4, o, 0, true) > base);
    // Linear in k (the k x k boundary table is gone): doubling k at most doubles it.
    CHECK(estimate_memory(10, 40000, o) <= 2 * estimate_memory(10, 20000, o));
    // bench --n 100000000000: no overflow, a huge value the check refuses.
    CHECK(estimate_memory(100000000000LL, 1000, o) > std::size_t(1e15));
    CHECK(estimate_memory(Index(1) << 50, 1 << 30, o) == std::numeric_limits<std::size_t>::max());
    o.max_memory = std::size_t(1) << 40;
    MatrixF X = MatrixF::Random(10, 2);
    CHECK(cluster(X, o).labels.size() == 10);
}

TEST_CASE("available_memory: known on Linux, positive")
{
#if defined(__linux__)
    CHECK(available_memory() > 0);
#endif
}
