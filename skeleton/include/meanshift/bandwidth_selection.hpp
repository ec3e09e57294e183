#pragma once
/// @file bandwidth_selection.hpp
/// Bandwidths chosen from the data: fixed rules (Scott, Silverman, scikit-learn's
/// quantile estimate) and adaptive per-point bandwidths from the k-th nearest-neighbour distance
/// (the sample-point estimator of variable-bandwidth mean shift, Comaniciu, Ramesh & Meer 2001).
///
/// Units: every value returned is a Gaussian kernel standard deviation σ in data units, the
/// library's meaning of a bandwidth (bandwidth.hpp), except estimate_bandwidth(), which returns
/// scikit-learn's flat-kernel radius (see there and kFlatRadiusToSigma).
///
/// Errors: InvalidArgument for empty data, NaN/Inf values, k or quantile out of range, and data
/// whose spread is 0 where the rule needs it (a constant column for a per-dimension rule).
/// The k-nearest-neighbour searches of knn_distances() and adaptive_bandwidths() run on a backend
/// (Backend::nearest_distances: "serial", the default, and "openmp" search a kd-tree (nanoflann) in
/// up to 16 dimensions and brute force above, on one thread or all; "cuda" and "opencl" search by
/// brute force on the GPU, up to 64 neighbours); everything else runs on the host. They are
/// deterministic (a fixed seed for sampling).

#include <meanshift/bandwidth.hpp>
#include <meanshift/export.hpp>
#include <meanshift/tuning.hpp>
#include <meanshift/types.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace meanshift {

/// Normal-reference rules for a Gaussian kernel density estimate (as scipy.stats.gaussian_kde):
/// the bandwidth that minimises the asymptotic mean integrated squared error if the data were
/// one normal distribution. With n points in k dimensions and s_d the sample standard deviation
/// (ddof = 1) of dimension d:
///   Scott:      h_d = n^(-1/(k+4)) · s_d
///   Silverman:  h_d = (n (k+2) / 4)^(-1/(k+4)) · s_d      (1-D: 1.06 s n^(-1/5))
/// The result is the Gaussian σ itself. For clustering these are usually too *large* on
/// multi-modal data (the spread s_d includes the distances between clusters).
enum class BandwidthRule { Scott, Silverman };

/// Per-dimension rule: one σ_d per column (for Bandwidth::diagonal). Needs n >= 2 and s_d > 0 in
/// every dimension (else InvalidArgument naming the dimension).
MEANSHIFT_API std::vector<double> rule_bandwidths(const MatrixF& data, BandwidthRule rule);

/// Isotropic rule: the same factor times s̄ = sqrt(mean_d s_d²) (the root mean square of the
/// per-dimension spreads, so one constant column does not make it 0). Needs n >= 2, s̄ > 0.
MEANSHIFT_API double rule_bandwidth(const MatrixF& data, BandwidthRule rule);

/// Gaussian σ per flat-kernel radius: a flat window of radius r and a Gaussian with σ = r/2 hold
/// most of their weight on the same neighbours (~95 % of a 1-D Gaussian lies within 2σ).
inline constexpr double kFlatRadiusToSigma = 0.5;

/// Default sample size of estimate_bandwidth() (what the Python estimator always used).
inline constexpr Index kDefaultBandwidthSample = 10000;

/// scikit-learn's sklearn.cluster.estimate_bandwidth(X, quantile): the mean over the (sampled)
/// points of the distance to their m-th nearest neighbour, m = max(1, floor(quantile · n_s)),
/// the point itself counting as its first neighbour (distance 0), n_s = min(n, max_samples).
/// With n <= max_samples it equals scikit-learn's value with n_samples=None (up to float
/// rounding: the data are float32 here). Above, max_samples points drawn without replacement
/// with a fixed seed stand for the data (scikit-learn's n_samples, with another generator).
/// Exact k-NN by brute force with a selection per row: O(n_s² k) time, O(n_s) memory per row.
/// Returns a flat-kernel *radius* in data units; multiply by kFlatRadiusToSigma for the Gaussian
/// σ (the CLI's --bandwidth auto and quantile:Q and the Python estimator do). Throws
/// InvalidArgument for quantile outside (0, 1] or NaN, max_samples < 1, empty or non-finite data.
/// May return 0 (e.g. more than quantile · n duplicates of every point); callers decide.
MEANSHIFT_API double estimate_bandwidth(const MatrixF& data, double quantile = 0.3,
                                        Index max_samples = kDefaultBandwidthSample, std::uint64_t seed = 0);

