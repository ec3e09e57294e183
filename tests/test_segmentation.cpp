// segment_image (Comaniciu & Meer 2002 / EDISON pipeline): synthetic images with known regions,
// pruning of a speck into its most similar neighbour, region fusion of near-equal colours only,
// the filtered image of a flat image, label invariants, bad input.
#include "test_support.hpp"
#include "skeleton/src/clients/segmentation_filter.hpp"

#include <meanshift/segmentation.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <limits>
#include <set>
#include <vector>

using namespace meanshift;

namespace {

// Deterministic uniform noise in [-a, a].
struct Noise {
    std::uint64_t s = 0x9e3779b97f4a7c15ull;
    float operator()(float a)
    {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return a * (static_cast<float>((s >> 40) & 0xffffff) / float(0xffffff) * 2.0f - 1.0f);
    }
};

SegmentOptions serial_options(double hs, double hr, Index min_region)
{
    SegmentOptions o;
    o.spatial_bandwidth = hs;
    o.range_bandwidth = hr;
    o.min_region = min_region;
    o.meanshift = Options{};  // converged ascents (the clustering defaults), not the filtering defaults
    o.meanshift.backend = "serial";
    o.meanshift.tolerance = 1e-3;
    return o;
}

// Labels in [0, S), every pixel labelled, sizes match and do not increase, colours are means.
void check_invariants(const Segmentation& s, const std::vector<float>& img)
{
    const std::size_t n = std::size_t(s.height) * std::size_t(s.width);
    REQUIRE(s.labels.size() == n);
    REQUIRE(s.filtered.rows() == Index(n));
    REQUIRE(s.filtered.cols() == s.channels);
    const int S = s.segments();
    REQUIRE(S >= 1);
    REQUIRE(s.colours.rows() == S);
    REQUIRE(s.mode_colours.rows() == S);
    std::vector<Index> count(std::size_t(S), 0);
    std::vector<double> sum(std::size_t(S) * s.channels, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(s.labels[i] >= 0);
        REQUIRE(s.labels[i] < S);
        ++count[std::size_t(s.labels[i])];
        for (int c = 0; c < s.channels; ++c) sum[std::size_t(s.labels[i]) * s.channels + c] += img[i * s.channels + c];
    }
    for (int l = 0; l < S; ++l) {
        CHECK(count[std::size_t(l)] == s.sizes[std::size_t(l)]);
        if (l > 0) CHECK(s.sizes[std::size_t(l)] <= s.sizes[std::size_t(l) - 1]);
        for (int c = 0; c < s.channels; ++c)
            CHECK(s.colours(l, c) ==
                  doctest::Approx(sum[std::size_t(l) * s.channels + c] / double(count[std::size_t(l)])).epsilon(1e-4));
    }
}

}  // namespace

TEST_CASE("segment_image: three flat colour rectangles with noise give exactly three segments")
{
    const int w = 24, h = 16, C = 3;
    const float colour[3][3] = {{20, 0, 0}, {50, 30, -10}, {80, -25, 35}};
    Noise noise;
    std::vector<float> img(std::size_t(w) * h * C);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < C; ++c) img[(std::size_t(y) * w + x) * C + c] = colour[x / 8][c] + noise(1.0f);
    const Segmentation s = segment_image(img.data(), h, w, C, serial_options(2.0, 4.0, 10));
    check_invariants(s, img);
    REQUIRE(s.segments() == 3);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) CHECK(s.labels[std::size_t(y) * w + x] == s.labels[std::size_t(x / 8) * 8]);
    std::set<int> distinct{s.labels[0], s.labels[8], s.labels[16]};
    CHECK(distinct.size() == 3);
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < C; ++c) CHECK(std::abs(s.colours(s.labels[std::size_t(r) * 8], c) - colour[r][c]) < 0.3);
    CHECK(s.ascent.modes.rows() == w * h);
    CHECK(s.ascent.modes.cols() == 2 + C);
    // The Eigen overload gives the same answer.
    Eigen::Map<const MatrixF> m(img.data(), Index(w) * h, C);
    const Segmentation s2 = segment_image(m, h, w, serial_options(2.0, 4.0, 10));
    CHECK(s2.labels == s.labels);
}

