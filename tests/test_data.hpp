#pragma once
// Data generators of the test suite: Gaussian blobs with known modes (one at the origin), an
// image-like 640 × 480 (x, y, r, g, b) grid, and random PreparedData for single backend steps.

#include "test_support.hpp"

#include <meanshift/meanshift.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace mstest {

using meanshift::Index;
using meanshift::MatrixD;
using meanshift::MatrixF;

/// Standard normal clipped to [-clip, clip] so blob geometry is bounded for every seed.
inline double clipped_normal(std::mt19937_64& rng, double clip = 3.0)
{
    std::normal_distribution<double> N(0.0, 1.0);
    double v;
    do v = N(rng);
    while (std::abs(v) > clip);
    return v;
}

struct Blobs {
    MatrixF data;  ///< n × k, shuffled
    std::vector<int> truth;  ///< n: blob of each point
    MatrixD centres;  ///< b × k generating centres (data units)
    std::vector<int> sizes;  ///< b
    /// Label cluster() must give blob j when the sizes are distinct: rank of its size (largest = 0).
    std::vector<int> expected_label() const
    {
        std::vector<int> order(sizes.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int a, int b) { return sizes[std::size_t(a)] > sizes[std::size_t(b)]; });
        std::vector<int> rank(sizes.size());
        for (std::size_t r = 0; r < order.size(); ++r) rank[std::size_t(order[r])] = static_cast<int>(r);
        return rank;
    }
};

/// Centre of blob j: blob 0 at the origin, the others `spacing` (or a multiple) along ± axes, so any
/// two centres are at least `spacing` apart.
inline std::vector<double> blob_centre(int j, int k, double spacing)
{
    std::vector<double> c(static_cast<std::size_t>(k), 0.0);
    if (j == 0) return c;
    const int idx = j - 1;
    const int axis = (idx / 2) % k;
    const double sign = idx % 2 ? -1.0 : 1.0;
    const double mult = 1.0 + idx / (2 * k);
    c[std::size_t(axis)] = sign * mult * spacing;
    return c;
}

/// Gaussian blobs: blob j has sizes[j] points with per-dimension standard deviation sigma[j]·scale[d]
/// (normal clipped at 3σ) around blob_centre(j)·scale + offset. Points are shuffled.
inline Blobs make_blobs(std::mt19937_64& rng, int k, const std::vector<int>& sizes, const std::vector<double>& sigma,
                        double spacing, double offset = 0.0, const std::vector<double>& scale = {})
{
    Blobs b;
    b.sizes = sizes;
    const int nb = static_cast<int>(sizes.size());
    std::vector<double> s = scale.empty() ? std::vector<double>(std::size_t(k), 1.0) : scale;
    b.centres.resize(nb, k);
    for (int j = 0; j < nb; ++j) {
        auto c = blob_centre(j, k, spacing);
        for (int d = 0; d < k; ++d) b.centres(j, d) = c[std::size_t(d)] * s[std::size_t(d)] + offset;
    }
    const int n = std::accumulate(sizes.begin(), sizes.end(), 0);
    std::vector<int> who;
    for (int j = 0; j < nb; ++j) who.insert(who.end(), std::size_t(sizes[std::size_t(j)]), j);
    std::shuffle(who.begin(), who.end(), rng);
    b.data.resize(n, k);
    b.truth = who;
    for (int i = 0; i < n; ++i) {
        const int j = who[std::size_t(i)];
        for (int d = 0; d < k; ++d)
            b.data(i, d) =
                static_cast<float>(b.centres(j, d) + sigma[std::size_t(j)] * s[std::size_t(d)] * clipped_normal(rng));
    }
    return b;
}

/// Image-like data: every pixel of a width × height grid as (x, y, r, g, b); the image has four
/// quadrants of constant colour plus Gaussian noise (σ = 0.02).
struct Image {
    int width = 640, height = 480;
    MatrixF data;  ///< (width·height) × 5
    static std::vector<double> colour(int quadrant)
    {
        static const double c[4][3] = {{0.8, 0.2, 0.2}, {0.2, 0.7, 0.3}, {0.1, 0.2, 0.9}, {0.6, 0.6, 0.1}};
        return {c[quadrant][0], c[quadrant][1], c[quadrant][2]};
    }
    int quadrant(double x, double y) const { return (x >= width / 2 ? 1 : 0) + (y >= height / 2 ? 2 : 0); }
};

inline Image make_image(std::mt19937_64& rng, int width = 640, int height = 480)
{
    Image im;
    im.width = width;
    im.height = height;
    im.data.resize(Index(width) * height, 5);
    std::normal_distribution<double> noise(0.0, 0.02);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            const Index i = Index(y) * width + x;
            const auto c = Image::colour(im.quadrant(x, y));
            im.data(i, 0) = float(x);
            im.data(i, 1) = float(y);
            for (int d = 0; d < 3; ++d) im.data(i, 2 + d) = float(c[std::size_t(d)] + noise(rng));
        }
    return im;
}

/// Random PreparedData (what the skeleton would hand a backend); points and precisions are exactly
/// representable in float32 so that float32 and float64 copies hold identical numbers. Points are N(0.5, s²) per
/// dimension with s chosen so that typical squared distances stay O(10) in any k (weights neither
/// all 1 nor all underflowing). For PerPoint, precisions are e^{U(-a, a)} and log-weights are
/// log|H_i|^{-1/2} - max, like the skeleton's.
inline meanshift::PreparedData random_prepared(std::mt19937_64& rng, Index n, int k, meanshift::KernelModel model)
{
    using namespace meanshift;
    PreparedData D;
    D.model = model;
    const double s = std::max(0.5, 3.0 / std::sqrt(double(k)));
    std::normal_distribution<double> N(0.5, s);
    D.points.resize(n, k);
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d) D.points(i, d) = double(float(N(rng)));
    if (model == KernelModel::PerPoint) {
        const double a = k > 8 ? 0.3 : 0.7;
        std::uniform_real_distribution<double> U(-a, a);
        D.precision.resize(n, k);
        for (Index i = 0; i < n; ++i)
            for (int d = 0; d < k; ++d) D.precision(i, d) = double(float(std::exp(U(rng))));
    }
    D.finalize();
    return D;
}

/// Query positions for a step: some data points, one at the origin (catches padded entries that
/// still get weight), the rest perturbed data points. Values are float32-representable.
inline MatrixD random_queries(std::mt19937_64& rng, const meanshift::PreparedData& D, Index count)
{
    std::uniform_int_distribution<Index> pick(0, D.n() - 1);
    std::normal_distribution<double> jitter(0.0, 0.3);
    MatrixD Q(count, D.k());
    for (Index q = 0; q < count; ++q)
        for (int d = 0; d < D.k(); ++d) Q(q, d) = 0.0;
    for (Index q = 1; q < count; ++q) {
        const Index i = pick(rng);
        const bool exact = q % 3 == 1;
        for (int d = 0; d < D.k(); ++d) Q(q, d) = double(float(D.points(i, d) + (exact ? 0.0 : jitter(rng))));
    }
    return Q;
}

}  // namespace mstest
