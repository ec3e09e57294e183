// The pixel-lattice neighbour search (NeighbourSearch::Lattice, Options::lattice) and
// GroupingMethod::None: the lattice gives the brute-force truncated answer (serial, float64) and
// that of an independent float64 truncated mean shift, on a ragged image whose windows cross the
// borders; openmp through the lattice agrees with it; bad lattices are InvalidArgument; None
// returns the modes and no labels; segment_image runs the lattice and no grouping, and with the CLI's
// defaults (cutoff 4, 5 iterations, tolerance 0.3) its labels match the exact kernel's (ARI >= 0.99).
#include "test_support.hpp"

#include <meanshift/meanshift.hpp>
#include <meanshift/registry.hpp>
#include <meanshift/segmentation.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

using namespace meanshift;

namespace {

constexpr int kH = 7, kW = 13;  // ragged: neither a multiple of the 8 x 4 tiles of a block
constexpr double kHs = 1.5, kHr = 4.0;

// Deterministic uniform noise in [-a, a].
struct Noise {
    std::uint64_t s = 0x2545f4914f6cdd1dull;
    float operator()(float a)
    {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return a * (static_cast<float>((s >> 40) & 0xffffff) / float(0xffffff) * 2.0f - 1.0f);
    }
};

/// H·W × (2 + 3): x, y, then three channels: two colours split by a diagonal edge, plus noise.
MatrixF image_points(int H, int W)
{
    Noise noise;
    MatrixF p(Index(H) * W, 5);
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            const Index i = Index(y) * W + x;
            const bool left = 2 * x + y < W;
            p.row(i) << float(x), float(y), (left ? 30.0f : 60.0f) + noise(3.0f), (left ? -10.0f : 15.0f) + noise(3.0f),
                float(x) * 0.5f + noise(2.0f);
        }
    return p;
}

Options lattice_options(const std::string& backend, double cutoff, NeighbourSearch search)
{
    Options o;
    o.backend = backend;
    o.bandwidth = Bandwidth::diagonal({kHs, kHs, kHr, kHr, kHr});
    o.cutoff = cutoff;
    o.search = search;
    o.seeding = Seeding::AllPoints;
    o.lattice = PixelLattice{kH, kW, 0, 1};
    o.fixed_iterations = 6;
    return o;
}

/// Independent float64 truncated mean shift in data units: pairs with D² > c² get weight 0.
MatrixD oracle(const MatrixF& x, const std::vector<double>& h, double c, int iterations)
{
    const Index n = x.rows(), k = x.cols();
    MatrixD y = x.cast<double>();
    for (Index q = 0; q < n; ++q)
        for (int it = 0; it < iterations; ++it) {
            std::vector<double> num(std::size_t(k), 0.0);
            double den = 0;
            for (Index i = 0; i < n; ++i) {
                double D2 = 0;
                for (Index d = 0; d < k; ++d) {
                    const double t = (y(q, d) - x(i, d)) / h[std::size_t(d)];
                    D2 += t * t;
                }
                if (D2 > c * c) continue;
                const double e = std::exp(-0.5 * D2);
                den += e;
                for (Index d = 0; d < k; ++d) num[std::size_t(d)] += e * x(i, d);
            }
            for (Index d = 0; d < k; ++d) y(q, d) = num[std::size_t(d)] / den;
        }
    return y;
}

double max_abs_diff(const MatrixF& a, const MatrixF& b)
{
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    return (a.cast<double>() - b.cast<double>()).cwiseAbs().maxCoeff();
}

}  // namespace

TEST_CASE("lattice: same modes as brute force and the float64 oracle (ragged 13 x 7 image, windows over the border)")
{
    const MatrixF p = image_points(kH, kW);
    const Eigen::Ref<const MatrixF> seeds(p);
    for (double c : {2.0, 3.0, 4.0}) {  // window radius 3, 4.5, 6 px: up to the whole 7-row image
        INFO("cutoff " << c);
        const Result lat = cluster(p, lattice_options("serial", c, NeighbourSearch::Lattice), &seeds);
        const Result aut = cluster(p, lattice_options("serial", c, NeighbourSearch::Auto), &seeds);
        const Result bf = cluster(p, lattice_options("serial", c, NeighbourSearch::BruteForce), &seeds);
        INFO(lat.search);
        CHECK(lat.search.find("pixel lattice 13 x 7") == 0);
        CHECK(aut.search == lat.search);
        CHECK(bf.search.find("brute force") == 0);
        CHECK(max_abs_diff(lat.modes, bf.modes) <= 1e-5);
        CHECK(max_abs_diff(aut.modes, bf.modes) == 0.0);
        const MatrixD want = oracle(p, {kHs, kHs, kHr, kHr, kHr}, c, 6);
        CHECK((lat.modes.cast<double>() - want).cwiseAbs().maxCoeff() <= 1e-4);
    }
}

