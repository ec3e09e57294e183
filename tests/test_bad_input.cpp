// Bad input to cluster(): each case must throw the documented exception type with a message that
// names the problem — never crash, hang or return a silent wrong answer. Run under ASan/UBSan.
#include "test_support.hpp"

#include <meanshift/meanshift.hpp>

#include <limits>

using namespace meanshift;

namespace {
const float kNaNf = std::numeric_limits<float>::quiet_NaN();
const float kInff = std::numeric_limits<float>::infinity();

MatrixF small_data(Index n = 6, int k = 2)
{
    MatrixF x(n, k);
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d) x(i, d) = float(i % 3) + 0.25f * float(d);
    return x;
}

Options serial_options()
{
    Options o;
    o.backend = "serial";
    o.bandwidth = Bandwidth::isotropic(1.0);
    return o;
}
}  // namespace

TEST_CASE("bad input: NaN or Inf in data or seeds")
{
    const Options o = serial_options();
    for (float bad : {kNaNf, kInff, -kInff}) {
        INFO("value " << bad);
        MatrixF x = small_data();
        x(3, 1) = bad;
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "NaN", "finite");
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "data");
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x.data(), x.rows(), int(x.cols()), o), "NaN", "finite");

        const MatrixF good = small_data();
        MatrixF s = small_data(4);
        s(0, 0) = bad;
        const Eigen::Ref<const MatrixF> sr(s);
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(good, o, &sr), "seed");
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(good, o, &sr), "NaN", "finite");
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(good.data(), good.rows(), 2, o, s.data(), s.rows()), "seed");
    }
}

TEST_CASE("bad input: empty data, zero dimensions, null pointers, wrong seed shape")
{
    const Options o = serial_options();
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(MatrixF(0, 2), o), "n = 0", "empty", "at least one point");
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(MatrixF(5, 0), o), "k = 0", "dimension");
    const MatrixF x = small_data();
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x.data(), 0, 2, o), "n = 0", "empty", "at least one point");
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x.data(), 3, 0, o), "k = 0", "dimension");
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x.data(), -1, 2, o), "n = ", "at least one point", "negative");
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(nullptr, 3, 2, o), "null");

    const MatrixF wide = small_data(4, 3);
    const Eigen::Ref<const MatrixF> wr(wide);
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o, &wr), "seed");
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o, &wr), "column", "dimension");
    const MatrixF none(0, 2);
    const Eigen::Ref<const MatrixF> nr(none);
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o, &nr), "seed");
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x.data(), x.rows(), 2, o, x.data(), 0), "seed");
}

TEST_CASE("bad input: bandwidth shape and values")
{
    const MatrixF x = small_data(6, 3);
    Options o = serial_options();

    o.bandwidth = Bandwidth::diagonal({1.0, 2.0});  // k = 3
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "bandwidth");
    o.bandwidth = Bandwidth::diagonal({1.0, 2.0, 3.0, 4.0});
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "bandwidth");
    o.bandwidth = Bandwidth::exponential_last({1.0, 2.0});
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "bandwidth");
    o.bandwidth = Bandwidth::per_point(MatrixD::Ones(5, 3));  // n = 6
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "per-point", "bandwidth");
    o.bandwidth = Bandwidth::per_point(MatrixD::Ones(6, 2));
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "per-point", "bandwidth");
    o.bandwidth = Bandwidth::per_point(MatrixD::Ones(3, 6));  // same size, wrong shape
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "per-point", "bandwidth");

    // exponential_last needs k >= 2: a 1-D data set with a 2-parameter model is a mismatch.
    o.bandwidth = Bandwidth::exponential_last({1.0, 1.0});
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(small_data(4, 1), o), "bandwidth");
}

TEST_CASE("bad input: a finite bandwidth too large for float64/float32 names the value the user gave")
{
    Options o;
    o.backend = "serial";
    o.bandwidth = Bandwidth::isotropic(1e300);
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(small_data(5, 2), o), "sigma = 1e+300", "overflows", "float32");
}

