// The kd-tree neighbour search (NeighbourSearch::Tree, KdTree): the truncated kernel over the
// tree's ranges gives the same steps and modes as brute force (it only skips pairs beyond the
// cutoff), for shared and per-point H up to k = 64, on the serial oracle and on openmp.
#include "test_data.hpp"
#include "test_support.hpp"

#include "skeleton/src/core/prepare.hpp"

#include <meanshift/meanshift.hpp>
#include <meanshift/registry.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace meanshift;
using namespace mstest;

namespace {

/// Prepared data of blobs `spacing` prepared units apart (whitened by h: shared H), or per-point H_i
/// with σ_id drawn log-uniform over [0.03, 0.03·spread] (prepared units).
PreparedData blob_data(std::mt19937_64& rng, int k, const std::vector<int>& sizes, double h, double spread = 0,
                       double spacing = 8)
{
    // Blobs further apart than the cutoff's reach, so the tree can prune.
    const Blobs b = make_blobs(rng, k, sizes, std::vector<double>(sizes.size(), 1.0), spacing * h);
    PreparedData D;
    D.points = b.data.cast<double>() / h;
    if (spread > 0) {
        D.model = KernelModel::PerPoint;
        D.precision.resize(D.n(), k);
        std::uniform_real_distribution<double> U(0.0, 1.0);
        for (Index i = 0; i < D.n(); ++i)
            for (int d = 0; d < k; ++d) {
                const double sigma = 0.03 * std::pow(spread, U(rng));
                D.precision(i, d) = 1.0 / (sigma * sigma);
            }
    }
    D.finalize();
    return D;
}

/// Modes at the data points (in the caller's order) moved by a little noise.
MatrixD modes_near(std::mt19937_64& rng, const PreparedData& D, Index m)
{
    std::normal_distribution<double> N(0.0, 0.3);
    MatrixD y(m, D.k());
    for (Index q = 0; q < m; ++q)
        for (int d = 0; d < D.k(); ++d) y(q, d) = D.points((q * 7919) % D.n(), d) + N(rng);
    return y;
}

/// One step of `modes` with `search` vs brute force on backend `name`, both with cutoff c;
/// returns the largest |difference| (prepared units) and the pairs each visited.
struct StepDiff {
    double max_diff = 0, pairs = 0, brute_pairs = 0;
    std::string search;
};
StepDiff step_vs_brute(const PreparedData& D0, const MatrixD& modes, double c, const std::string& name,
                       const std::string& oracle = "serial")
{
    auto T = std::make_shared<PreparedData>(D0);
    T->cutoff2 = c * c;
    StepDiff r;
    detail::build_search(*T, NeighbourSearch::Tree, r.search);
    REQUIRE(T->tree);
    REQUIRE(!T->grid);
    auto B = std::make_shared<PreparedData>(D0);
    B->cutoff2 = c * c;
    const Index m = modes.rows();
    MatrixD out_t(m, D0.k()), out_b(m, D0.k());
    StepReport rt, rb;
    make_backend(name)->bind(T, Topology{})->step_once(modes.data(), out_t.data(), m, &rt);
    make_backend(oracle)->bind(B, Topology{})->step_once(modes.data(), out_b.data(), m, &rb);
    r.max_diff = (out_t - out_b).cwiseAbs().maxCoeff();
    r.pairs = rt.pairs;
    r.brute_pairs = rb.pairs;
    return r;
}

}  // namespace

TEST_CASE("kdtree: one step over the tree's ranges equals brute force (serial float64), k = 8, 16, 32, 64")
{
    auto rng = make_rng("kdtree-step");
    MSTEST_SEED_INFO();
    for (int k : {8, 16, 32, 64}) {
        // Ragged n (not a multiple of the leaf size); h ~ √k/2 so that a blob is one mode.
        const PreparedData D = blob_data(rng, k, {331, 287, 240, 179}, std::sqrt(double(k)) / 2);
        const MatrixD y = modes_near(rng, D, 300);
        const StepDiff s = step_vs_brute(D, y, 3.0, "serial");
        INFO("k = " << k << ": " << s.search << ", pairs " << s.pairs << " of " << s.brute_pairs);
        CHECK(s.search.find("kd-tree") == 0);
        CHECK(s.max_diff <= 1e-10);
        CHECK(s.pairs < 0.6 * s.brute_pairs);  // separated blobs: the tree prunes the other blobs
    }
}

