#pragma once
// An independent float64 mean shift written from the paper's equations (eq. 1-6 with diagonal
// H_i), sharing no code with the library: no centring, no whitening, no rescaled weights. The
// serial backend and every other backend are checked against it.
//
//   e_i  = |H_i|^{-1/2} exp(-½ Σ_d (y_d - x_id)² / H_i,dd)
//   y'_d = Σ_i e_i x_id / H_i,dd  ÷  Σ_i e_i / H_i,dd
//
// For a shared H this is plain Gaussian mean shift, y' = Σ_i K(y - x_i) x_i / Σ_i K(y - x_i).
// The log-weights are shifted by their maximum before exp() so that no weight underflows.

#include <meanshift/types.hpp>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace mstest::ref {

using meanshift::Index;
using meanshift::MatrixD;

/// n × k variances for one shared diagonal bandwidth h (standard deviations).
inline MatrixD variances_shared(Index n, const std::vector<double>& h)
{
    MatrixD v(n, static_cast<Index>(h.size()));
    for (Index i = 0; i < n; ++i)
        for (Index d = 0; d < v.cols(); ++d) v(i, d) = h[std::size_t(d)] * h[std::size_t(d)];
    return v;
}

/// n × k variances from per-point standard deviations.
inline MatrixD variances_per_point(const MatrixD& h)
{
    return h.array().square().matrix();
}

/// Sec. IV of the paper: H_i,dd = sigma_d exp(x_i,k-1) for d < k-1, H_i,k-1 = sigma_{k-1}; x in data units.
inline MatrixD variances_exponential_last(const MatrixD& x, const std::vector<double>& sigma)
{
    const Index k = x.cols();
    MatrixD v(x.rows(), k);
    for (Index i = 0; i < x.rows(); ++i) {
        for (Index d = 0; d + 1 < k; ++d) v(i, d) = sigma[std::size_t(d)] * std::exp(x(i, k - 1));
        v(i, k - 1) = sigma[std::size_t(k - 1)];
    }
    return v;
}

/// Data x (n × k, data units) with the diagonal of every H_i (variances, n × k).
struct Model {
    MatrixD x;
    MatrixD inv_var;
    std::vector<double> log_norm;  ///< log |H_i|^{-1/2}
    Model(MatrixD points, const MatrixD& var) : x(std::move(points)), inv_var(var.cwiseInverse())
    {
        log_norm.resize(static_cast<std::size_t>(x.rows()));
        for (Index i = 0; i < x.rows(); ++i) log_norm[std::size_t(i)] = -0.5 * var.row(i).array().log().sum();
    }
};

/// One mean shift step of position y (length k).
inline void step(const Model& M, const double* y, double* out)
{
    const Index n = M.x.rows(), k = M.x.cols();
    std::vector<double> logw(static_cast<std::size_t>(n));
    double top = -std::numeric_limits<double>::infinity();
    for (Index i = 0; i < n; ++i) {
        double D2 = 0;
        for (Index d = 0; d < k; ++d) {
            const double t = y[d] - M.x(i, d);
            D2 += t * t * M.inv_var(i, d);
        }
        logw[std::size_t(i)] = M.log_norm[std::size_t(i)] - 0.5 * D2;
        top = std::max(top, logw[std::size_t(i)]);
    }
    std::vector<double> num(static_cast<std::size_t>(k), 0.0), den(static_cast<std::size_t>(k), 0.0);
    for (Index i = 0; i < n; ++i) {
        const double e = std::exp(logw[std::size_t(i)] - top);
        if (e == 0.0) continue;
        for (Index d = 0; d < k; ++d) {
            num[std::size_t(d)] += e * M.x(i, d) * M.inv_var(i, d);
            den[std::size_t(d)] += e * M.inv_var(i, d);
        }
    }
    for (Index d = 0; d < k; ++d) out[d] = num[std::size_t(d)] / den[std::size_t(d)];
}

struct Run {
    MatrixD modes;
    std::vector<int> iterations;
};

/// Runs every seed (row of `seeds`) either exactly `iterations` steps (tolerance < 0) or until its
/// shift, measured as sqrt(Σ_d (Δ_d / scale_d)²), is ≤ tolerance (at most `iterations` steps).
inline Run run(const Model& M, const MatrixD& seeds, int iterations, double tolerance, const std::vector<double>& scale)
{
    Run r;
    r.modes = seeds;
    r.iterations.assign(static_cast<std::size_t>(seeds.rows()), 0);
    const Index k = M.x.cols();
    std::vector<double> next(static_cast<std::size_t>(k));
    for (Index q = 0; q < seeds.rows(); ++q) {
        for (int it = 0; it < iterations; ++it) {
            step(M, r.modes.row(q).data(), next.data());
            double s2 = 0;
            for (Index d = 0; d < k; ++d) {
                const double t = (next[std::size_t(d)] - r.modes(q, d)) / scale[std::size_t(d)];
                s2 += t * t;
                r.modes(q, d) = next[std::size_t(d)];
            }
            ++r.iterations[std::size_t(q)];
            if (tolerance >= 0 && std::sqrt(s2) <= tolerance) break;
        }
    }
    return r;
}

}  // namespace mstest::ref
