// Conformance of the truncated kernel (Options::cutoff), the neighbour grid and weighted points:
// the backend under test against the serial oracle with the same options. Backends without a
// truncated kernel (Backend::supports_cutoff() false) must still give the exact answer: they are
// checked against the exact oracle and must say so in Result::search.
#include "conformance.hpp"

#include <cmath>
#include <limits>

using namespace meanshift;
using namespace mstest;

namespace {

bool backend_truncates()
{
    return make_backend(conf::backend())->supports_cutoff();
}

/// |got − want| of mode (i, d) over what is allowed: tol bandwidths (data units / h) plus float32
/// output rounding.
double mode_error(const Result& got, const Result& want, Index i, Index d, double h, double tol)
{
    const double allowed = tol * h + std::ldexp(std::abs(double(want.modes(i, d))), -23);
    return std::abs(double(got.modes(i, d)) - double(want.modes(i, d))) / allowed;
}

/// Same partition, modes within tol bandwidths (mode_error <= 1).
void check_close(const Result& got, const Result& want, double h, double tol)
{
    CHECK(same_partition(got.labels, want.labels));
    REQUIRE(got.modes.rows() == want.modes.rows());
    double worst = 0;
    for (Index i = 0; i < got.modes.rows(); ++i)
        for (Index d = 0; d < got.modes.cols(); ++d) worst = std::max(worst, mode_error(got, want, i, d, h, tol));
    CHECK(worst <= 1.0);
}

/// The truncated kernel is discontinuous at D = c: a pair that float32 rounding puts on the other
/// side of the cutoff than float64 adds or drops a weight e^{-c²/2} at distance c. Against a mode's
/// total weight of at least 10 (the blobs here have >= 30 points near each mode) that moves the
/// mode by at most c·e^{-c²/2}/10 bandwidths (seen: 4.5e-3 at c = 2.5, k = 16, openmp vs serial).
double boundary_allowance(double c)
{
    return std::isfinite(c) ? 0.1 * c * std::exp(-0.5 * c * c) : 0.0;
}

/// check_close for densities with many nearby maxima (per-point sigmas down to 0.05 bandwidths): a
/// seed that starts near the boundary between two basins can be carried to either neighbouring
/// maximum by float32 vs float64 rounding (seed 7726567060337582537, -O1 sanitizer build: one of
/// 180 rows, converged in both runs, 0.5 bandwidths apart). Such a row is accepted only when the
/// backend's mode is itself a maximum of the oracle's density: the float64 oracle started there
/// stays within tol. At most 2 % of the rows may be such; the partition is compared on the rest.
void check_close_or_neighbouring_mode(const Result& got, const Result& want, const MatrixF& data, Options oracle,
                                      double h, double tol)
{
    REQUIRE(got.modes.rows() == want.modes.rows());
    const Index m = got.modes.rows(), k = got.modes.cols();
    std::vector<Index> apart;
    for (Index i = 0; i < m; ++i)
        for (Index d = 0; d < k; ++d)
            if (mode_error(got, want, i, d, h, tol) > 1.0) {
                apart.push_back(i);
                break;
            }
    INFO(apart.size() << " of " << m << " rows reached another maximum than the oracle's");
    CHECK(Index(apart.size()) <= m / 50);
    if (!apart.empty()) {
        MatrixF seeds(Index(apart.size()), k);
        for (std::size_t j = 0; j < apart.size(); ++j) seeds.row(Index(j)) = got.modes.row(apart[j]);
        oracle.grouping = GroupingMethod::None;
        const Eigen::Ref<const MatrixF> seeds_ref(seeds);
        const Result again = cluster(data, oracle, &seeds_ref);
        for (std::size_t j = 0; j < apart.size(); ++j)
            for (Index d = 0; d < k; ++d) {
                INFO("row " << apart[j] << ": the oracle leaves the backend's mode in dimension " << d);
                CHECK(std::abs(double(again.modes(Index(j), d)) - double(seeds(Index(j), d))) <= tol * h);
            }
    }
    std::vector<int> a, b;
    for (Index i = 0, j = 0; i < m; ++i) {
        if (j < Index(apart.size()) && apart[std::size_t(j)] == i) {
            ++j;
            continue;
        }
        a.push_back(got.labels[std::size_t(i)]);
        b.push_back(want.labels[std::size_t(i)]);
    }
    CHECK(same_partition(a, b));
}

Options truncated(const Bandwidth& bw, double cutoff, NeighbourSearch s, const std::string& name = conf::backend())
{
    Options o = conf::options(bw, name);
    o.cutoff = cutoff;
    o.search = s;
    o.seeding = Seeding::AllPoints;
    return o;
}

}  // namespace