TEST_CASE("segment_image: a speck smaller than min_region joins its most similar neighbour")
{
    // Left half 0, right half 60; a 2 x 2 speck of 40 on the boundary, closer in colour to the right.
    const int w = 20, h = 20;
    std::vector<float> img(std::size_t(w) * h);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) img[std::size_t(y) * w + x] = x < 10 ? 0.0f : 60.0f;
    for (int y = 9; y <= 10; ++y)
        for (int x = 9; x <= 10; ++x) img[std::size_t(y) * w + x] = 40.0f;
    const std::size_t speck = std::size_t(9) * w + 9, left = 0, right = w - 1;

    const Segmentation kept = segment_image(img.data(), h, w, 1, serial_options(2.0, 3.0, 0));
    check_invariants(kept, img);
    CHECK(kept.segments() == 3);
    CHECK(kept.sizes.back() == 4);

    const Segmentation pruned = segment_image(img.data(), h, w, 1, serial_options(2.0, 3.0, 5));
    check_invariants(pruned, img);
    REQUIRE(pruned.segments() == 2);
    CHECK(pruned.labels[speck] == pruned.labels[right]);
    CHECK(pruned.labels[speck] != pruned.labels[left]);
    CHECK(pruned.sizes[0] == 202);  // the right half (200 - 2 + the speck's 4 pixels)
    CHECK(pruned.sizes[1] == 198);

    // min_region larger than every region but the image: still one region per neighbour chain,
    // never an empty result.
    const Segmentation all = segment_image(img.data(), h, w, 1, serial_options(2.0, 3.0, 100000));
    check_invariants(all, img);
    CHECK(all.segments() == 1);
}

TEST_CASE("segment_image: region fusion merges near-equal colours, not different ones")
{
    // Strips of 0 | 1.2 | 30 (hr = 4: 0.3 hr apart, then 7 hr). Pixel-level joining is made
    // strict, so the first two strips come apart there and only region fusion can join them.
    const int w = 30, h = 10;
    std::vector<float> img(std::size_t(w) * h);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) img[std::size_t(y) * w + x] = x < 10 ? 0.0f : (x < 20 ? 1.2f : 30.0f);
    SegmentOptions o = serial_options(2.0, 4.0, 0);
    o.mode_distance = 0.01;

    o.fusion_distance = 0;
    const Segmentation apart = segment_image(img.data(), h, w, 1, o);
    check_invariants(apart, img);
    CHECK(apart.segments() >= 3);
    CHECK(apart.fusion_passes == 0);

    o.fusion_distance = 0.5;
    const Segmentation fused = segment_image(img.data(), h, w, 1, o);
    check_invariants(fused, img);
    REQUIRE(fused.segments() == 2);
    CHECK(fused.fusion_passes >= 1);
    CHECK(fused.regions_connected > fused.regions_fused);
    CHECK(fused.labels[0] == fused.labels[15]);
    CHECK(fused.labels[0] != fused.labels[25]);
    CHECK(fused.sizes[0] == 200);
    CHECK(fused.sizes[1] == 100);
}

TEST_CASE("segment_image: the filtered image of a flat image is the image")
{
    const int w = 12, h = 9, C = 3;
    std::vector<float> img(std::size_t(w) * h * C);
    for (std::size_t i = 0; i < std::size_t(w) * h; ++i) {
        img[i * C] = 55.5f;
        img[i * C + 1] = -12.25f;
        img[i * C + 2] = 7.0f;
    }
    const Segmentation s = segment_image(img.data(), h, w, C, serial_options(3.0, 6.0, 20));
    check_invariants(s, img);
    CHECK(s.segments() == 1);
    CHECK(s.sizes[0] == w * h);
    for (Index i = 0; i < Index(w) * h; ++i)
        for (int c = 0; c < C; ++c)
            CHECK(s.filtered(i, c) == doctest::Approx(img[std::size_t(i) * C + c]).epsilon(1e-5));
}