TEST_CASE("lattice: openmp through the lattice agrees with the serial brute force")
{
    bool openmp = false;
    for (const BackendStatus& b : list_backends()) openmp = openmp || (b.name == "openmp" && b.usable);
    if (!openmp) return;
    const MatrixF p = image_points(kH, kW);
    const Eigen::Ref<const MatrixF> seeds(p);
    for (double c : {3.0, 4.0}) {
        INFO("cutoff " << c);
        const Result got = cluster(p, lattice_options("openmp", c, NeighbourSearch::Auto), &seeds);
        const Result want = cluster(p, lattice_options("serial", c, NeighbourSearch::BruteForce), &seeds);
        CHECK(got.search.find("pixel lattice") == 0);
        // float32 pair arithmetic; a pair that float32 puts across the cutoff moves a mode by at most
        // c·e^{-c²/2} of its bandwidth per unit of its total weight (>= 5 here).
        const double allowed = 1e-3 * kHr + 0.2 * c * std::exp(-0.5 * c * c) * kHr;
        CHECK(max_abs_diff(got.modes, want.modes) <= allowed);
    }
}

TEST_CASE("lattice: bad lattices and a lattice that is not the data are InvalidArgument")
{
    const MatrixF p = image_points(kH, kW);
    const Eigen::Ref<const MatrixF> seeds(p);
    Options o = lattice_options("serial", 3.0, NeighbourSearch::Lattice);
    o.lattice.reset();
    CHECK_THROWS_AS(cluster(p, o, &seeds), InvalidArgument);  // Lattice without a lattice
    for (PixelLattice bad : {PixelLattice{kW, kH, 0, 1}, PixelLattice{kH, kW + 1, 0, 1}, PixelLattice{0, kW, 0, 1},
                             PixelLattice{kH, kW, 0, 0}, PixelLattice{kH, kW, 0, 5}, PixelLattice{kH, kW, 1, 0}}) {
        INFO(bad.height << " x " << bad.width << ", dims " << bad.x_dim << ", " << bad.y_dim);
        o.lattice = bad;
        CHECK_THROWS_AS(cluster(p, o, &seeds), InvalidArgument);
    }
    // Rows not in row-major pixel order.
    MatrixF q = p;
    q.row(3).swap(q.row(20));
    o.lattice = PixelLattice{kH, kW, 0, 1};
    const Eigen::Ref<const MatrixF> qs(q);
    CHECK_THROWS_AS(cluster(q, o, &qs), InvalidArgument);
    // bin_data replaces the pixels by bin means: no lattice any more.
    Options b = lattice_options("serial", 3.0, NeighbourSearch::Auto);
    b.fixed_iterations.reset();
    b.bin_data = true;
    b.seeding = Seeding::Bins;
    CHECK_THROWS_AS(cluster(p, b), InvalidArgument);
    // The exact kernel needs no search: the lattice is ignored.
    Options e = lattice_options("serial", 3.0, NeighbourSearch::Auto);
    e.exact = true;
    CHECK_NOTHROW(cluster(p, e, &seeds));
}

TEST_CASE("grouping None: the modes of a grouped run, no labels, centres or sizes")
{
    const MatrixF p = image_points(kH, kW);
    for (Seeding s : {Seeding::AllPoints, Seeding::Bins}) {
        INFO("seeding " << int(s));
        Options o;
        o.backend = "serial";
        o.bandwidth = Bandwidth::diagonal({kHs, kHs, kHr, kHr, kHr});
        o.seeding = s;
        const Result grouped = cluster(p, o);
        o.grouping = GroupingMethod::None;
        const Result none = cluster(p, o);
        CHECK(!grouped.labels.empty());
        CHECK(none.labels.empty());
        CHECK(none.cluster_sizes.empty());
        CHECK(none.centres.rows() == 0);
        CHECK(none.centres.cols() == 5);
        CHECK(max_abs_diff(none.modes, grouped.modes) == 0.0);
        CHECK(none.iterations == grouped.iterations);
        CHECK(none.converged == grouped.converged);
    }
    MatrixD m(3, 2);
    m << 0, 0, 0.1, 0, 5, 5;
    const Grouping g = group_modes(m, 0.5, GroupingMethod::None);
    CHECK(g.labels.empty());
    CHECK(g.sizes.empty());
    CHECK(g.centres.rows() == 0);
}