TEST_CASE(
    "conformance truncated: blobs k = 1, 2, 3, 5, 16, grid, kd-tree and brute force, cutoff 2.5 and 3 vs the oracle")
{
    const bool trunc = backend_truncates();
    auto rng = make_rng("conf-truncated-blobs");
    MSTEST_SEED_INFO();
    for (int k : {1, 2, 3, 5, 16}) {
        const Blobs b = make_blobs(rng, k, {120, 90, 60}, {0.6, 0.5, 0.4}, 9.0);
        for (double c : {2.5, 3.0})
            for (NeighbourSearch s : {NeighbourSearch::Grid, NeighbourSearch::Tree, NeighbourSearch::BruteForce}) {
                INFO("k = " << k << ", cutoff " << c << ", search " << int(s));
                const Options o = truncated(Bandwidth::isotropic(1.0), c, s);
                const Result got = cluster(b.data, o);
                const Options oo =
                    trunc ? truncated(Bandwidth::isotropic(1.0), c, s, "serial")
                          : truncated(Bandwidth::isotropic(1.0), std::numeric_limits<double>::infinity(), s, "serial");
                const Result want = cluster(b.data, oo);
                INFO("search: " << got.search);
                if (trunc) {
                    CHECK(got.cutoff == c);
                    if (s == NeighbourSearch::Grid && k <= 3) CHECK(got.search.find("grid") != std::string::npos);
                    if (s == NeighbourSearch::BruteForce) CHECK(got.search.find("brute force") != std::string::npos);
                    if (s == NeighbourSearch::Tree) CHECK(got.search.find("kd-tree") == 0);
                } else {
                    CHECK(got.search == "exact (backend has no truncated kernel yet)");
                }
                check_close(got, want, 1.0,
                            4.0 * (o.tolerance + conf::step_tolerance(12.0)) + (trunc ? boundary_allowance(c) : 0.0));
            }
    }
}

TEST_CASE("conformance truncated: every topology, ragged n, modes crossing cells")
{
    if (!backend_truncates()) return;
    auto rng = make_rng("conf-truncated-topo");
    MSTEST_SEED_INFO();
    const Blobs b = make_blobs(rng, 2, {101, 77, 33}, {0.9, 0.7, 0.5}, 7.0);
    auto be = make_backend(conf::backend());
    PreparedData probe;
    probe.points = b.data.cast<double>();
    probe.finalize();
    for (const Topology& t : conf::topologies(*be, probe)) {
        INFO("topology " << t.to_string());
        Options o = truncated(Bandwidth::isotropic(1.0), 3.0, NeighbourSearch::Grid);
        o.topology = t;
        const Result got = cluster(b.data, o);
        const Result want = cluster(b.data, truncated(Bandwidth::isotropic(1.0), 3.0, NeighbourSearch::Grid, "serial"));
        check_close(got, want, 1.0, 4.0 * (o.tolerance + conf::step_tolerance(12.0)) + boundary_allowance(3.0));
        // Seeds far from the data still ascend (to the border cells' points) or report no support.
        Options f = o;
        f.fixed_iterations = 3;
        const Result gf = cluster(b.data, f);
        Options fw = truncated(Bandwidth::isotropic(1.0), 3.0, NeighbourSearch::Grid, "serial");
        fw.fixed_iterations = 3;
        const Result wf = cluster(b.data, fw);
        check_close(gf, wf, 1.0, 3.0 * conf::step_tolerance(12.0));
    }
}