TEST_CASE("segment_image: a 1 x 1 image is one segment")
{
    const float px[2] = {1.0f, 2.0f};
    const Segmentation s = segment_image(px, 1, 1, 2, serial_options(1.0, 1.0, 30));
    CHECK(s.segments() == 1);
    CHECK(s.labels == std::vector<int>{0});
    CHECK(s.filtered(0, 1) == doctest::Approx(2.0));
}

TEST_CASE("segment_image: bad input is InvalidArgument")
{
    std::vector<float> img(12, 1.0f);
    const SegmentOptions ok = serial_options(2.0, 4.0, 0);
    CHECK_THROWS_AS(segment_image(img.data(), 0, 4, 3, ok), InvalidArgument);
    CHECK_THROWS_AS(segment_image(img.data(), 4, 0, 3, ok), InvalidArgument);
    CHECK_THROWS_AS(segment_image(img.data(), 2, 2, 0, ok), InvalidArgument);
    CHECK_THROWS_AS(segment_image(nullptr, 2, 2, 3, ok), InvalidArgument);
    Eigen::Map<const MatrixF> m(img.data(), 4, 3);
    CHECK_THROWS_AS(segment_image(m, 2, 3, ok), InvalidArgument);  // 4 rows for 6 pixels
    CHECK_THROWS_AS(segment_image(m, 0, 0, ok), InvalidArgument);
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    for (double bad : {0.0, -1.0, nan, inf}) {
        SegmentOptions o = ok;
        o.spatial_bandwidth = bad;
        CHECK_THROWS_AS(segment_image(img.data(), 2, 2, 3, o), InvalidArgument);
        o = ok;
        o.range_bandwidth = bad;
        CHECK_THROWS_AS(segment_image(img.data(), 2, 2, 3, o), InvalidArgument);
    }
    SegmentOptions o = ok;
    o.min_region = -1;
    CHECK_THROWS_AS(segment_image(img.data(), 2, 2, 3, o), InvalidArgument);
    o = ok;
    o.fusion_distance = nan;
    CHECK_THROWS_AS(segment_image(img.data(), 2, 2, 3, o), InvalidArgument);
    o = ok;
    o.mode_distance = -0.5;
    CHECK_THROWS_AS(segment_image(img.data(), 2, 2, 3, o), InvalidArgument);
    img[5] = static_cast<float>(nan);
    CHECK_THROWS_AS(segment_image(img.data(), 2, 2, 3, ok), InvalidArgument);
}

namespace {

// The definition of SegmentOptions::AdaptiveRange, written out with a full sort.
std::vector<double> reference_adaptive_hr(const std::vector<float>& img, int h, int w, int C, int win, int k, double hr,
                                          double floor_fraction, double lo, double hi)
{
    const std::size_t n = std::size_t(h) * w;
    std::vector<double> d(n);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            std::vector<double> all;
            for (int v = 0; v < h; ++v)
                for (int u = 0; u < w; ++u) {
                    if ((u == x && v == y) || std::abs(u - x) > win || std::abs(v - y) > win) continue;
                    double s = 0;
                    for (int c = 0; c < C; ++c) {
                        const double t =
                            double(img[(std::size_t(y) * w + x) * C + c]) - img[(std::size_t(v) * w + u) * C + c];
                        s += t * t;
                    }
                    all.push_back(std::sqrt(s));
                }
            std::sort(all.begin(), all.end());
            d[std::size_t(y) * w + x] = all[std::min(all.size(), std::size_t(k)) - 1];
        }
    std::vector<double> pos;
    for (double v : d)
        if (v > 0) pos.push_back(v);
    std::sort(pos.begin(), pos.end());
    const double floor = floor_fraction * pos[pos.size() / 2];
    double ml = 0;
    for (double& v : d) {
        v = std::max(v, floor);
        ml += std::log(v);
    }
    const double G = std::exp(ml / double(n));
    for (double& v : d) v = hr * std::clamp(v / G, lo, hi);
    return d;
}

// Left: flat colour with faint noise; right: a strong texture (random colours of amplitude 15).
std::vector<float> flat_and_texture(int w, int h, int C)
{
    Noise noise;
    std::vector<float> img(std::size_t(w) * h * C);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < C; ++c)
                img[(std::size_t(y) * w + x) * C + c] = x < w / 2 ? 30 + noise(0.5f) : 60 + noise(15.0f);
    return img;
}

}  // namespace

