#include "datasets.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace experiment {

using meanshift::Index;
using meanshift::MatrixF;

MatrixF make_blobs(Index n, int k, int centres, double std_dev, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> box(-10.0, 10.0);
    std::normal_distribution<double> noise(0.0, std_dev);
    meanshift::MatrixD c(centres, k);
    for (int i = 0; i < centres; ++i)
        for (int d = 0; d < k; ++d) c(i, d) = box(rng);
    MatrixF x(n, k);
    for (Index i = 0; i < n; ++i) {
        const int which = static_cast<int>(i % centres);  // even split, like make_blobs
        for (int d = 0; d < k; ++d) x(i, d) = static_cast<float>(c(which, d) + noise(rng));
    }
    // make_blobs shuffles; the papers' codes see points in random order.
    std::vector<Index> order(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
    std::shuffle(order.begin(), order.end(), rng);
    MatrixF out(n, k);
    for (Index i = 0; i < n; ++i) out.row(i) = x.row(order[static_cast<std::size_t>(i)]);
    return out;
}

MatrixF make_integer_tuples(Index n, int k, int centres, double std_dev, std::uint64_t seed)
{
    MatrixF x = make_blobs(n, k, centres, std_dev, seed);
    return x.array().round().matrix();
}

meanshift::PreparedData prepare_for_steps(const MatrixF& data, double h, meanshift::KernelModel kernel,
                                          std::uint64_t seed)
{
    const Index n = data.rows();
    const int k = static_cast<int>(data.cols());
    meanshift::PreparedData p;
    p.model = kernel;
    const Eigen::RowVectorXd lo = data.cast<double>().colwise().minCoeff();
    const Eigen::RowVectorXd hi = data.cast<double>().colwise().maxCoeff();
    const Eigen::RowVectorXd centre = 0.5 * (lo + hi);
    p.points = (data.cast<double>().rowwise() - centre) / h;
    if (kernel == meanshift::KernelModel::PerPoint) {
        std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
        std::uniform_real_distribution<double> u(0.75, 1.25);
        p.precision.resize(n, k);
        for (Index i = 0; i < n; ++i)
            for (int d = 0; d < k; ++d) {
                const double s = u(rng);  // h_id / h in prepared units
                p.precision(i, d) = 1.0 / (s * s);  // 1 / H_i,dd
            }
    }
    p.finalize();
    return p;
}

}  // namespace experiment