/// Distance from every point to its k-th nearest *other* point (the point itself excluded;
/// duplicates count as other points at distance 0), Euclidean, in data units, after dividing
/// dimension d by scale[d] when scale is non-empty (scale.size() == k, values > 0). Exact:
/// kd-tree (nanoflann) for up to 16 dimensions, brute force above, on the host ("serial": one
/// thread, float64 distances; "openmp": all threads), or brute force on a GPU ("cuda", "opencl":
/// float32 distances, k + 1 ≤ 64; a larger k runs the host search), or any backend name
/// make_backend() takes ("auto"). Throws InvalidArgument for k < 1, k >= n, empty or non-finite
/// data, a bad scale; BackendUnavailable for a backend that cannot run here.
MEANSHIFT_API std::vector<double> knn_distances(const MatrixF& data, int k, const std::vector<double>& scale = {},
                                                const std::string& backend = "serial",
                                                const BackendOptions& backend_options = {});

/// Adaptive (sample-point) bandwidths, isotropic per point (Comaniciu, Ramesh & Meer 2001: the
/// bandwidth belongs to the data point x_i, not to the query), from each point's k nearest
/// neighbours at distances d_1 ≤ … ≤ d_k:
///
///   σ_i = c · max( a · d̂^(−β) · d_k(x_i),  b · s_i ),
///
/// - d_k(x_i): the local density term (f ∝ d_k^(−d)): dense regions get narrow kernels, sparse ones wide;
/// - d̂: the data's intrinsic dimension, Levina & Bickel's maximum-likelihood estimate from the same
///   neighbour distances (MacKay & Ghahramani's average), in [1, dims]. The right share of d_k shrinks
///   with the dimension the data really fill, not with the number of features (digits: 64 features,
///   d̂ ≈ 7);
/// - s_i: the width at which the neighbours together weigh as much as the point itself,
///   Σ_j exp(−d_j² / 2s_i²) = 1. In high intrinsic dimension neighbour distances concentrate near
///   d_k and a narrower kernel leaves every point a mode of its own; s_i is that floor.
///
/// a = kAdaptiveDensityFactor, β = kAdaptiveDimensionExponent, b = kAdaptiveSelfWeightFactor were
/// fitted to eight labelled sets (2-D multi-scale blobs, iris, wine, digits, breast cancer, Gaussian
/// blobs in 8, 32, 128 dimensions) and checked on six others (docs/bandwidth-selection.md).
inline constexpr double kAdaptiveDensityFactor = 1.6;
inline constexpr double kAdaptiveDimensionExponent = 0.8;
inline constexpr double kAdaptiveSelfWeightFactor = 1.1;
/// Default factor c of AdaptiveBandwidthOptions (and of the CLI's and Python's `adaptive` rule).
inline constexpr double kDefaultAdaptiveC = 1.0;

struct AdaptiveBandwidthOptions {
    /// Neighbour rank k (>= 1, < n). 0 = default: round(sqrt(n)), at least 5, at most n-1 (so
    /// the kernels keep a share of the data as n grows; a fixed k would shrink every σ_i toward 0).
    /// k should stay below the size of the smallest cluster that must stay separate: above it,
    /// d_k of that cluster's points reaches into the next cluster.
    int k = 0;
    /// Above this rank the neighbours come from a uniform random sample of ceil(n · sample_k / k)
    /// points (fixed seed): the sample_k nearest sampled points, each standing for n / sample size
    /// points, so the sample_k-th stands for d_k. 0 = always the exact k nearest.
    int sample_k = 50;
    /// Factor c (> 0) on the whole rule: > 1 merges more, < 1 splits more.
    double c = kDefaultAdaptiveC;
    /// The intrinsic dimension d̂ of the rule; 0 = estimate it from the data (Levina-Bickel), else >= 1.
    double intrinsic_dimension = 0;
    /// true: distances in standardised units (dimension d divided by its standard deviation
    /// s_d) and σ_id = σ_i · s_d, for data whose dimensions have different units or scales;
    /// false: isotropic σ_i in data units. Constant columns (s_d = 0) are an InvalidArgument
    /// with per_dimension.
    bool per_dimension = false;
    /// Floor for duplicates: d_k(x_i) is raised to at least floor_fraction · (median of the
    /// positive d_k) so that k or more duplicates of a point (d_k = 0) still get a kernel of
    /// non-zero width. In [0, 1]; 0 = no floor: then a d_k of 0 is an InvalidArgument.
    double floor_fraction = 0.1;
    /// Backend that runs the k-NN search (knn_distances(): "serial", "openmp", "cuda", "opencl",
    /// "auto"), with its options; the rank searched is k + 1, or sample_k + 1 when sampled.
    std::string backend = "serial";
    BackendOptions backend_options;
};

