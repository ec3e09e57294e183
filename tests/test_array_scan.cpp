// The one-pass scans of skeleton/src/core/array_scan.hpp against Eigen's definitions.
#include "test_support.hpp"

#include "skeleton/src/core/array_scan.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <random>
#include <vector>

using namespace meanshift;

TEST_CASE_TEMPLATE("all_finite: NaN, +Inf and -Inf found at every position of short and long arrays", T, float, double)
{
    for (std::size_t n : {1u, 7u, 16u, 33u, 1000u}) {
        std::vector<T> x(n, T(1.5));
        x[0] = std::numeric_limits<T>::max();  // the largest finite value is finite
        CHECK(detail::all_finite(x.data(), n));
        for (T bad : {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                      -std::numeric_limits<T>::infinity()})
            for (std::size_t i = 0; i < n; ++i) {
                std::vector<T> y = x;
                y[i] = bad;
                CAPTURE(n);
                CAPTURE(i);
                CHECK_FALSE(detail::all_finite(y.data(), n));
            }
    }
}

TEST_CASE("column_range: the colwise minimum and maximum of the leading columns")
{
    std::mt19937 rng(5);
    std::normal_distribution<double> g(0.0, 10.0);
    for (Index rows : {1, 2, 301})
        for (Index cols : {1, 3, 70}) {
            MatrixD A(rows, cols);
            for (Index i = 0; i < A.size(); ++i) A.data()[i] = g(rng);
            for (Index lead : {Index(1), cols}) {
                Eigen::RowVectorXd lo, hi;
                detail::column_range(A, lead, lo, hi);
                CHECK(lo == A.leftCols(lead).colwise().minCoeff());
                CHECK(hi == A.leftCols(lead).colwise().maxCoeff());
            }
        }
}

TEST_CASE("float_column_range and max_abs: exact extremes of narrow and wide rows, any thread count")
{
    std::mt19937 rng(9);
    std::normal_distribution<float> g(0.0f, 5.0f);
    // 384 and 600 columns: the wide path's tiles of column blocks x row slices; 3 columns: rows only.
    for (std::size_t cols : {std::size_t{3}, std::size_t{384}, std::size_t{600}})
        for (int threads : {1, 2, 5}) {
            const std::size_t rows = cols == 3 ? 60000 : 700;  // over kParallelMinValues values
            std::vector<float> x(rows * cols);
            for (float& v : x) v = g(rng);
            std::vector<float> want_lo(x.begin(), x.begin() + std::ptrdiff_t(cols)), want_hi = want_lo;
            for (std::size_t i = 0; i < rows; ++i)
                for (std::size_t d = 0; d < cols; ++d) {
                    want_lo[d] = std::min(want_lo[d], x[i * cols + d]);
                    want_hi[d] = std::max(want_hi[d], x[i * cols + d]);
                }
            const detail::HostThreads scope(threads);
            std::vector<float> lo, hi;
            CAPTURE(cols);
            CAPTURE(threads);
            CHECK(detail::float_column_range(x.data(), rows, cols, lo, hi));
            CHECK(lo == want_lo);
            CHECK(hi == want_hi);
            x[rows * cols / 2 + 1] = std::numeric_limits<float>::quiet_NaN();
            CHECK_FALSE(detail::float_column_range(x.data(), rows, cols, lo, hi));
            std::vector<double> xd(x.begin(), x.end());
            xd[rows * cols / 2 + 1] = -1e3;
            CHECK(detail::max_abs(xd.data(), xd.size()) == 1e3);
        }
}