TEST_CASE("bad input: singular H_i reached only through the data")
{
    Options o = serial_options();
    SUBCASE("exponential_last overflow and underflow of e^{y_k}")
    {
        o.bandwidth = Bandwidth::exponential_last({1.0, 1.0});
        MatrixF x = small_data(5, 2);
        x(2, 1) = 800.0f;
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "singular");
        x(2, 1) = -800.0f;
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "singular");
        x(2, 1) = -720.0f;  // denormal variance
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "singular");
    }
    SUBCASE("zero, denormal or overflowing per-point variance")
    {
        for (double h : {1e-170, 1e-160, 1e160}) {
            INFO("h = " << h);
            MatrixD hh = MatrixD::Ones(5, 2);
            hh(4, 0) = h;
            o.bandwidth = Bandwidth::per_point(hh);
            CHECK_THROWS_KEYWORD(InvalidArgument, cluster(small_data(5, 2), o), "out of range", "bandwidth",
                                 "of point 4");
        }
    }
    SUBCASE("shared bandwidth whose variance is zero, denormal or infinite")
    {
        for (double h : {1e-170, 1e-160, 1e160}) {
            INFO("h = " << h);
            try {
                o.bandwidth = Bandwidth::isotropic(h);
            } catch (const InvalidArgument&) {
                continue;  // rejected by the factory: fine
            }
            CHECK_THROWS_KEYWORD(InvalidArgument, cluster(small_data(5, 2), o), "out of range", "bandwidth");
        }
    }
}

TEST_CASE("bad input: prepared values that overflow float32 are rejected, not silently Inf/NaN")
{
    // Valid in float64, but the float32 copies that float32 backends compute with would overflow:
    // (a) h = 1e-30 makes whitened coordinates 1e40; (b) one per-point h of 1e-25 among h = 1 makes
    // that point's precision ~1e40 after whitening by the geometric mean. Every usable backend
    // (the check is the skeleton's, so also serial) must reject it with InvalidArgument, never
    // report a "backend defect" or return NaN.
    MatrixF x = small_data(5, 2);
    x(0, 0) = 1e10f;
    MatrixD hp = MatrixD::Ones(5, 2);
    hp(1, 0) = 1e-25;
    for (const auto& s : list_backends()) {
        if (!s.usable) continue;
        INFO("backend " << s.name);
        Options o = serial_options();
        o.backend = s.name;
        o.bandwidth = Bandwidth::isotropic(1e-30);
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "float32", "range");
        o.bandwidth = Bandwidth::per_point(hp);
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(small_data(5, 2), o), "float32", "range");
    }
}

TEST_CASE("bad input: backend names")
{
    const MatrixF x = small_data();
    Options o = serial_options();
    o.backend = "definitely-not-a-backend";
    CHECK_THROWS_KEYWORD(BackendUnavailable, cluster(x, o), "unknown");
    for (const auto& s : list_backends()) {
        if (s.usable) continue;
        INFO(s.name << ": " << s.reason);
        o.backend = s.name;
        CHECK_THROWS_KEYWORD(BackendUnavailable, cluster(x, o), s.compiled_in ? "not usable" : "not compiled");
    }
}

TEST_CASE("bad input: invalid topology for the chosen backend")
{
    const MatrixF x = small_data();
    Options o = serial_options();
    o.topology.f_vppu = 2;
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "f_vppu");
    o.topology = Topology{};
    o.topology.f_load = -3;
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "f_load");
    o.topology = Topology{};
    o.topology.ppus = -1;
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "ppu", "z");
}

TEST_CASE("bad input: iteration, tolerance and merge options")
{
    const MatrixF x = small_data();
    Options o = serial_options();
    for (int it : {0, -1}) {
        o = serial_options();
        o.max_iterations = it;
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "max_iterations");
        o = serial_options();
        o.fixed_iterations = it;
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "fixed_iterations");
    }
    for (double t : {-1e-9, -1.0, double(kNaNf)}) {
        INFO("value " << t);
        o = serial_options();
        o.tolerance = t;
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "tolerance");
        o = serial_options();
        o.merge_eps = t;
        CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "merge_eps");
    }
    o = serial_options();
    o.merge_eps = std::numeric_limits<double>::infinity();
    CHECK_THROWS_KEYWORD(InvalidArgument, cluster(x, o), "merge_eps");
    // Options are checked before the backend is created.
    o = serial_options();
    o.backend = "definitely-not-a-backend";
    o.max_iterations = 0;
    CHECK_THROWS_AS(cluster(x, o), InvalidArgument);
    CHECK_THROWS_AS(Clusterer{o}, InvalidArgument);
}
