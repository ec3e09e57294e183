#pragma once
/// @file synthetic.hpp
/// Reproducible synthetic data for `meanshift bench`: Gaussian blobs.

#include <meanshift/types.hpp>

#include <cstdint>

namespace mscli {

/// n points in k dimensions from `blobs` isotropic Gaussian blobs (standard deviation 1, centres
/// uniform in [-10, 10]^k), points assigned round-robin. Deterministic for a given seed.
meanshift::MatrixF make_blobs(meanshift::Index n, int k, int blobs, std::uint64_t seed);

/// n × k per-point standard deviations, uniform in [0.5 h, 1.5 h] (the "diagonal" kernel).
meanshift::MatrixD make_point_bandwidths(meanshift::Index n, int k, double h, std::uint64_t seed);

}  // namespace mscli
