#pragma once
/// @file bandwidth.hpp
/// The diagonal covariance ("uncertainty") model H_i(y_i) of Malysiak & Handmann, eq. 1-6.
///
/// Units: every bandwidth given here is a *standard deviation* in the units of the data, so an
/// isotropic bandwidth h means H_i = h² I and the Gaussian weight exp(-|y - y_i|² / (2 h²)).
/// The exception is the paper's Sec. IV closed form, whose σ_d are the diagonal entries of H_i
/// (variances) exactly as the paper writes them.

#include <meanshift/export.hpp>
#include <meanshift/types.hpp>

#include <vector>

namespace meanshift {

enum class BandwidthKind {
    Isotropic,  ///< H_i = h² I for every point.
    Diagonal,  ///< H_i = diag(h_1², …, h_k²) for every point (e.g. joint spatial/range bandwidths).
    PerPoint,  ///< H_i = diag(h_i1², …, h_ik²), one row of standard deviations per point (n × k).
    ExponentialLast,  ///< Sec. IV: H_i = diag(σ_1 e^{y_i^k}, …, σ_{k-1} e^{y_i^k}, σ_k), σ_d = variances.
};

/// Immutable description of the covariance model. Validation of values against the data
/// (finite, > 0, shapes) happens in prepare(), which throws InvalidArgument.
class MEANSHIFT_API Bandwidth {
public:
    /// Isotropic Gaussian kernel with standard deviation h (> 0, finite).
    static Bandwidth isotropic(double h);
    /// One diagonal for all points: h.size() must equal k; every h_d > 0, finite.
    static Bandwidth diagonal(std::vector<double> h);
    /// One diagonal per point: n × k standard deviations, row i belongs to data point i.
    static Bandwidth per_point(MatrixD h);
    /// Paper Sec. IV: sigma.size() must equal k; H_i,dd = sigma_d * exp(y_i[k-1]) for d < k-1,
    /// H_i,(k-1)(k-1) = sigma_{k-1}. Requires k >= 2.
    static Bandwidth exponential_last(std::vector<double> sigma);

    BandwidthKind kind() const noexcept { return kind_; }
    /// True when every point shares one H (Isotropic, Diagonal): the kernel is then plain
    /// Gaussian mean shift in whitened coordinates.
    bool shared() const noexcept { return kind_ == BandwidthKind::Isotropic || kind_ == BandwidthKind::Diagonal; }
    /// Diagonal of H_i (variances) for point i with coordinates y (length k). Throws
    /// InvalidArgument if the result is not finite and > 0 (singular H_i).
    void covariance_diagonal(Index i, const double* y, int k, double* out) const;
    /// Scalar/vector parameters as given (h, h_d or sigma_d).
    const std::vector<double>& parameters() const noexcept { return params_; }
    const MatrixD& per_point_values() const noexcept { return per_point_; }

    Bandwidth() = default;

private:
    BandwidthKind kind_ = BandwidthKind::Isotropic;
    std::vector<double> params_{1.0};
    MatrixD per_point_;
};

}  // namespace meanshift
