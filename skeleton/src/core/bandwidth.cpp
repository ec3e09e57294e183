#include <meanshift/bandwidth.hpp>
#include <meanshift/errors.hpp>

#include "skeleton/src/core/parallel.hpp"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace meanshift {
namespace {

void require_positive(double v, const char* what, Index where = -1)
{
    if (!std::isfinite(v) || v <= 0.0) {
        std::ostringstream m;
        m << "bandwidth: " << what;
        if (where >= 0) m << " [" << where << "]";
        m << " must be finite and > 0, got " << v;
        throw InvalidArgument(m.str());
    }
}

}  // namespace

Bandwidth Bandwidth::isotropic(double h)
{
    require_positive(h, "isotropic bandwidth h");
    Bandwidth b;
    b.kind_ = BandwidthKind::Isotropic;
    b.params_ = {h};
    return b;
}

Bandwidth Bandwidth::diagonal(std::vector<double> h)
{
    if (h.empty()) throw InvalidArgument("bandwidth: diagonal bandwidth needs k >= 1 values h_1..h_k");
    for (std::size_t d = 0; d < h.size(); ++d) require_positive(h[d], "diagonal bandwidth h_d", Index(d));
    Bandwidth b;
    b.kind_ = BandwidthKind::Diagonal;
    b.params_ = std::move(h);
    return b;
}

Bandwidth Bandwidth::per_point(MatrixD h)
{
    if (h.size() == 0)
        throw InvalidArgument("bandwidth: per-point bandwidths must be an n x k matrix, got an empty one");
    // One pass on the host threads; only a refused value is looked up again in order, so the
    // message names the first one (10^7 × 3 values: the check is a pass over 240 MB).
    bool bad = false;
    const double* v = h.data();
    MS_PARALLEL_FOR_OR(h.size(), bad)
    for (Index j = 0; j < h.size(); ++j) bad = bad || !(v[j] > 0.0 && v[j] <= DBL_MAX);
    if (bad)
        for (Index i = 0; i < h.rows(); ++i)
            for (Index d = 0; d < h.cols(); ++d)
                if (!std::isfinite(h(i, d)) || h(i, d) <= 0.0) {
                    std::ostringstream m;
                    m << "bandwidth: per-point bandwidth (" << i << ", " << d << ") must be finite and > 0, got "
                      << h(i, d);
                    throw InvalidArgument(m.str());
                }
    Bandwidth b;
    b.kind_ = BandwidthKind::PerPoint;
    b.params_.clear();
    b.per_point_ = std::move(h);
    return b;
}

Bandwidth Bandwidth::exponential_last(std::vector<double> sigma)
{
    if (sigma.size() < 2)
        throw InvalidArgument("bandwidth: the Sec. IV model H_i = diag(s_1 e^{y_k}, ..., s_k) needs k >= 2 values");
    for (std::size_t d = 0; d < sigma.size(); ++d) require_positive(sigma[d], "Sec. IV sigma_d", Index(d));
    Bandwidth b;
    b.kind_ = BandwidthKind::ExponentialLast;
    b.params_ = std::move(sigma);
    return b;
}

void Bandwidth::covariance_diagonal(Index i, const double* y, int k, double* out) const
{
    switch (kind_) {
    case BandwidthKind::Isotropic:
        for (int d = 0; d < k; ++d) out[d] = params_[0] * params_[0];
        break;
    case BandwidthKind::Diagonal:
        for (int d = 0; d < k; ++d) out[d] = params_[std::size_t(d)] * params_[std::size_t(d)];
        break;
    case BandwidthKind::PerPoint:
        for (int d = 0; d < k; ++d) out[d] = per_point_(i, d) * per_point_(i, d);
        break;
    case BandwidthKind::ExponentialLast: {
        const double s = std::exp(y[k - 1]);
        for (int d = 0; d < k - 1; ++d) out[d] = params_[std::size_t(d)] * s;
        out[k - 1] = params_[std::size_t(k - 1)];
        break;
    }
    }
    for (int d = 0; d < k; ++d) {
        // A variance that is 0, denormal or overflows makes H_i (or H_i^-1) singular in floating point.
        if (!std::isfinite(out[d]) || out[d] < DBL_MIN || !std::isfinite(1.0 / out[d])) {
            if (kind_ != BandwidthKind::ExponentialLast) {
                // The user gave a finite, positive sigma: say which one and why it cannot be used.
                const double sigma = kind_ == BandwidthKind::PerPoint   ? per_point_(i, d)
                                     : kind_ == BandwidthKind::Diagonal ? params_[std::size_t(d)]
                                                                        : params_[0];
                char buf[320];
                std::snprintf(buf, sizeof buf,
                              "bandwidth: sigma = %.3g%s%s (dimension %d) is out of range: its variance sigma^2 %s "
                              "float64, and the whitened data (x - centre) / sigma would not fit float32; use "
                              "sigma between 1e-150 and 1e150 (rescale the data otherwise)",
                              sigma, kind_ == BandwidthKind::PerPoint ? " of point " : "",
                              kind_ == BandwidthKind::PerPoint ? std::to_string(i).c_str() : "", d,
                              out[d] < DBL_MIN ? "underflows" : "overflows");
                throw InvalidArgument(buf);
            }
            std::ostringstream m;
            m << "bandwidth: H_" << i << " is singular or not finite: diagonal entry " << d << " = " << out[d];
            if (kind_ == BandwidthKind::ExponentialLast)
                m << " (sigma_d * exp(y_i[k-1]) with y_i[k-1] = " << y[k - 1] << ")";
            throw InvalidArgument(m.str());
        }
    }
}

}  // namespace meanshift
