#include "prepare.hpp"
#include "array_scan.hpp"
#include "parallel.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace meanshift::detail {
namespace {

void check_finite(const float* x, Index m, int k, const char* what)
{
    if (all_finite(x, static_cast<std::size_t>(m) * static_cast<std::size_t>(k))) return;
    for (Index i = 0; i < m; ++i)
        for (int d = 0; d < k; ++d)
            if (!std::isfinite(x[i * k + d])) {
                std::ostringstream s;
                s << what << ": value at row " << i << ", column " << d << " is " << x[i * k + d]
                  << " (NaN/Inf are not allowed)";
                throw InvalidArgument(s.str());
            }
}

// The float32 backends see the float32 copies: valid float64 input can still overflow there (a tiny
// bandwidth next to a large coordinate, one per-point bandwidth far from the others).
[[noreturn]] void throw_float32_overflow()
{
    throw InvalidArgument("data/bandwidth range: whitened coordinates (x - centre) / h exceed the float32 range "
                          "used by the float32 backends; the bandwidth is too small for the data's extent");
}

/// The per-point precisions' float32 range (the points' is checked where they are converted).
void check_float32_range(const PreparedData& D)
{
    if (D.model == KernelModel::PerPoint) {
        const float lo = D.precision_f.size() ? D.precision_f.minCoeff() : 1.0f;
        if (!all_finite(D.precision_f.data(), static_cast<std::size_t>(D.precision_f.size())) ||
            !(lo >= std::numeric_limits<float>::min()))
            throw InvalidArgument("bandwidth range: per-point bandwidths span too many orders of magnitude; the "
                                  "precisions 1/H_i,dd relative to their geometric mean leave the float32 range");
    }
}

}  // namespace

void finalize_weights(PreparedData& D)
{
    if (D.model != KernelModel::PerPoint) return;
    // log|H_i|^{-1/2} = ½ Σ_d log(1/H_i,dd). Only ratios of weights matter: shift so the
    // largest c_i is 0 (nothing overflows in exp).
    D.log_weight = 0.5 * D.precision.array().log().rowwise().sum().matrix();
    if (D.log_weight.size()) D.log_weight.array() -= D.log_weight.maxCoeff();
    D.precision_f = D.precision.cast<float>();
    D.log_weight_f = D.log_weight.cast<float>();
}

bool check_weights(const float* weights, Index n)
{
    if (!weights) return false;
    bool any = false;
    for (Index i = 0; i < n; ++i) {
        const float w = weights[i];
        if (!std::isfinite(w) || w < 0) {
            std::ostringstream s;
            s << "weights: value at row " << i << " is " << w << " (weights must be finite and >= 0)";
            throw InvalidArgument(s.str());
        }
        any = any || w > 0;
    }
    if (!any) throw InvalidArgument("weights: all weights are 0 (at least one point must carry weight)");
    return true;
}