TEST_CASE("segment_image --adaptive: per-pixel range bandwidths from the k-th colour distance in the window")
{
    const int w = 20, h = 12, C = 3;
    const std::vector<float> img = flat_and_texture(w, h, C);
    SegmentOptions::AdaptiveRange o;
    o.enabled = true;
    SUBCASE("against the definition (defaults: w = ceil(hs), k = a quarter of the window)")
    {
        const auto got = adaptive_range_bandwidths(img.data(), h, w, C, 2.0, 6.0, o);
        const auto want = reference_adaptive_hr(img, h, w, C, 2, 6, 6.0, 0.1, 0.25, 4.0);
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
        // Texture gets wide kernels, the flat half narrow ones.
        CHECK(got[std::size_t(5) * w + 3] < 6.0);
        CHECK(got[std::size_t(5) * w + 16] > 6.0);
        // Without clamping the geometric mean is hr.
        o.min_ratio = 1e-6;
        o.max_ratio = 1e6;
        const auto free = adaptive_range_bandwidths(img.data(), h, w, C, 2.0, 6.0, o);
        double ml = 0;
        for (float v : free) ml += std::log(double(v));
        CHECK(std::exp(ml / double(free.size())) == doctest::Approx(6.0).epsilon(1e-5));
        o.k = 3;
        o.window = 1;
        const auto small = adaptive_range_bandwidths(img.data(), h, w, C, 5.0, 6.0, o);
        const auto want_small = reference_adaptive_hr(img, h, w, C, 1, 3, 6.0, 0.1, 1e-6, 1e6);
        for (std::size_t i = 0; i < small.size(); ++i) CHECK(small[i] == doctest::Approx(want_small[i]).epsilon(1e-5));
    }
    SUBCASE("the lattice search with per-pixel bandwidths gives the brute-force search's modes")
    {
        SegmentOptions so = serial_options(2.0, 6.0, 0);
        so.adaptive = o;
        so.meanshift.cutoff = 3.0;
        const Segmentation a = segment_image(img.data(), h, w, C, so);
        check_invariants(a, img);
        CHECK(a.ascent.search.find("lattice") != std::string::npos);
        REQUIRE(a.range_bandwidths.size() == std::size_t(w) * h);
        so.meanshift.search = NeighbourSearch::BruteForce;
        const Segmentation b = segment_image(img.data(), h, w, C, so);
        CHECK(b.ascent.search.find("lattice") == std::string::npos);
        CHECK((a.ascent.modes - b.ascent.modes).cwiseAbs().maxCoeff() < 1e-3f);
        CHECK(a.labels == b.labels);
    }
    SUBCASE("three noisy rectangles stay three segments")
    {
        const float colour[3][3] = {{20, 0, 0}, {50, 30, -10}, {80, -25, 35}};
        Noise noise;
        std::vector<float> r(std::size_t(24) * 16 * C);
        for (int y = 0; y < 16; ++y)
            for (int x = 0; x < 24; ++x)
                for (int c = 0; c < C; ++c) r[(std::size_t(y) * 24 + x) * C + c] = colour[x / 8][c] + noise(1.0f);
        SegmentOptions so = serial_options(2.0, 4.0, 10);
        so.adaptive = o;
        const Segmentation s = segment_image(r.data(), 16, 24, C, so);
        check_invariants(s, r);
        CHECK(s.segments() == 3);
    }
    SUBCASE("bad options and a flat image")
    {
        SegmentOptions::AdaptiveRange b = o;
        b.k = -1;
        CHECK_THROWS_AS(adaptive_range_bandwidths(img.data(), h, w, C, 2, 6, b), InvalidArgument);
        b = o;
        b.window = -2;
        CHECK_THROWS_AS(adaptive_range_bandwidths(img.data(), h, w, C, 2, 6, b), InvalidArgument);
        b = o;
        b.min_ratio = 0;
        CHECK_THROWS_AS(adaptive_range_bandwidths(img.data(), h, w, C, 2, 6, b), InvalidArgument);
        b = o;
        b.max_ratio = 0.5;
        CHECK_THROWS_AS(adaptive_range_bandwidths(img.data(), h, w, C, 2, 6, b), InvalidArgument);
        b = o;
        b.floor_fraction = -0.1;
        CHECK_THROWS_AS(adaptive_range_bandwidths(img.data(), h, w, C, 2, 6, b), InvalidArgument);
        const std::vector<float> flat(std::size_t(w) * h * C, 42.0f);
        SegmentOptions so = serial_options(2.0, 6.0, 0);
        so.adaptive = o;
        CHECK_THROWS_WITH_AS(segment_image(flat.data(), h, w, C, so), doctest::Contains("flat image"), InvalidArgument);
    }
}