TEST_CASE("kdtree: per-point H_i with sigmas differing 30-100x: the reach boxes keep every pair within the cutoff")
{
    auto rng = make_rng("kdtree-perpoint");
    MSTEST_SEED_INFO();
    for (int k : {3, 16}) {
        for (double spread : {30.0, 100.0}) {
            // Reach up to 3 · 0.03 · 100 = 9 from points within 3 of their blob centre: blobs 20 apart.
            const PreparedData D = blob_data(rng, k, {400, 250, 150}, 1.0, spread, 20.0);
            const MatrixD y = modes_near(rng, D, 200);
            for (double c : {2.0, 3.0}) {
                const StepDiff s = step_vs_brute(D, y, c, "serial");
                INFO("k = " << k << ", spread " << spread << ", c = " << c << ": " << s.search);
                CHECK(s.max_diff <= 1e-10);
                CHECK(s.pairs < 0.8 * s.brute_pairs);
            }
        }
    }
}

TEST_CASE("kdtree: box_ranges returns ascending, disjoint leaves that hold every row the box can reach")
{
    auto rng = make_rng("kdtree-box");
    MSTEST_SEED_INFO();
    PreparedData D = blob_data(rng, 4, {500, 301, 200}, 1.0);  // n = 1001: ragged leaves
    D.cutoff2 = 2.5 * 2.5;
    std::string why;
    detail::build_search(D, NeighbourSearch::Tree, why);
    REQUIRE(D.tree);
    const KdTree& T = *D.tree;
    const Index n = D.n();
    CHECK(T.leaves >= n / T.leaf_size);
    std::vector<int> seen(std::size_t(n), 0);
    for (Index o : D.original) ++seen[std::size_t(o)];
    for (int s : seen) CHECK(s == 1);
    std::uniform_real_distribution<double> U(-12.0, 12.0), W(0.0, 6.0);
    const double c = 2.5;
    for (int t = 0; t < 50; ++t) {
        // A box of a block of modes crossing many leaves (up to 6 units wide in every dim).
        double lo[4], hi[4];
        for (int d = 0; d < 4; ++d) {
            lo[d] = U(rng);
            hi[d] = lo[d] + W(rng);
        }
        std::vector<Index> ranges;
        const Index rows = T.box_ranges(lo, hi, ranges);
        std::vector<char> in(std::size_t(n), 0);
        Index sum = 0;
        for (std::size_t r = 0; r < ranges.size(); r += 2) {
            CHECK(ranges[r] < ranges[r + 1]);
            if (r > 0) CHECK(ranges[r - 1] < ranges[r]);  // ascending, disjoint, merged
            for (Index i = ranges[r]; i < ranges[r + 1]; ++i) in[std::size_t(i)] = 1;
            sum += ranges[r + 1] - ranges[r];
        }
        CHECK(sum == rows);
        for (Index i = 0; i < n; ++i) {
            bool reach = true;  // within c of the box in every dim: the block may give it a weight
            for (int d = 0; d < 4; ++d) reach = reach && D.points(i, d) >= lo[d] - c && D.points(i, d) <= hi[d] + c;
            if (reach) CHECK(in[std::size_t(i)]);
        }
    }
    // A box around everything: one range [0, n).
    double lo[4], hi[4];
    for (int d = 0; d < 4; ++d) {
        lo[d] = -1e9;
        hi[d] = 1e9;
    }
    std::vector<Index> ranges;
    CHECK(T.box_ranges(lo, hi, ranges) == n);
    CHECK(ranges == std::vector<Index>{0, n});
}

TEST_CASE("kdtree: openmp over the tree's ranges vs the serial oracle (blocks of modes crossing leaves)")
{
    auto rng = make_rng("kdtree-openmp");
    MSTEST_SEED_INFO();
    for (int k : {8, 64}) {
        for (double spread : {0.0, 30.0}) {
            const PreparedData D = blob_data(rng, k, {300, 211, 150}, spread > 0 ? 1.0 : std::sqrt(double(k)) / 2,
                                             spread, spread > 0 ? 20.0 : 8.0);
            // Modes in the callers' (shuffled) order: openmp blocks of them span many leaves until
            // set_modes sorts them by leaf.
            const MatrixD y = modes_near(rng, D, 257);
            const StepDiff s = step_vs_brute(D, y, 3.0, "openmp", "serial");
            INFO("k = " << k << ", spread " << spread << ": " << s.search);
            // float32 kernel vs float64 oracle: rounding, plus pairs that float32 puts on the other
            // side of the cutoff (weight e^{-c²/2}).
            CHECK(s.max_diff <= 2e-3 * std::sqrt(double(k)));
            CHECK(s.pairs < 0.8 * s.brute_pairs);
        }
    }
}

