// Conformance on image-like data with a large extent: every pixel of a 640 × 480 image as
// (x, y, r, g, b), spatial bandwidth 4 pixels and colour bandwidth 0.1, so prepared coordinates
// reach R = 80 bandwidths (the case where an expanded |y|² + |x|² - 2 y·x exponent or uncentred
// float32 coordinates lose accuracy). 32 seeds off the pixel grid; the oracle cost is
// 32 × 307200 pairs per iteration.
#include "conformance.hpp"

using namespace meanshift;
using namespace mstest;

TEST_CASE("conformance image: 640x480 grid, spatial bandwidth 4 + colour 0.1, seeds off the grid")
{
    auto rng = make_rng("conf-image");
    MSTEST_SEED_INFO();
    const Image im = make_image(rng);
    const std::vector<double> h{4.0, 4.0, 0.1, 0.1, 0.1};
    MatrixF seeds(32, 5);
    std::uniform_real_distribution<double> ux(24.0, 296.0), uy(24.0, 216.0), uc(-0.05, 0.05);
    for (Index q = 0; q < seeds.rows(); ++q) {
        const double sx = ux(rng) + (q % 2 ? 320.0 : 0.0) + 0.37, sy = uy(rng) + (q % 4 >= 2 ? 240.0 : 0.0) + 0.61;
        const auto c = Image::colour(im.quadrant(sx, sy));
        seeds.row(q) << float(sx), float(sy), float(c[0] + uc(rng)), float(c[1] + uc(rng)), float(c[2] + uc(rng));
    }
    const Eigen::Ref<const MatrixF> sr(seeds);
    const int N = 6;
    Options o = conf::options(Bandwidth::diagonal(h));
    o.fixed_iterations = N;
    Options w = o;
    w.backend = "serial";
    const Result got = cluster(im.data, o, &sr);
    const Result want = cluster(im.data, w, &sr);
    check_result_shape(got, seeds.rows(), 5, N);

    // Against the oracle: N steps, each within step_tolerance(R) bandwidths.
    const double R = 0.5 * 640 / 4.0;
    const double tol_bw = N * conf::step_tolerance(R);
    double worst = 0;
    for (Index q = 0; q < seeds.rows(); ++q)
        for (int d = 0; d < 5; ++d)
            worst = std::max(worst, std::abs(double(got.modes(q, d)) - want.modes(q, d)) / h[std::size_t(d)]);
    INFO("largest difference to the oracle: " << worst << " bandwidths, allowed " << tol_bw);
    CHECK(worst <= tol_bw);
    CHECK(same_partition(got.labels, want.labels));

    // Known modes: the quadrant's colour, and (the grid is uniform) the seed's own position.
    for (Index q = 0; q < seeds.rows(); ++q) {
        INFO("seed " << q << " at (" << seeds(q, 0) << ", " << seeds(q, 1) << ")");
        const auto c = Image::colour(im.quadrant(seeds(q, 0), seeds(q, 1)));
        for (int d = 0; d < 3; ++d) CHECK(std::abs(got.modes(q, 2 + d) - c[std::size_t(d)]) < 0.01);
        CHECK(std::abs(got.modes(q, 0) - seeds(q, 0)) < 0.5);
        CHECK(std::abs(got.modes(q, 1) - seeds(q, 1)) < 0.5);
    }
}