namespace {

// A W x H three-channel image with smooth gradients, flat blocks, thin stripes and noise: many
// regions, boundaries across every band of rows.
std::vector<float> busy_image(int w, int h)
{
    Noise noise;
    std::vector<float> img(std::size_t(w) * h * 3);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            float* p = &img[(std::size_t(y) * w + x) * 3];
            const int block = (x / 23 + 2 * (y / 17)) % 5;
            p[0] = 20.0f + 12.0f * float(block) + 0.05f * float(x) + noise(2.0f);
            p[1] = (y % 9 < 2 ? 25.0f : -5.0f) + 0.04f * float(y) + noise(2.0f);
            p[2] = 10.0f * std::sin(0.05f * float(x + y)) + noise(2.0f);
        }
    return img;
}

bool usable(const char* name)
{
    for (const BackendStatus& b : list_backends())
        if (b.name == name && b.usable) return true;
    return false;
}

using mstest::same_partition;

struct BandPixels {  // runs the banded ascent in bands of `pixels` pixels while in scope
    explicit BandPixels(Index pixels) { detail::filter_band_pixels() = pixels; }
    ~BandPixels() { detail::filter_band_pixels() = 0; }
};

}  // namespace

TEST_CASE("segment_image: the ascent run band by band gives the modes of the whole image")
{
    const int w = 96, h = 72;
    const std::vector<float> img = busy_image(w, h);
    // opencl: bound afresh per band (its binding is not gpu::Rebindable); cuda: one binding refilled
    // band after band where the band's points fit its buffers. Both: the device kernels' float32 sums.
    for (const char* backend : {"serial", "openmp", "opencl", "cuda"}) {
        if (!usable(backend)) continue;
        CAPTURE(backend);
        SegmentOptions o;  // the filtering defaults: at most 5 steps, cutoff 4
        o.meanshift.backend = backend;
        const Segmentation whole = segment_image(img.data(), h, w, 3, o);
        Segmentation banded;
        {
            const BandPixels bands(8 * w);  // 9 bands of 8 rows, each read with 62 rows either side
            banded = segment_image(img.data(), h, w, 3, o);
        }
        CHECK(whole.ascent.search.find("pixel lattice 96 x 72") == 0);
        CHECK(whole.ascent.search.find("bands") == std::string::npos);
        CHECK(banded.ascent.search.find("pixel lattice 96 x 72") == 0);
        CHECK(banded.ascent.search.find("in 9 bands of 8 rows") != std::string::npos);
        REQUIRE(banded.ascent.modes.rows() == Index(w) * h);
        CHECK(banded.ascent.iterations == whole.ascent.iterations);
        CHECK(banded.ascent.converged == whole.ascent.converged);
        if (std::string(backend) == "serial") {
            // The serial sums visit each mode's own window in float64: bit for bit.
            CHECK(banded.ascent.modes == whole.ascent.modes);
        } else {
            // The SIMD kernels flush float32 partial sums every 512 rows of a block's box, and a
            // band's blocks differ from the whole image's: the last bits may differ.
            CHECK((banded.ascent.modes - whole.ascent.modes).cwiseAbs().maxCoeff() <= 1e-3f);
        }
        CHECK(same_partition(banded.labels, whole.labels));
        CHECK(banded.segments() == whole.segments());
    }
}