TEST_CASE("conformance truncated: per-point H_i whose sigmas differ by 100x, grid and kd-tree vs the oracle")
{
    const bool trunc = backend_truncates();
    if (!trunc) {
        // The exact kernel in float32 (GPU backends without ranges yet) and in float64 part ways on
        // this data: modes of points with sigma 0.05 far from the rest live on weights below
        // float32's range (flushed to 0), which the float64 oracle still counts (H200, 2026-11-23:
        // different partitions). The truncated kernel is what this case tests.
        MESSAGE("skipped: backend '" << conf::backend() << "' has no truncated kernel");
        return;
    }
    auto rng = make_rng("conf-truncated-perpoint");
    MSTEST_SEED_INFO();
    const Blobs b = make_blobs(rng, 2, {80, 60, 40}, {0.5, 0.5, 0.5}, 40.0);
    MatrixD h(b.data.rows(), 2);
    std::uniform_real_distribution<double> U(0.0, 1.0);
    for (Index i = 0; i < h.rows(); ++i) h.row(i) << std::pow(100.0, U(rng)) * 0.05, std::pow(100.0, U(rng)) * 0.05;
    for (NeighbourSearch s : {NeighbourSearch::Grid, NeighbourSearch::Tree, NeighbourSearch::BruteForce}) {
        Options o = truncated(Bandwidth::per_point(h), 3.0, s);
        o.max_iterations = 100;
        const Result got = cluster(b.data, o);
        Options oo =
            truncated(Bandwidth::per_point(h), trunc ? 3.0 : std::numeric_limits<double>::infinity(), s, "serial");
        oo.max_iterations = 100;
        const Result want = cluster(b.data, oo);
        INFO("search: " << got.search);
        check_close_or_neighbouring_mode(got, want, b.data, oo, 5.0, 4.0 * (o.tolerance + conf::step_tolerance(100.0)));
    }
}

TEST_CASE("conformance weighted: sample weights, exact and truncated, shared and per-point H vs the oracle")
{
    const bool trunc = backend_truncates();
    auto rng = make_rng("conf-weighted");
    MSTEST_SEED_INFO();
    const Blobs b = make_blobs(rng, 3, {90, 70, 50}, {0.6, 0.5, 0.4}, 8.0);
    std::vector<float> w(std::size_t(b.data.rows()));
    std::uniform_real_distribution<float> U(0.0f, 3.0f);
    for (auto& v : w) v = U(rng);
    w[3] = 0.0f;  // a zero weight: contributes nothing, still labelled
    for (double c : {std::numeric_limits<double>::infinity(), 3.0}) {
        INFO("cutoff " << c);
        Options o = truncated(Bandwidth::isotropic(1.0), c, NeighbourSearch::Auto);
        const Result got = cluster(b.data, o, w.data());
        Options oo = truncated(Bandwidth::isotropic(1.0), trunc ? c : std::numeric_limits<double>::infinity(),
                               NeighbourSearch::Auto, "serial");
        const Result want = cluster(b.data, oo, w.data());
        CHECK(got.labels.size() == std::size_t(b.data.rows()));
        check_close(got, want, 1.0, 4.0 * (o.tolerance + conf::step_tolerance(12.0)));
    }
    // Weights = 2 for every point give the unweighted answer.
    std::vector<float> two(w.size(), 2.0f);
    const Options o = truncated(Bandwidth::isotropic(1.0), 3.0, NeighbourSearch::Auto);
    check_close(cluster(b.data, o, two.data()), cluster(b.data, o), 1.0,
                4.0 * (o.tolerance + conf::step_tolerance(12.0)));
}

TEST_CASE("conformance truncated: bin seeding and binned data vs the oracle")
{
    auto rng = make_rng("conf-bins");
    MSTEST_SEED_INFO();
    const Blobs b = make_blobs(rng, 2, {300, 200, 100}, {0.6, 0.5, 0.4}, 8.0);
    for (bool bin_data : {false, true}) {
        Options o = conf::options(Bandwidth::isotropic(1.0));
        o.seeding = Seeding::Bins;
        o.bin_size = 0.45;  // an explicit bin size: bin seeding even where the exact answer is cheap (small n)
        o.bin_data = bin_data;
        Options oo = o;
        oo.backend = "serial";
        if (!backend_truncates()) oo.cutoff = std::numeric_limits<double>::infinity();
        const Result got = cluster(b.data, o), want = cluster(b.data, oo);
        CHECK(got.labels.size() == std::size_t(b.data.rows()));
        CHECK(got.seed_count < b.data.rows());
        check_close(got, want, 1.0, 4.0 * (o.tolerance + conf::step_tolerance(12.0)));
    }
}
