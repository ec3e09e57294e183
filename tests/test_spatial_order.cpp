// The spatial orderings of skeleton/src/approx/spatial_order.hpp: permutations, and compact runs.
#include "test_support.hpp"

#include "skeleton/src/approx/spatial_order.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

using namespace meanshift;

namespace {

bool is_permutation_of_rows(std::vector<Index> p, Index m)
{
    std::sort(p.begin(), p.end());
    for (Index i = 0; i < m; ++i)
        if (p[static_cast<std::size_t>(i)] != i) return false;
    return static_cast<Index>(p.size()) == m;
}

}  // namespace

TEST_CASE("spatial order: kd_order and morton_order are permutations; runs of the order are compact")
{
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-50.0, 50.0);
    for (int k : {1, 2, 3, 7, 70}) {
        INFO("k = " << k);
        const Index m = 4096;
        MatrixD x(m, k);
        for (Index i = 0; i < x.size(); ++i) x.data()[i] = u(rng);
        const auto kd = detail::kd_order(x, 32);
        const auto mo = detail::morton_order(x);
        CHECK(is_permutation_of_rows(kd, m));
        CHECK(is_permutation_of_rows(mo, m));
        if (k > 3) continue;
        // A run of 64 consecutive indices spans far less than the whole box (random order: ~the box).
        auto mean_span = [&](const std::vector<Index>& o) {
            double total = 0;
            for (Index r = 0; r + 64 <= m; r += 64) {
                double span = 0;
                for (int d = 0; d < k; ++d) {
                    double lo = 1e300, hi = -1e300;
                    for (Index j = r; j < r + 64; ++j) {
                        lo = std::min(lo, x(o[static_cast<std::size_t>(j)], d));
                        hi = std::max(hi, x(o[static_cast<std::size_t>(j)], d));
                    }
                    span = std::max(span, hi - lo);
                }
                total += span;
            }
            return total / double(m / 64);
        };
        CHECK(mean_span(kd) < 0.6 * 100.0);
        CHECK(mean_span(mo) < 0.6 * 100.0);
    }
    // Degenerate input: identical points, one point, no points.
    CHECK(is_permutation_of_rows(detail::morton_order(MatrixD::Constant(10, 3, 2.5)), 10));
    CHECK(detail::morton_order(MatrixD::Zero(1, 2)) == std::vector<Index>{0});
    CHECK(detail::morton_order(MatrixD(0, 2)).empty());
}
