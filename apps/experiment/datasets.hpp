#pragma once
// Synthetic data sets of the papers' experiments, generated deterministically from a seed.

#include <meanshift/backend.hpp>
#include <meanshift/types.hpp>

#include <cstdint>

namespace experiment {

/// sklearn.datasets.make_blobs as the papers use it (000, 002, 004): `centres` centres drawn
/// uniformly from [-10, 10]^k, points spread evenly over them with isotropic standard deviation
/// `std_dev`. n × k row-major float32.
meanshift::MatrixF make_blobs(meanshift::Index n, int k, int centres, double std_dev, std::uint64_t seed);

/// Paper 001, Sec. V: "synthetic samples of 3-dimensional integer tuples". make_blobs with the
/// coordinates rounded to integers (so eq. 8's |.|_pos counts integer dispositions).
meanshift::MatrixF make_integer_tuples(meanshift::Index n, int k, int centres, double std_dev, std::uint64_t seed);

/// What the skeleton's prepare() produces, rebuilt from public types for one-iteration timings
/// through make_backend + bind + step: centred on the bounding-box centre and whitened by 1/h.
/// kernel == PerPoint gives every point its own diagonal bandwidth h·u, u ∈ [0.75, 1.25]
/// (deterministic), so the eq. 5-6 path is timed.
meanshift::PreparedData prepare_for_steps(const meanshift::MatrixF& data, double h, meanshift::KernelModel kernel,
                                          std::uint64_t seed);

}  // namespace experiment