Prepared prepare(const float* data, Index n, int k, const Bandwidth& bw, const float* weights)
{
    if (n < 1) throw InvalidArgument("data: need at least one point (n = 0)");
    if (k < 1) throw InvalidArgument("data: need at least one dimension (k = 0)");
    if (!data) throw InvalidArgument("data: null pointer");
    const bool weighted = check_weights(weights, n);

    const auto& params = bw.parameters();
    if (bw.kind() == BandwidthKind::Diagonal && static_cast<int>(params.size()) != k)
        throw InvalidArgument("bandwidth: " + std::to_string(params.size()) + " diagonal bandwidths given for k = " +
                              std::to_string(k) + " dimensions");
    if (bw.kind() == BandwidthKind::ExponentialLast && static_cast<int>(params.size()) != k)
        throw InvalidArgument("bandwidth: " + std::to_string(params.size()) + " Sec. IV sigmas given for k = " +
                              std::to_string(k) + " dimensions");
    if (bw.kind() == BandwidthKind::PerPoint &&
        (bw.per_point_values().rows() != n || bw.per_point_values().cols() != k))
        throw InvalidArgument("bandwidth: per-point bandwidths are " + std::to_string(bw.per_point_values().rows()) +
                              " x " + std::to_string(bw.per_point_values().cols()) + ", data are " +
                              std::to_string(n) + " x " + std::to_string(k));

    Prepared p;
    const std::size_t ku = static_cast<std::size_t>(k);
    std::vector<float> lo, hi;
    if (!float_column_range(data, static_cast<std::size_t>(n), ku, lo, hi)) check_finite(data, n, k, "data");
    p.centre.resize(k);
    for (int d = 0; d < k; ++d) p.centre[d] = 0.5 * (double(lo[std::size_t(d)]) + double(hi[std::size_t(d)]));

    PreparedData& D = p.data;
    std::vector<double> row(ku), var(ku);
    auto load_row = [&](Index i) {
        for (std::size_t d = 0; d < ku; ++d) row[d] = data[static_cast<std::size_t>(i) * ku + d];
    };
    if (bw.shared()) {
        D.model = KernelModel::Shared;
        load_row(0);
        bw.covariance_diagonal(0, row.data(), k, var.data());
        p.scale.resize(k);
        for (int d = 0; d < k; ++d) p.scale[d] = 1.0 / std::sqrt(var[std::size_t(d)]);
        if (weighted) {  // weights ride on the per-point model's log-weight (unit precisions)
            D.model = KernelModel::PerPoint;
            D.precision = MatrixD::Ones(n, k);
        }
    } else {
        D.model = KernelModel::PerPoint;
        MatrixD prec(n, k);
        for (Index i = 0; i < n; ++i) {
            load_row(i);
            bw.covariance_diagonal(i, row.data(), k, var.data());
            for (int d = 0; d < k; ++d) prec(i, d) = 1.0 / var[std::size_t(d)];
        }
        // Whiten by the geometric-mean precision so prepared coordinates and precisions are O(1).
        p.scale.resize(k);
        for (int d = 0; d < k; ++d) p.scale[d] = std::sqrt(std::exp(prec.col(d).array().log().mean()));
        for (int d = 0; d < k; ++d) prec.col(d) /= p.scale[d] * p.scale[d];
        D.precision = std::move(prec);
    }
    // The float64 points and their float32 copy in one pass over the input (a full-resolution
    // photo's preparation made four passes and a float64 copy of the input: 12 of its 17 ms).
    D.points.resize(n, k);
    D.points_f.resize(n, k);
    {
        const double* c = p.centre.data();
        const double* sc = p.scale.data();
        double* out = D.points.data();
        float* out_f = D.points_f.data();
        bool overflow = false;
        MS_PARALLEL_FOR_OR(n * k, overflow)
        for (Index i = 0; i < n; ++i)
            for (std::size_t d = 0, j = static_cast<std::size_t>(i) * ku; d < ku; ++d, ++j) {
                const double v = (static_cast<double>(data[j]) - c[d]) * sc[d];
                out[j] = v;
                out_f[j] = static_cast<float>(v);
                overflow = overflow || !(std::fabs(out_f[j]) <= std::numeric_limits<float>::max());
            }
        if (overflow) throw_float32_overflow();
    }
    finalize_weights(D);
    if (weighted) {
        // log w_i, floored at -1e4 (exp gives exactly 0 in float32 and float64: a zero weight
        // contributes nothing), then shifted so the largest log-weight is 0 again.
        for (Index i = 0; i < n; ++i)
            D.log_weight[i] += weights[i] > 0 ? std::max(-1e4, std::log(static_cast<double>(weights[i]))) : -1e4;
        D.log_weight.array() -= D.log_weight.maxCoeff();
        D.log_weight = D.log_weight.cwiseMax(-1e4);
        D.log_weight_f = D.log_weight.cast<float>();
    }
    check_float32_range(D);
    return p;
}

MatrixD to_prepared(const Prepared& p, const float* points, Index m, const char* what)
{
    const int k = p.data.k();
    if (!points) throw InvalidArgument(std::string(what) + ": null pointer");
    check_finite(points, m, k, what);
    Eigen::Map<const MatrixF> Y(points, m, k);
    MatrixD out = (Y.cast<double>().rowwise() - p.centre.transpose()).array().rowwise() * p.scale.transpose().array();
    return out;
}

MatrixF from_prepared(const Prepared& p, const MatrixD& y)
{
    // One pass, no float64 temporary (a photo's modes: 8 ms with the temporary's page faults).
    const Index k = y.cols();
    MatrixF x(y.rows(), k);
    const double* in = y.data();
    float* out = x.data();
    const double* sc = p.scale.data();
    const double* c = p.centre.data();
    MS_PARALLEL_FOR(y.size())
    for (Index i = 0; i < y.rows(); ++i)
        for (Index d = 0, j = i * k; d < k; ++d, ++j) out[j] = static_cast<float>(in[j] / sc[d] + c[d]);
    return x;
}

}  // namespace meanshift::detail

namespace meanshift {

void PreparedData::finalize()
{
    points_f = points.cast<float>();
    detail::finalize_weights(*this);
}

}  // namespace meanshift
