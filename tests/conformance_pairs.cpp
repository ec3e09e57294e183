// Conformance of the pair counts (StepReport::pairs -> Timing::pair_interactions): every backend
// that truncates reports the candidate pairs it visited. By brute force that is exactly
// active modes × n per step; with the cell grid it is fewer (only the blocks' boxes) but at least
// the pairs within the cutoff, which the float64 oracle counts here independently.
#include "conformance.hpp"

#include <cmath>

using namespace meanshift;
using namespace mstest;

namespace {

Options one_step(NeighbourSearch s)
{
    Options o = conf::options(Bandwidth::isotropic(1.0));
    o.cutoff = 3.0;
    o.search = s;
    o.seeding = Seeding::AllPoints;
    o.fixed_iterations = 1;
    return o;
}

}  // namespace

TEST_CASE("conformance pairs: brute force counts n per mode, the grid fewer but every pair within the cutoff")
{
    if (!make_backend(conf::backend())->supports_cutoff()) return;
    auto rng = make_rng("conf-pairs");
    MSTEST_SEED_INFO();
    const Blobs b = make_blobs(rng, 2, {150, 120, 90}, {0.5, 0.5, 0.5}, 12.0);
    const Index n = b.data.rows();

    const Result brute = cluster(b.data, one_step(NeighbourSearch::BruteForce));
    INFO("brute force search: " << brute.search);
    CHECK(brute.timing.pair_interactions == doctest::Approx(double(n) * double(n)));

    const Result grid = cluster(b.data, one_step(NeighbourSearch::Grid));
    INFO("grid search: " << grid.search);
    REQUIRE(grid.search.find("grid") != std::string::npos);
    // Pairs within the cutoff, counted directly: a lower bound for any correct candidate set.
    double within = 0;
    for (Index q = 0; q < n; ++q)
        for (Index i = 0; i < n; ++i) within += (b.data.row(q) - b.data.row(i)).squaredNorm() <= 9.0f;
    CHECK(grid.timing.pair_interactions >= within);
    CHECK(grid.timing.pair_interactions < 0.9 * double(n) * double(n));
}
