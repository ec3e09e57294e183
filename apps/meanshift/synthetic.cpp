#include "synthetic.hpp"

#include <random>

namespace mscli {

meanshift::MatrixF make_blobs(meanshift::Index n, int k, int blobs, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> centre(-10.0, 10.0);
    std::normal_distribution<double> noise(0.0, 1.0);
    meanshift::MatrixD c(blobs, k);
    for (meanshift::Index i = 0; i < c.size(); ++i) c.data()[i] = centre(rng);
    meanshift::MatrixF x(n, k);
    for (meanshift::Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d) x(i, d) = static_cast<float>(c(i % blobs, d) + noise(rng));
    return x;
}

meanshift::MatrixD make_point_bandwidths(meanshift::Index n, int k, double h, std::uint64_t seed)
{
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
    std::uniform_real_distribution<double> u(0.5 * h, 1.5 * h);
    meanshift::MatrixD b(n, k);
    for (meanshift::Index i = 0; i < b.size(); ++i) b.data()[i] = u(rng);
    return b;
}

}  // namespace mscli
