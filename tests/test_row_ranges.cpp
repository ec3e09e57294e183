// The search contract (NeighbourRanges, PreparedData::search()): for the grid, the kd-tree and
// brute force, a block's ranges are ascending, merged, count the rows they cover, and hold every
// point within the cutoff of any of the block's modes; order() is a permutation that follows the
// structure (grid cells' Morton curve, kd-tree leaves, identity).
#include "test_data.hpp"
#include "test_support.hpp"

#include "skeleton/src/core/prepare.hpp"

#include <meanshift/backend.hpp>
#include <meanshift/errors.hpp>
#include <meanshift/neighbours.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using namespace meanshift;
using namespace mstest;

namespace {

/// Three blobs 8 prepared units apart (shared H, whitened), cutoff c = 2.5, search built as asked.
PreparedData searched_blobs(std::mt19937_64& rng, int k, NeighbourSearch search)
{
    const Blobs b = make_blobs(rng, k, {400, 301, 200}, {1.0, 1.0, 1.0}, 8.0);
    PreparedData D;
    D.points = b.data.cast<double>();
    D.finalize();
    D.cutoff2 = 2.5 * 2.5;
    std::string why;
    detail::build_search(D, search, why);
    return D;
}

/// Checks block_ranges of random blocks of `b` modes near the data: the ranges are ascending,
/// disjoint, non-empty and merged, their rows sum to the count returned, and every row within
/// the cutoff (Euclidean D², shared H) of some mode of the block is covered.
void check_blocks(std::mt19937_64& rng, const PreparedData& D, const NeighbourRanges& R, Index b)
{
    const Index n = D.n();
    const int k = D.k();
    std::uniform_int_distribution<Index> pick(0, n - 1);
    std::normal_distribution<double> N(0.0, 0.5);
    for (int t = 0; t < 40; ++t) {
        MatrixD y(b, k);
        const Index centre = pick(rng);
        for (Index q = 0; q < b; ++q)
            for (int d = 0; d < k; ++d) y(q, d) = D.points(centre, d) + N(rng);
        std::vector<Index> ranges{-7, -7};  // block_ranges appends: what was there stays
        const Index rows = R.block_ranges(y.data(), b, ranges);
        REQUIRE(ranges.size() >= 4);
        CHECK(ranges[0] == -7);
        std::vector<char> in(std::size_t(n), 0);
        Index sum = 0;
        for (std::size_t r = 2; r < ranges.size(); r += 2) {
            CHECK(0 <= ranges[r]);
            CHECK(ranges[r] < ranges[r + 1]);
            CHECK(ranges[r + 1] <= n);
            if (r > 2) CHECK(ranges[r - 1] < ranges[r]);
            for (Index i = ranges[r]; i < ranges[r + 1]; ++i) in[std::size_t(i)] = 1;
            sum += ranges[r + 1] - ranges[r];
        }
        CHECK(sum == rows);
        Index missed = 0;
        for (Index i = 0; i < n; ++i)
            for (Index q = 0; q < b; ++q)
                if ((D.points.row(i) - y.row(q)).squaredNorm() <= D.cutoff2 && !in[std::size_t(i)]) ++missed;
        CHECK(missed == 0);
    }
}

bool is_permutation_of_m(const std::vector<Index>& o, Index m)
{
    std::vector<Index> s = o;
    std::sort(s.begin(), s.end());
    for (Index q = 0; q < m; ++q)
        if (s.size() != std::size_t(m) || s[std::size_t(q)] != q) return false;
    return s.size() == std::size_t(m);
}

}  // namespace

TEST_CASE("neighbour ranges: the grid's contract covers every pair within the cutoff and orders by cell")
{
    auto rng = make_rng("row-ranges-grid");
    MSTEST_SEED_INFO();
    const PreparedData D = searched_blobs(rng, 2, NeighbourSearch::Grid);
    REQUIRE(D.grid);
    const auto R = D.search();
    CHECK(R->prunes());
    CHECK(R->cell_grid() == &*D.grid);
    for (Index b : {1, 8, 32}) check_blocks(rng, D, *R, b);
    // A mode at a point of one blob does not reach the other blobs.
    std::vector<Index> ranges;
    CHECK(R->block_ranges(D.points.row(0).data(), 1, ranges) < D.n());
    const MatrixD y = D.points.topRows(300);
    const std::vector<Index> o = R->order(y.data(), y.rows());
    CHECK(is_permutation_of_m(o, y.rows()));
    CHECK(o == detail::cell_order(*D.grid, y.data(), y.rows(), D.k()));
}

TEST_CASE("neighbour ranges: the kd-tree's contract covers every pair within the cutoff and orders by leaf")
{
    auto rng = make_rng("row-ranges-tree");
    MSTEST_SEED_INFO();
    const PreparedData D = searched_blobs(rng, 5, NeighbourSearch::Tree);
    REQUIRE(D.tree);
    const auto R = D.search();
    CHECK(R->prunes());
    CHECK(R->cell_grid() == nullptr);
    for (Index b : {1, 8, 32}) check_blocks(rng, D, *R, b);
    const MatrixD y = D.points.bottomRows(300);
    const std::vector<Index> o = R->order(y.data(), y.rows());
    REQUIRE(is_permutation_of_m(o, y.rows()));
    for (std::size_t q = 1; q < o.size(); ++q) {
        const Index a = D.tree->leaf_start(y.row(o[q - 1]).data()), c = D.tree->leaf_start(y.row(o[q]).data());
        CHECK(a <= c);
        if (a == c) CHECK(o[q - 1] < o[q]);  // stable within a leaf
    }
}

TEST_CASE("neighbour ranges: brute force is one range [0, n) in the given order")
{
    auto rng = make_rng("row-ranges-brute");
    MSTEST_SEED_INFO();
    const PreparedData D = searched_blobs(rng, 3, NeighbourSearch::BruteForce);
    REQUIRE(!D.grid);
    REQUIRE(!D.tree);
    const auto R = D.search();
    CHECK_FALSE(R->prunes());
    CHECK(R->cell_grid() == nullptr);
    std::vector<Index> ranges;
    CHECK(R->block_ranges(D.points.data(), 4, ranges) == D.n());
    CHECK(ranges == std::vector<Index>{0, D.n()});
    const std::vector<Index> o = R->order(D.points.data(), 5);
    CHECK(o == std::vector<Index>{0, 1, 2, 3, 4});
}

TEST_CASE("neighbour ranges: a grid and a kd-tree at once is refused")
{
    auto rng = make_rng("row-ranges-both");
    PreparedData D = searched_blobs(rng, 2, NeighbourSearch::Grid);
    REQUIRE(D.grid);
    D.tree.emplace();
    CHECK_THROWS_AS(D.search(), InvalidArgument);
}