TEST_CASE("segment_image: runs on the pixel lattice without grouping; lattice and brute force segment alike")
{
    std::vector<float> img;
    const MatrixF p = image_points(kH, kW);
    for (Index i = 0; i < p.rows(); ++i)
        for (int c = 2; c < 5; ++c) img.push_back(p(i, c));
    SegmentOptions so;
    so.spatial_bandwidth = kHs;
    so.range_bandwidth = kHr;
    so.min_region = 3;
    so.meanshift.backend = "serial";
    const Segmentation a = segment_image(img.data(), kH, kW, 3, so);
    CHECK(a.ascent.search.find("pixel lattice") == 0);
    CHECK(a.ascent.labels.empty());
    CHECK(a.ascent.modes.rows() == Index(kH) * kW);
    so.meanshift.search = NeighbourSearch::BruteForce;
    const Segmentation b = segment_image(img.data(), kH, kW, 3, so);
    CHECK(b.ascent.search.find("brute force") == 0);
    CHECK(a.labels == b.labels);
    CHECK(max_abs_diff(a.filtered, b.filtered) <= 1e-4);
}

namespace {

/// Adjusted Rand index of two labelings.
double adjusted_rand(const std::vector<int>& a, const std::vector<int>& b)
{
    std::map<std::pair<int, int>, double> nij;
    std::map<int, double> ai, bj;
    for (std::size_t i = 0; i < a.size(); ++i) {
        nij[{a[i], b[i]}] += 1;
        ai[a[i]] += 1;
        bj[b[i]] += 1;
    }
    auto c2 = [](double x) { return x * (x - 1) / 2; };
    double sij = 0, sa = 0, sb = 0;
    for (auto& p : nij) sij += c2(p.second);
    for (auto& p : ai) sa += c2(p.second);
    for (auto& p : bj) sb += c2(p.second);
    const double expected = sa * sb / c2(double(a.size()));
    const double maxv = 0.5 * (sa + sb);
    return maxv == expected ? 1.0 : (sij - expected) / (maxv - expected);
}

}  // namespace

TEST_CASE("segment_image: truncated (cutoff 4, the CLI's stopping rule) vs exact kernel, 48 x 36 image: ARI >= 0.99")
{
    // Smooth shading, a disc, a bar and noise: regions meet along curved and straight edges.
    constexpr int H = 36, W = 48;
    Noise noise;
    std::vector<float> img;
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            const bool disc = (x - 30) * (x - 30) + (y - 14) * (y - 14) < 100;
            const bool bar = y > 24 && x > 6 && x < 40;
            const float L = disc ? 70.0f : bar ? 35.0f : 50.0f + 0.4f * float(x) - 0.3f * float(y);
            const float a = disc ? 20.0f : bar ? -15.0f : 5.0f;
            const float b = disc ? 10.0f : bar ? 25.0f : -5.0f + 0.2f * float(y);
            img.push_back(L + noise(4.0f));
            img.push_back(a + noise(4.0f));
            img.push_back(b + noise(4.0f));
        }
    SegmentOptions so;  // the CLI's defaults: hs 3, hr 6, cutoff 4, tol 0.3, 5 iterations
    so.meanshift.backend = "serial";
    so.meanshift.cutoff = 4.0;
    so.meanshift.tolerance = 0.3;
    so.meanshift.max_iterations = 5;
    const Segmentation t = segment_image(img.data(), H, W, 3, so);
    so.meanshift.exact = true;
    const Segmentation e = segment_image(img.data(), H, W, 3, so);
    CHECK(t.ascent.search.find("pixel lattice") == 0);
    CHECK(std::isinf(e.ascent.cutoff));
    INFO("segments truncated " << t.segments() << ", exact " << e.segments());
    CHECK(t.segments() >= 3);
    CHECK(adjusted_rand(t.labels, e.labels) >= 0.99);
    // The filtered colours: the truncation moves a mode by a small fraction of hr.
    CHECK((t.filtered - e.filtered).cwiseAbs().maxCoeff() <= 0.1 * 6.0);
}
