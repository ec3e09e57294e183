// The one-pass scans of skeleton/src/array_scan.hpp against Eigen's definitions.
#include "test_support.hpp"

#include "skeleton/src/array_scan.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <random>
#include <vector>

using namespace meanshift;

TEST_CASE_TEMPLATE("all_finite: NaN, +Inf and -Inf found at every position of short and long arrays", T, float,
                   double)
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
