#pragma once
/// @file types.hpp
/// Matrix aliases used at the API. All point sets are row-major: one point per row.

#include <Eigen/Core>
#include <cstdint>

namespace meanshift {

using Index = std::int64_t;

/// n × k row-major float32 matrix: n points, k dimensions.
using MatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
/// n × k row-major float64 matrix.
using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VectorF = Eigen::VectorXf;
using VectorD = Eigen::VectorXd;

}  // namespace meanshift