/// What adaptive_bandwidths_detailed() found besides the bandwidths.
struct AdaptiveBandwidths {
    MatrixD sigma;  ///< n × dims, row i the σ of point i (data units)
    int k = 0;  ///< the neighbour rank used
    double intrinsic_dimension = 0;  ///< d̂ of the rule (estimated or given)
    double self_weight_share = 0;  ///< share of the points whose σ_i is the self-weight floor b · s_i
    bool sampled = false;  ///< the neighbours came from a sample (k > sample_k)
};

/// The rank the defaults give for n points (AdaptiveBandwidthOptions::k = 0): round(sqrt(n)),
/// at least 5, at most n - 1.
MEANSHIFT_API int default_adaptive_k(Index n);

/// Per-point σ_i (n × dims, one row per point) for Bandwidth::per_point. InvalidArgument for bad
/// options, k >= n, non-finite data, or every d_k = 0 (fewer than k+1 distinct points).
MEANSHIFT_API MatrixD adaptive_bandwidths(const MatrixF& data, const AdaptiveBandwidthOptions& options = {});

/// adaptive_bandwidths() with the intrinsic dimension it used and how often the floor decided.
MEANSHIFT_API AdaptiveBandwidths adaptive_bandwidths_detailed(const MatrixF& data,
                                                              const AdaptiveBandwidthOptions& options = {});

/// Abramson's square-root law (Abramson 1982, "On bandwidth variation in kernel estimates - a
/// square root law", Ann. Statist. 10(4); the sample-point estimator with a pilot density of
/// Comaniciu, Ramesh & Meer 2001, Sec. 2-3): per-point bandwidths
///   h_i = h0 · (f̂(x_i) / g)^(-alpha),   alpha = 1/2 (Abramson),
/// f̂ a pilot Gaussian kernel density estimate at the data points with a fixed bandwidth σ_p,
/// g = exp(mean_i log f̂(x_i)) the geometric mean of the pilot values (so the h_i have geometric
/// mean h0), and h0 = c · σ_p. Dense regions get narrow kernels, sparse ones wide kernels.
struct AbramsonOptions {
    /// Pilot bandwidth σ_p (Gaussian σ, data units; with per_dimension, standardised units).
    /// 0 = default: Silverman's isotropic rule (rule_bandwidth(data, BandwidthRule::Silverman)),
    /// computed on the standardised data with per_dimension.
    double pilot = 0;
    /// Factor c (> 0): h0 = c · σ_p. The pilot σ_p of the normal-reference rule is KDE-optimal,
    /// which is too small for clustering multi-modal data; default 2, the best mean ARI of
    /// c ∈ {0.5, 1, 1.5, 2, 3, 4, 6} over the evaluation sets of docs/bandwidth-selection.md (tuned
    /// on them, so optimistic for new data).
    double c = 2.0;
    /// Sensitivity alpha in [0, 1] (Silverman 1986, 5.3.1): 0.5 is Abramson's law; 0 gives the
    /// fixed bandwidth h0 for every point.
    double alpha = 0.5;
    /// true: the pilot runs on the data divided by each dimension's standard deviation s_d and
    /// h_id = h0 · λ_i · s_d (for dimensions of different units); false: isotropic h_i in data
    /// units. Constant columns are an InvalidArgument with it.
    bool per_dimension = false;
};

/// Pilot density of abramson_bandwidths(): f̂(x_i) = (1/n) Σ_j exp(−‖x_i − x_j‖² / (2 σ_p²)) for
/// every point i (j = i included, so f̂ ≥ 1/n > 0), without the Gaussian's normalising constant
/// (2π σ_p²)^(-k/2), which cancels in f̂/g. Exact sums in double, brute force: O(n² k) time, O(n)
/// memory (about 1 s for n = 20,000 in 5-D on one core). Throws InvalidArgument for empty or
/// non-finite data, sigma <= 0 or not finite.
MEANSHIFT_API std::vector<double> pilot_density(const MatrixF& data, double sigma);

/// Per-point h_i (n × k, one row per point, the Gaussian σ_i of each point for
/// Bandwidth::per_point), Abramson's law with AbramsonOptions. Throws InvalidArgument for empty
/// or non-finite data, n < 2, pilot < 0 or not finite, c <= 0, alpha outside [0, 1], a pilot rule
/// that gives 0 (every point the same), a constant column with per_dimension.
MEANSHIFT_API MatrixD abramson_bandwidths(const MatrixF& data, const AbramsonOptions& options = {});

}  // namespace meanshift