// A run on more threads gives the one-thread run's segments: same modes, passes and numbering.
static void check_same_segments(const Segmentation& many, const Segmentation& one)
{
    REQUIRE(many.ascent.modes == one.ascent.modes);
    CHECK(many.regions_connected == one.regions_connected);
    CHECK(many.regions_fused == one.regions_fused);
    CHECK(many.fusion_passes == one.fusion_passes);
    CHECK(many.labels == one.labels);  // the same numbering too
    CHECK(many.sizes == one.sizes);
}

TEST_CASE("segment_image: regions in parallel segment as the sequential pass does")
{
    // 3 bands of rows at 3+ threads (bands of >= 2^15 pixels): seams between them cross regions.
    const int w = 512, h = 192;
    const std::vector<float> img = busy_image(w, h);
    const char* backend = usable("openmp") ? "openmp" : "serial";
    SegmentOptions o;
    o.meanshift.backend = backend;
    o.min_region = 20;
    o.meanshift.backend_options.threads = 1;
    const Segmentation one = segment_image(img.data(), h, w, 3, o);
    check_invariants(one, img);
    for (int threads : {2, 3, 4}) {
        CAPTURE(threads);
        o.meanshift.backend_options.threads = threads;
        const Segmentation many = segment_image(img.data(), h, w, 3, o);
        check_same_segments(many, one);
    }
    CHECK(one.regions_connected > 100);
    CHECK(one.segments() > 10);
}

TEST_CASE("segment_image: many fused and pruned regions in parallel give the sequential segments")
{
    // Noise of ±8 against hr = 2 leaves most pixels their own region after joining; fusion at
    // 4 hr then joins tens of thousands of adjacent pairs in one pass (the threaded union path),
    // and pruning merges many small regions (its adjacency built with atomic increments).
    const int w = 320, h = 256;
    Noise noise;
    std::vector<float> img(std::size_t(w) * h * 3);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            float* p = &img[(std::size_t(y) * w + x) * 3];
            p[0] = 40.0f + 0.1f * float(x) + noise(8.0f);
            p[1] = 0.1f * float(y) + noise(8.0f);
            p[2] = (x / 40 + y / 32) % 2 ? 15.0f + noise(8.0f) : noise(8.0f);
        }
    SegmentOptions o;
    o.meanshift.backend = usable("openmp") ? "openmp" : "serial";
    o.spatial_bandwidth = 1;
    o.range_bandwidth = 2;
    o.fusion_distance = 4;
    o.min_region = 30;
    o.meanshift.backend_options.threads = 1;
    const Segmentation one = segment_image(img.data(), h, w, 3, o);
    check_invariants(one, img);
    CHECK(one.regions_connected > 20000);
    CHECK(one.regions_connected - one.regions_fused > 16384);
    for (int threads : {2, 4}) {
        CAPTURE(threads);
        o.meanshift.backend_options.threads = threads;
        const Segmentation many = segment_image(img.data(), h, w, 3, o);
        check_same_segments(many, one);
    }
}

TEST_CASE("segment_image: per-stage seconds and the peak memory are reported")
{
    const std::vector<float> img = busy_image(40, 30);
    SegmentOptions o;
    o.meanshift.backend = "serial";
    const Segmentation s = segment_image(img.data(), 30, 40, 3, o);
    CHECK(s.timing.seconds_prepare > 0);
    CHECK(s.timing.seconds_iterate > 0);
    CHECK(s.timing.seconds_connect >= 0);
    CHECK(s.timing.seconds_output >= 0);
    CHECK(s.timing.stages().size() == 8);
    CHECK(s.timing.seconds_prepare + s.timing.seconds_iterate <= s.seconds_filter + 1e-9);
#if defined(__linux__)
    CHECK(s.timing.peak_memory_bytes > 0);
#endif
}

TEST_CASE("segment_image: a memory budget below the estimate is OutOfMemory before any work")
{
    const std::vector<float> img = busy_image(64, 48);
    SegmentOptions o;
    o.meanshift.backend = "serial";
    o.meanshift.max_memory = 100000;  // 100 kB: the 3,072 pixels' modes alone need 61 kB, the band more
    CHECK_THROWS_AS(segment_image(img.data(), 48, 64, 3, o), OutOfMemory);
    o.meanshift.max_memory = 0;  // the machine's available memory
    CHECK(segment_image(img.data(), 48, 64, 3, o).segments() >= 1);
}