TEST_CASE("kdtree: cluster() with the tree or Auto gives the brute-force modes")
{
    auto rng = make_rng("kdtree-cluster");
    MSTEST_SEED_INFO();
    const int k = 32;
    const Blobs b = make_blobs(rng, k, {200, 160, 120}, {1.0, 1.0, 1.0}, 30.0);  // blobs 10.6 h apart
    Options o;
    o.backend = "serial";
    o.bandwidth = Bandwidth::isotropic(std::sqrt(double(k)) / 2);
    o.cutoff = 3.0;
    o.seeding = Seeding::AllPoints;
    o.search = NeighbourSearch::BruteForce;
    const Result want = cluster(b.data, o);
    for (NeighbourSearch s : {NeighbourSearch::Tree, NeighbourSearch::Auto}) {
        o.search = s;
        const Result got = cluster(b.data, o);
        INFO(got.search);
        if (s == NeighbourSearch::Tree) CHECK(got.search.find("kd-tree") == 0);
        CHECK(got.search.find("brute force") == std::string::npos);  // Auto: grid or tree
        CHECK(got.labels == want.labels);
        CHECK((got.modes - want.modes).cwiseAbs().maxCoeff() <= 1e-4f);
        CHECK(got.timing.pair_interactions < 0.6 * want.timing.pair_interactions);
    }
    // Infinite cutoff: no tree, whatever was asked.
    o.search = NeighbourSearch::Tree;
    o.cutoff = std::numeric_limits<double>::infinity();
    CHECK(cluster(b.data, o).search.find("exact") == 0);
}

TEST_CASE("kdtree: Auto takes the tree where no grid dim spans 3 cells but the blobs are apart (corners in k = 24)")
{
    // Blob centres at random corners (±3.8)^k, σ 0.2 clipped at 3σ: every dim spans 8.8 < 3 cutoff
    // radii (no grid), but two blobs differ by 7.6 > 2·(3 + 0.6) in some dim, so leaves of one
    // blob cannot reach another.
    auto rng = make_rng("kdtree-auto");
    MSTEST_SEED_INFO();
    const int k = 24, blobs = 5, per = 160;
    std::bernoulli_distribution coin(0.5);
    std::normal_distribution<double> N(0.0, 0.2);
    MatrixD centres(blobs, k);
    for (int j = 0; j < blobs; ++j)
        for (int d = 0; d < k; ++d) centres(j, d) = coin(rng) ? 3.8 : -3.8;
    // Blob 0 differs from every other blob in dim j at least; the others differ in ~k/2 dims.
    for (int j = 1; j < blobs; ++j) centres(j, j) = 3.8, centres(0, j) = -3.8;
    MatrixF x(blobs * per, k);
    for (int j = 0; j < blobs; ++j)
        for (int i = 0; i < per; ++i)
            for (int d = 0; d < k; ++d)
                x(j * per + i, d) = static_cast<float>(centres(j, d) + std::clamp(N(rng), -0.6, 0.6));
    Options o;
    o.backend = "serial";
    o.cutoff = 3.0;
    o.seeding = Seeding::AllPoints;
    o.search = NeighbourSearch::Auto;
    const Result got = cluster(x, o);
    INFO(got.search);
    CHECK(got.search.find("kd-tree") == 0);
    CHECK(got.search.find("a grid would not prune") != std::string::npos);
    CHECK(got.cluster_sizes.size() == std::size_t(blobs));
    o.search = NeighbourSearch::BruteForce;
    const Result want = cluster(x, o);
    CHECK(got.labels == want.labels);
    CHECK(got.timing.pair_interactions < 0.5 * want.timing.pair_interactions);
}

TEST_CASE("kdtree: Auto on many points consults a sample tree first: skipped where nothing prunes, built where it does")
{
    // 70,000 points (> 2 x the 16,384-point sample): a single 48-D Gaussian blob, where no kd-tree
    // prunes at cutoff 3 (brute force, said so, no full tree), and 8-D blobs far apart, where the
    // sample tree prunes and the full tree is built as before.
    auto rng = make_rng("kdtree-sample");
    MSTEST_SEED_INFO();
    {
        PreparedData D = blob_data(rng, 48, {70000}, 1.0);
        D.cutoff2 = 9.0;
        std::string why;
        detail::build_search(D, NeighbourSearch::Auto, why);
        CHECK_FALSE(D.tree);
        CHECK_FALSE(D.grid);
        CHECK(why.find("sample points would visit") != std::string::npos);
    }
    {
        PreparedData D = blob_data(rng, 8, {20000, 20000, 15000, 15000}, 1.0, 0, 40);
        D.cutoff2 = 9.0;
        std::string why;
        detail::build_search(D, NeighbourSearch::Auto, why);
        INFO(why);
        CHECK((D.tree || D.grid));
        CHECK(why.find("sample points") == std::string::npos);
    }
}
