// make_bins (skeleton/src/approx/seeding.hpp) and the radix sort behind it: the bins are the distinct
// cells of the rows in lexicographic order, whichever sort path (packed 64-bit keys or the
// comparison sort for cell ranges wider than 64 bits) ran.
#include "test_support.hpp"

#include "skeleton/src/core/parallel.hpp"
#include "skeleton/src/approx/radix_sort.hpp"
#include "skeleton/src/approx/seeding.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

using namespace meanshift;

namespace {

/// The bins by definition: a std::map from the cell (lexicographic order) to its rows.
void check_bins(const MatrixD& P, double side)
{
    const int k = static_cast<int>(P.cols());
    std::map<std::vector<std::int64_t>, std::vector<Index>> cells;
    for (Index i = 0; i < P.rows(); ++i) {
        std::vector<std::int64_t> c(static_cast<std::size_t>(k));
        for (int d = 0; d < k; ++d) c[std::size_t(d)] = static_cast<std::int64_t>(std::floor(P(i, d) / side));
        cells[c].push_back(i);
    }
    const detail::Bins b = detail::make_bins(P, side, nullptr);
    REQUIRE(b.count.size() == cells.size());
    CHECK(detail::count_bins(P, side) == static_cast<Index>(cells.size()));
    Index j = 0;
    for (const auto& [cell, rows] : cells) {
        INFO("bin " << j);
        CHECK(std::equal(cell.begin(), cell.end(), b.key.begin() + j * k));
        CHECK(b.count[std::size_t(j)] == static_cast<Index>(rows.size()));
        Eigen::RowVectorXd mean = Eigen::RowVectorXd::Zero(k);
        for (Index i : rows) {
            CHECK(b.of[std::size_t(i)] == j);
            mean += P.row(i);
        }
        mean /= static_cast<double>(rows.size());
        CHECK((b.mean.row(j) - mean).norm() <= 1e-12 * (1 + mean.norm()));
        CHECK(b.find(cell.data()) == j);
        ++j;
    }
}

}  // namespace

TEST_CASE("radix_sort: sorts by key, stable, any key width; sorted input unchanged")
{
    std::mt19937_64 rng(3);
    // 5000 rows: one thread; 200,000: the parallel passes (per-thread digit counts, slices in order).
    for (std::size_t rows : {std::size_t{5000}, std::size_t{200000}})
        for (int bits : {1, 11, 12, 33, 64}) {
            INFO("bits = " << bits << ", rows = " << rows);
            const std::uint64_t mask = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
            std::vector<std::pair<std::uint64_t, Index>> keyed(rows);
            for (std::size_t i = 0; i < keyed.size(); ++i) keyed[i] = {rng() & mask & (i % 3 ? mask : 7), Index(i)};
            auto want = keyed;
            std::stable_sort(want.begin(), want.end(), [](auto& a, auto& b) { return a.first < b.first; });
            detail::radix_sort(keyed, bits);
            CHECK(keyed == want);
            detail::radix_sort(keyed, bits);
            CHECK(keyed == want);
        }
}

TEST_CASE("make_bins: lexicographic bins, counts, means and find() on both sort paths")
{
    std::mt19937 rng(11);
    std::normal_distribution<double> g(0.0, 3.0);
    for (int k : {1, 2, 3, 9}) {
        MatrixD P(k == 2 ? 70000 : 4000, k);  // 70,000 x 2: every pass of make_bins on the host threads
        for (Index i = 0; i < P.rows(); ++i)
            for (int d = 0; d < k; ++d) P(i, d) = g(rng) + (d == 0 ? -20.0 : 5.0);  // negative cells too
        INFO("k = " << k << ", packed keys");
        check_bins(P, 0.5);
        // Cells spanning 54 bits in dimensions 0 and 1 (within kMaxBinCell = 2^53 of the centre):
        // one wide field at k = 1, more than 64 bits and the comparison sort above.
        MatrixD Q = P;
        for (int d = 0; d < std::min(k, 2); ++d) {
            Q(0, d) = -4e15;
            Q(1, d) = 4e15;
        }
        INFO("k = " << k << (k == 1 ? ", a 54-bit key" : ", comparison sort"));
        check_bins(Q, 0.5);
    }
}

TEST_CASE("make_bins: sums over fixed chunks of rows, the same for any thread count; weights and zero weights")
{
    // 300,000 rows: several chunks of rows (chunked_sums), a dense cell table of bits.
    std::mt19937 rng(17);
    std::normal_distribution<double> g(0.0, 4.0);
    MatrixD P(300000, 2);
    for (Index i = 0; i < P.rows(); ++i)
        for (int d = 0; d < 2; ++d) P(i, d) = g(rng);
    std::vector<float> w(static_cast<std::size_t>(P.rows()));
    for (Index i = 0; i < P.rows(); ++i) w[std::size_t(i)] = P(i, 0) > 6 ? 0.0f : float(1 + i % 3);
    check_bins(P, 0.25);
    for (const float* weights : {static_cast<const float*>(nullptr), static_cast<const float*>(w.data())}) {
        std::vector<detail::Bins> runs;
        for (int threads : {1, 2, 3}) {
            const detail::HostThreads scope(threads);
            runs.push_back(detail::make_bins(P, 0.25, weights));
        }
        for (const detail::Bins& b : runs) {
            CHECK(b.of == runs[0].of);
            CHECK(b.count == runs[0].count);
            CHECK(b.mean == runs[0].mean);  // bit for bit
            CHECK(b.weight == runs[0].weight);
        }
        if (!weights) continue;
        // Against the definition: weighted means; a bin of weight 0 takes the plain mean.
        const detail::Bins& b = runs[0];
        const Index B = b.mean.rows();
        MatrixD sum = MatrixD::Zero(B, 2), plain = MatrixD::Zero(B, 2);
        VectorD ws = VectorD::Zero(B);
        for (Index i = 0; i < P.rows(); ++i) {
            const Index j = b.of[std::size_t(i)];
            sum.row(j) += P.row(i) * double(w[std::size_t(i)]);
            plain.row(j) += P.row(i);
            ws[j] += w[std::size_t(i)];
        }
        Index zero = 0;
        for (Index j = 0; j < B; ++j) {
            const Eigen::RowVectorXd want = ws[j] > 0
                                                ? Eigen::RowVectorXd(sum.row(j) / ws[j])
                                                : Eigen::RowVectorXd(plain.row(j) / double(b.count[std::size_t(j)]));
            zero += ws[j] > 0 ? 0 : 1;
            CHECK((b.mean.row(j) - want).norm() <= 1e-12 * (1 + want.norm()));
            CHECK(b.weight[j] == doctest::Approx(ws[j]).epsilon(1e-12));
        }
        CHECK(zero > 0);
    }
}
