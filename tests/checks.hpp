#pragma once
// Result checks shared by the unit and conformance suites.

#include "test_data.hpp"

#include <meanshift/meanshift.hpp>

namespace mstest {

/// Shape and consistency of any Result: m modes, labels in [0, c), sizes agree with the labels
/// and do not increase, iterations within the limit.
inline void check_result_shape(const meanshift::Result& r, Index m, int k, int max_iterations)
{
    REQUIRE(r.modes.rows() == m);
    REQUIRE(r.modes.cols() == k);
    REQUIRE(r.labels.size() == std::size_t(m));
    REQUIRE(r.iterations.size() == std::size_t(m));
    REQUIRE(r.converged.size() == std::size_t(m));
    const Index c = static_cast<Index>(r.cluster_sizes.size());
    REQUIRE(r.centres.rows() == c);
    REQUIRE(r.centres.cols() == k);
    CHECK(r.modes.allFinite());
    CHECK(r.centres.allFinite());
    std::vector<Index> count(std::size_t(c), 0);
    int bad_label = 0, bad_iter = 0;
    for (Index i = 0; i < m; ++i) {
        const int l = r.labels[std::size_t(i)];
        if (l < 0 || l >= c)
            ++bad_label;
        else
            ++count[std::size_t(l)];
        const int it = r.iterations[std::size_t(i)];
        if (it < 1 || it > max_iterations) ++bad_iter;
    }
    CHECK(bad_label == 0);
    CHECK(bad_iter == 0);
    for (Index l = 0; l < c; ++l) {
        CHECK(count[std::size_t(l)] == r.cluster_sizes[std::size_t(l)]);
        if (l > 0) CHECK(r.cluster_sizes[std::size_t(l - 1)] >= r.cluster_sizes[std::size_t(l)]);
    }
}

/// Every blob was recovered: exactly as many clusters as blobs, every point of blob j carries the
/// label expected_label()[j] (blob sizes must be distinct) or, with `exact_labels` false, the
/// partition equals the blobs; every mode and every centre lies within tol[j] (data units, every
/// dimension, scaled by `scale`) of its generating centre.
inline void check_blobs_recovered(const meanshift::Result& r, const Blobs& b, const std::vector<double>& tol,
                                  const std::vector<double>& scale, bool exact_labels = true)
{
    const Index n = b.data.rows();
    const int k = static_cast<int>(b.data.cols());
    const int nb = static_cast<int>(b.sizes.size());
    REQUIRE(r.labels.size() == std::size_t(n));
    CHECK(r.centres.rows() == nb);
    const auto expected = b.expected_label();
    if (exact_labels) {
        Index wrong = 0, first = -1;
        for (Index i = 0; i < n; ++i)
            if (r.labels[std::size_t(i)] != expected[std::size_t(b.truth[std::size_t(i)])]) {
                ++wrong;
                if (first < 0) first = i;
            }
        INFO("first mislabelled point " << first);
        CHECK(wrong == 0);
    } else {
        CHECK(same_partition(r.labels, b.truth));
    }
    if (r.centres.rows() != nb) return;
    Index far = 0, first_far = -1;
    for (Index i = 0; i < n; ++i) {
        const int j = b.truth[std::size_t(i)];
        for (int d = 0; d < k; ++d)
            if (std::abs(r.modes(i, d) - b.centres(j, d)) > tol[std::size_t(j)] * scale[std::size_t(d)]) {
                ++far;
                if (first_far < 0) first_far = i;
            }
    }
    INFO("first mode far from its blob centre: point " << first_far);
    CHECK(far == 0);
    for (int j = 0; j < nb; ++j) {
        // The cluster that holds blob j's first point.
        Index first_point = 0;
        while (b.truth[std::size_t(first_point)] != j) ++first_point;
        const int l = r.labels[std::size_t(first_point)];
        for (int d = 0; d < k; ++d) {
            INFO("blob " << j << " dimension " << d << ": centre " << r.centres(l, d) << " vs generating centre "
                         << b.centres(j, d));
            CHECK(std::abs(r.centres(l, d) - b.centres(j, d)) <= tol[std::size_t(j)] * scale[std::size_t(d)]);
        }
    }
}

/// Statistical tolerance (in bandwidth units) between a blob's mode and its generating centre:
/// 5 standard errors of the blob mean (σ/√size, every point is within 3σ) plus 0.1 h for the
/// kernel-density mode not being exactly the sample mean.
inline std::vector<double> blob_tolerance(const Blobs& b, const std::vector<double>& sigma)
{
    std::vector<double> t;
    for (std::size_t j = 0; j < b.sizes.size(); ++j) t.push_back(0.1 + 5.0 * sigma[j] / std::sqrt(double(b.sizes[j])));
    return t;
}

}  // namespace mstest
