// Bandwidths from the data: normal-reference rules, scikit-learn's quantile estimate, and k-NN
// per-point bandwidths (include/meanshift/bandwidth_selection.hpp).
#include <meanshift/backend.hpp>
#include <meanshift/bandwidth_selection.hpp>
#include <meanshift/errors.hpp>
#include <meanshift/registry.hpp>

#include "skeleton/src/core/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>
#include <string>

namespace meanshift {
namespace {

/// InvalidArgument "<what>, got <value>" unless `ok` (a parameter's range check).
void require_value(bool ok, const std::string& what, double value)
{
    if (ok) return;
    std::ostringstream m;
    m << what << ", got " << value;
    throw InvalidArgument(m.str());
}

void require_data(const MatrixF& data, const char* who)
{
    if (data.rows() == 0 || data.cols() == 0)
        throw InvalidArgument(std::string(who) + ": the data are empty (need n >= 1 points, k >= 1 dimensions)");
    for (Index i = 0; i < data.rows(); ++i)
        for (Index d = 0; d < data.cols(); ++d)
            if (!std::isfinite(data(i, d))) {
                std::ostringstream m;
                m << who << ": data (" << i << ", " << d << ") is " << data(i, d) << " (must be finite)";
                throw InvalidArgument(m.str());
            }
}

// Sample standard deviation (ddof = 1) per dimension, in double.
std::vector<double> spreads(const MatrixF& data)
{
    const Index n = data.rows();
    std::vector<double> s(std::size_t(data.cols()));
    for (Index d = 0; d < data.cols(); ++d) {
        double mean = 0;
        for (Index i = 0; i < n; ++i) mean += data(i, d);
        mean /= double(n);
        double ss = 0;
        for (Index i = 0; i < n; ++i) ss += (data(i, d) - mean) * (data(i, d) - mean);
        s[std::size_t(d)] = std::sqrt(ss / double(n - 1));
    }
    return s;
}

double rule_factor(Index n, int k, BandwidthRule rule)
{
    const double e = -1.0 / (k + 4.0);
    return rule == BandwidthRule::Scott ? std::pow(double(n), e) : std::pow(double(n) * (k + 2.0) / 4.0, e);
}

const char* rule_name(BandwidthRule rule)
{
    return rule == BandwidthRule::Scott ? "Scott's rule" : "Silverman's rule";
}

void require_two(const MatrixF& data, BandwidthRule rule)
{
    require_data(data, rule_name(rule));
    if (data.rows() < 2)
        throw InvalidArgument(std::string(rule_name(rule)) + ": needs n >= 2 points for a standard deviation");
}

// Distance to the rank-th nearest row among `rows` (rank 0 = the nearest, which is the row
// itself when i is in rows), brute force with a linear-time selection (estimate_bandwidth: the
// rank can be any share of the sample, beyond what Backend::nearest_distances returns per row).
std::vector<double> brute_rank_distances(const MatrixF& data, const std::vector<Index>& rows, std::size_t rank)
{
    std::vector<double> out(rows.size()), row(rows.size());
    for (std::size_t a = 0; a < rows.size(); ++a) {
        for (std::size_t b = 0; b < rows.size(); ++b) {
            double s = 0;
            for (Index d = 0; d < data.cols(); ++d) {
                const double t = double(data(rows[a], d)) - double(data(rows[b], d));
                s += t * t;
            }
            row[b] = s;
        }
        std::nth_element(row.begin(), row.begin() + std::ptrdiff_t(rank), row.end());
        out[a] = std::sqrt(row[rank]);
    }
    return out;
}

// The data in the units of the search (dimension d divided by its scale, inv = 1 / scale): `data`
// itself without a scale, else a scaled copy in `storage`.
const MatrixF& in_search_units(const MatrixF& data, const std::vector<double>& inv, MatrixF& storage)
{
    if (inv.empty()) return data;
    storage.resize(data.rows(), data.cols());
    for (Index i = 0; i < data.rows(); ++i)
        for (Index d = 0; d < data.cols(); ++d) storage(i, d) = float(double(data(i, d)) * inv[std::size_t(d)]);
    return storage;
}

// The `count` smallest squared distances from every query to the points, on the named backend, or
// by the host search where the backend takes fewer neighbours (max_neighbours()).
MatrixD nearest(const MatrixF& points, const MatrixF& queries, int count, const std::string& backend,
                const BackendOptions& options)
{
    std::unique_ptr<Backend> be = make_backend(backend, options);
    if (be->max_neighbours() >= count) return be->nearest_distances(points, queries, count);
    return make_backend("serial")->nearest_distances(points, queries, count);
}

// The sorted distances from every row to its nearest other rows (n × r), and how many rows of the
// data each of them stands for (1, or n/m for a sample of m rows).
struct NeighbourTable {
    MatrixD d;
    double weight = 1.0;
    bool sampled = false;
};

// The k nearest rows of every row: its k+1 nearest, the row itself (or a duplicate, also at 0)
// dropped as the first.
NeighbourTable neighbours_exact(const MatrixF& data, int k, const std::vector<double>& inv, const std::string& backend,
                                const BackendOptions& options)
{
    MatrixF storage;
    const MatrixF& x = in_search_units(data, inv, storage);
    const MatrixD d2 = nearest(x, x, k + 1, backend, options);
    NeighbourTable t;
    t.d.resize(data.rows(), k);
    for (Index i = 0; i < data.rows(); ++i)
        for (int j = 0; j < k; ++j) t.d(i, j) = std::sqrt(std::max(0.0, d2(i, j + 1)));
    return t;
}

std::vector<double> knn_scaled(const MatrixF& data, int k, const std::vector<double>& inv, const std::string& backend,
                               const BackendOptions& options)
{
    const NeighbourTable t = neighbours_exact(data, k, inv, backend, options);
    std::vector<double> out(static_cast<std::size_t>(data.rows()));
    for (Index i = 0; i < data.rows(); ++i) out[std::size_t(i)] = t.d(i, k - 1);
    return out;
}

// d_k estimated on a uniform sample of m = ceil(n · r / k) rows (AdaptiveBandwidthOptions::sample_k
// = r): the r nearest sampled rows other than the row itself. A radius that holds k of the n rows
// holds k · m / n = r of the sampled ones (in expectation), so the r-th stands for d_k.
NeighbourTable neighbours_sampled(const MatrixF& data, int k, int r, const std::vector<double>& inv,
                                  const std::string& backend, const BackendOptions& options)
{
    const Index n = data.rows();
    const Index m = std::min<Index>(n, std::max<Index>(r + 1, (n * r + k - 1) / k));
    std::vector<Index> rows(static_cast<std::size_t>(n));
    std::iota(rows.begin(), rows.end(), Index(0));
    std::mt19937_64 rng(0x5eed);
    for (Index i = 0; i < m; ++i) {  // partial Fisher-Yates: rows[0, m) is the sample
        std::uniform_int_distribution<Index> pick(i, n - 1);
        std::swap(rows[std::size_t(i)], rows[std::size_t(pick(rng))]);
    }
    rows.resize(static_cast<std::size_t>(m));
    std::sort(rows.begin(), rows.end());
    MatrixF storage;
    const MatrixF& x = in_search_units(data, inv, storage);
    MatrixF sample(m, data.cols());
    for (Index i = 0; i < m; ++i) sample.row(i) = x.row(rows[std::size_t(i)]);
    std::vector<char> sampled(static_cast<std::size_t>(n), 0);
    for (Index i : rows) sampled[std::size_t(i)] = 1;
    // A sampled row finds itself first (distance 0): it needs r + 1 results, the others r.
    const MatrixD d2 = nearest(sample, x, r + 1, backend, options);
    NeighbourTable t;
    t.d.resize(n, r);
    t.weight = double(n) / double(m);
    t.sampled = true;
    for (Index i = 0; i < n; ++i) {
        const int first = sampled[std::size_t(i)] ? 1 : 0;
        for (int j = 0; j < r; ++j) t.d(i, j) = std::sqrt(std::max(0.0, d2(i, j + first)));
    }
    return t;
}

// Levina & Bickel's maximum-likelihood intrinsic dimension from each row's neighbour distances,
// averaged as MacKay & Ghahramani's correction does (the mean of the per-row inverses, then
// inverted). Duplicates (distance 0) carry no scale information and are skipped. In [1, dims];
// dims where no row has two distinct positive distances.
double intrinsic_dimension_mle(const MatrixD& d, Index dims)
{
    const Index n = d.rows(), r = d.cols();
    std::vector<double> inv(static_cast<std::size_t>(n), -1.0);  // -1: the row carries no scale
    MS_PARALLEL_FOR(n * r)
    for (Index i = 0; i < n; ++i) {
        const double far = d(i, r - 1);
        if (!(far > 0)) continue;
        double s = 0;
        int count = 0;
        for (Index j = 0; j + 1 < r; ++j)
            if (d(i, j) > 0) {
                s += std::log(far / d(i, j));
                ++count;
            }
        if (count > 0) inv[std::size_t(i)] = s / count;
    }
    double sum = 0;
    Index rows = 0;
    for (double v : inv)
        if (v >= 0) {
            sum += v;
            ++rows;
        }
    if (rows == 0 || !(sum > 0)) return double(dims);
    return std::clamp(double(rows) / sum, 1.0, double(dims));
}

// The width s at which a row's neighbours together weigh as much as the row itself in a Gaussian
// kernel: w · Σ_j exp(−d_j² / 2s²) = 1. Narrower kernels leave the row a mode of its own (in high
// dimensions, where neighbour distances concentrate, every row). 0 when no such width exists
// (w · #duplicates ≥ 1, or w · r ≤ 1). Newton's method on g(u) = ln(w Σ_j exp(−d_j² u)), u = 1/2s²:
// g is convex and decreasing, so the iterates approach the root from below, monotonically.
double self_weight_width(const double* d, Index r, double w)
{
    Index zeros = 0;
    for (Index j = 0; j < r; ++j) zeros += d[j] > 0 ? 0 : 1;
    if (w * double(zeros) >= 1.0 || w * double(r) <= 1.0) return 0.0;
    double lo = 0;  // d² of the nearest positive neighbour: the exponentials are taken relative to it
    for (Index j = 0; j < r; ++j)
        if (d[j] > 0) {
            lo = d[j] * d[j];
            break;
        }
    double u = 0;
    for (int it = 0; it < 200; ++it) {
        double e = 0, e2 = 0;
        for (Index j = 0; j < r; ++j) {
            const double x = std::exp(-(d[j] * d[j] - lo) * u);  // duplicates (d = 0): exp(lo u)
            e += x;
            e2 += x * d[j] * d[j];
        }
        const double g = std::log(w * e) - lo * u;  // ln(w Σ exp(−d² u))
        const double slope = e2 / e;  // −g'(u): the weighted mean of d²
        const double next = u + g / slope;
        if (!(next > u) || next - u <= 1e-13 * next) {
            u = std::max(u, next);
            break;
        }
        u = next;
    }
    return u > 0 ? std::sqrt(0.5 / u) : 0.0;
}

std::vector<double> inverse_scale(const std::vector<double>& scale, Index k)
{
    std::vector<double> inv;
    if (scale.empty()) return inv;
    if (Index(scale.size()) != k)
        throw InvalidArgument("knn_distances: scale has " + std::to_string(scale.size()) +
                              " values but the data have " + std::to_string(k) + " dimensions");
    for (std::size_t d = 0; d < scale.size(); ++d) {
        require_value(std::isfinite(scale[d]) && scale[d] > 0,
                      "knn_distances: scale[" + std::to_string(d) + "] must be finite and > 0", scale[d]);
        inv.push_back(1.0 / scale[d]);
    }
    return inv;
}

}  // namespace

std::vector<double> rule_bandwidths(const MatrixF& data, BandwidthRule rule)
{
    require_two(data, rule);
    std::vector<double> h = spreads(data);
    const double f = rule_factor(data.rows(), int(data.cols()), rule);
    for (std::size_t d = 0; d < h.size(); ++d) {
        if (!(h[d] > 0))
            throw InvalidArgument(std::string(rule_name(rule)) + ": dimension " + std::to_string(d) +
                                  " is constant (standard deviation 0): no per-dimension bandwidth; use the "
                                  "isotropic rule or drop the column");
        h[d] *= f;
    }
    return h;
}

double rule_bandwidth(const MatrixF& data, BandwidthRule rule)
{
    require_two(data, rule);
    const std::vector<double> s = spreads(data);
    double v = 0;
    for (double x : s) v += x * x;
    const double rms = std::sqrt(v / double(s.size()));
    if (!(rms > 0))
        throw InvalidArgument(std::string(rule_name(rule)) + ": every point is the same (standard deviation 0)");
    return rule_factor(data.rows(), int(data.cols()), rule) * rms;
}

double estimate_bandwidth(const MatrixF& data, double quantile, Index max_samples, std::uint64_t seed)
{
    require_value(quantile > 0 && quantile <= 1, "estimate_bandwidth: quantile must be in (0, 1]", quantile);
    if (max_samples < 1)
        throw InvalidArgument("estimate_bandwidth: max_samples must be >= 1, got " + std::to_string(max_samples));
    require_data(data, "estimate_bandwidth");
    const Index n = data.rows();
    std::vector<Index> rows(static_cast<std::size_t>(n));
    std::iota(rows.begin(), rows.end(), Index(0));
    if (n > max_samples) {  // partial Fisher-Yates: a uniform sample without replacement
        std::mt19937_64 rng(seed);
        for (Index i = 0; i < max_samples; ++i) {
            std::uniform_int_distribution<Index> pick(i, n - 1);
            std::swap(rows[std::size_t(i)], rows[std::size_t(pick(rng))]);
        }
        rows.resize(std::size_t(max_samples));
    }
    const Index ns = Index(rows.size());
    // scikit-learn: n_neighbors = int(n * quantile), at least 1, the query point included.
    const Index m = std::max<Index>(1, Index(double(ns) * quantile));
    const std::vector<double> d = brute_rank_distances(data, rows, std::size_t(m - 1));
    double sum = 0;
    for (double x : d) sum += x;
    return sum / double(ns);
}

std::vector<double> knn_distances(const MatrixF& data, int k, const std::vector<double>& scale,
                                  const std::string& backend, const BackendOptions& backend_options)
{
    require_data(data, "knn_distances");
    if (k < 1 || Index(k) >= data.rows())
        throw InvalidArgument("knn_distances: k must be in [1, n-1] = [1, " + std::to_string(data.rows() - 1) +
                              "], got " + std::to_string(k) + " (the k-th nearest other point must exist)");
    return knn_scaled(data, k, inverse_scale(scale, data.cols()), backend, backend_options);
}

int default_adaptive_k(Index n)
{
    const Index k = std::lround(std::sqrt(double(std::max<Index>(n, 0))));
    return int(std::min<Index>(std::max<Index>(k, 5), std::max<Index>(n - 1, 1)));
}

AdaptiveBandwidths adaptive_bandwidths_detailed(const MatrixF& data, const AdaptiveBandwidthOptions& o)
{
    require_data(data, "adaptive_bandwidths");
    const Index n = data.rows();
    const Index dims = data.cols();
    if (n < 2) throw InvalidArgument("adaptive_bandwidths: needs n >= 2 points (a nearest neighbour)");
    const int k = o.k == 0 ? default_adaptive_k(n) : o.k;
    if (k < 1 || Index(k) >= n)
        throw InvalidArgument("adaptive_bandwidths: k must be in [1, n-1] = [1, " + std::to_string(n - 1) + "], got " +
                              std::to_string(k));
    require_value(std::isfinite(o.c) && o.c > 0, "adaptive_bandwidths: c must be finite and > 0", o.c);
    require_value(o.floor_fraction >= 0 && o.floor_fraction <= 1,
                  "adaptive_bandwidths: floor_fraction must be in [0, 1]", o.floor_fraction);
    require_value(o.intrinsic_dimension == 0 || (std::isfinite(o.intrinsic_dimension) && o.intrinsic_dimension >= 1),
                  "adaptive_bandwidths: intrinsic_dimension must be 0 (estimate) or >= 1", o.intrinsic_dimension);
    std::vector<double> scale;
    if (o.per_dimension) {
        scale = spreads(data);
        for (std::size_t d = 0; d < scale.size(); ++d)
            if (!(scale[d] > 0))
                throw InvalidArgument("adaptive_bandwidths: per_dimension: dimension " + std::to_string(d) +
                                      " is constant (standard deviation 0)");
    }
    if (o.sample_k < 0)
        throw InvalidArgument("adaptive_bandwidths: sample_k must be >= 0, got " + std::to_string(o.sample_k));
    const std::vector<double> inv = inverse_scale(scale, dims);
    const NeighbourTable t = o.sample_k > 0 && k > o.sample_k
                                 ? neighbours_sampled(data, k, o.sample_k, inv, o.backend, o.backend_options)
                                 : neighbours_exact(data, k, inv, o.backend, o.backend_options);
    const Index r = t.d.cols();

    std::vector<double> pos;
    for (Index i = 0; i < n; ++i)
        if (t.d(i, r - 1) > 0) pos.push_back(t.d(i, r - 1));
    if (pos.empty())
        throw InvalidArgument("adaptive_bandwidths: every point has k = " + std::to_string(k) +
                              " or more duplicates (every k-th neighbour distance is 0); use a larger k or a fixed "
                              "bandwidth");
    std::nth_element(pos.begin(), pos.begin() + std::ptrdiff_t(pos.size() / 2), pos.end());
    const double floor = o.floor_fraction * pos[pos.size() / 2];

    AdaptiveBandwidths out;
    out.k = k;
    out.sampled = t.sampled;
    out.intrinsic_dimension = o.intrinsic_dimension > 0 ? o.intrinsic_dimension : intrinsic_dimension_mle(t.d, dims);
    const double density_factor =
        kAdaptiveDensityFactor * std::pow(out.intrinsic_dimension, -kAdaptiveDimensionExponent);
    out.sigma.resize(n, dims);
    for (Index i = 0; i < n; ++i)
        if (!(std::max(t.d(i, r - 1), floor) > 0))
            throw InvalidArgument("adaptive_bandwidths: point " + std::to_string(i) + " has " + std::to_string(k) +
                                  " or more duplicates (k-th neighbour distance 0) and floor_fraction is 0");
    // s_i ≤ d_k / sqrt(2 ln(w r)) (every term of its sum is ≥ w exp(−d_k²/2s²)): where b times that
    // bound is below the density term, the floor cannot decide and s_i is not solved for (in 2-D
    // data, every point).
    const double wr = t.weight * double(r);
    const double bound = wr > 1 ? 1.0 / std::sqrt(2.0 * std::log(wr)) : 0.0;
    std::vector<unsigned char> widened(static_cast<std::size_t>(n), 0);
    MS_PARALLEL_FOR(n * r)
    for (Index i = 0; i < n; ++i) {
        const double d = std::max(t.d(i, r - 1), floor);
        const double by_density = density_factor * d;
        const bool may_decide = kAdaptiveSelfWeightFactor * bound * t.d(i, r - 1) > by_density;
        const double by_self_weight =
            may_decide ? kAdaptiveSelfWeightFactor * self_weight_width(&t.d(i, 0), r, t.weight) : 0.0;
        widened[std::size_t(i)] = by_self_weight > by_density ? 1 : 0;
        const double sigma = o.c * std::max(by_density, by_self_weight);
        for (Index c = 0; c < dims; ++c) out.sigma(i, c) = sigma * (scale.empty() ? 1.0 : scale[std::size_t(c)]);
    }
    const Index share = std::accumulate(widened.begin(), widened.end(), Index(0));
    out.self_weight_share = double(share) / double(n);
    return out;
}

MatrixD adaptive_bandwidths(const MatrixF& data, const AdaptiveBandwidthOptions& o)
{
    return adaptive_bandwidths_detailed(data, o).sigma;
}

std::vector<double> pilot_density(const MatrixF& data, double sigma)
{
    require_data(data, "pilot_density");
    require_value(sigma > 0 && std::isfinite(sigma), "pilot_density: the pilot bandwidth must be finite and > 0",
                  sigma);
    const Index n = data.rows();
    const std::size_t k = std::size_t(data.cols());
    std::vector<double> x(std::size_t(n) * k);  // row-major doubles
    for (Index i = 0; i < n; ++i)
        for (std::size_t d = 0; d < k; ++d) x[std::size_t(i) * k + d] = data(i, Index(d));
    const double a = -0.5 / (sigma * sigma);
    std::vector<double> f(std::size_t(n), 0.0);
    // Symmetric sums: each pair once.
    for (std::size_t i = 0; i < std::size_t(n); ++i) {
        const double* p = &x[i * k];
        f[i] += 1.0;  // j = i
        for (std::size_t j = i + 1; j < std::size_t(n); ++j) {
            const double* q = &x[j * k];
            double d2 = 0;
            for (std::size_t d = 0; d < k; ++d) {
                const double t = p[d] - q[d];
                d2 += t * t;
            }
            const double w = std::exp(a * d2);
            f[i] += w;
            f[j] += w;
        }
    }
    for (double& v : f) v /= double(n);
    return f;
}

MatrixD abramson_bandwidths(const MatrixF& data, const AbramsonOptions& o)
{
    require_data(data, "abramson_bandwidths");
    const Index n = data.rows();
    const Index dims = data.cols();
    if (n < 2) throw InvalidArgument("abramson_bandwidths: needs n >= 2 points (a density from one point is flat)");
    require_value(o.pilot >= 0 && std::isfinite(o.pilot),
                  "abramson_bandwidths: pilot must be finite and >= 0 (0 = Silverman's rule)", o.pilot);
    require_value(o.c > 0 && std::isfinite(o.c), "abramson_bandwidths: c must be finite and > 0", o.c);
    require_value(o.alpha >= 0 && o.alpha <= 1, "abramson_bandwidths: alpha must be in [0, 1]", o.alpha);
    std::vector<double> scale;
    MatrixF standardised;
    const MatrixF* pilot_data = &data;
    if (o.per_dimension) {
        scale = spreads(data);
        for (std::size_t d = 0; d < scale.size(); ++d)
            if (!(scale[d] > 0))
                throw InvalidArgument("abramson_bandwidths: per_dimension: dimension " + std::to_string(d) +
                                      " is constant (standard deviation 0)");
        standardised = data;
        for (Index d = 0; d < dims; ++d) standardised.col(d) /= float(scale[std::size_t(d)]);
        pilot_data = &standardised;
    }
    double sigma = o.pilot;
    if (sigma == 0) {
        const std::vector<double> s = spreads(*pilot_data);
        double v = 0;
        for (double x : s) v += x * x;
        const double rms = std::sqrt(v / double(s.size()));
        if (!(rms > 0))
            throw InvalidArgument("abramson_bandwidths: every point is the same (standard deviation 0): no pilot "
                                  "bandwidth from Silverman's rule; give one");
        sigma = rule_factor(n, int(dims), BandwidthRule::Silverman) * rms;
    }
    const std::vector<double> f = pilot_density(*pilot_data, sigma);
    double mean_log = 0;
    for (double v : f) mean_log += std::log(v);
    mean_log /= double(n);
    const double h0 = o.c * sigma;
    MatrixD h(n, dims);
    for (Index i = 0; i < n; ++i) {
        // (f/g)^(-alpha) = exp(-alpha (log f - log g)); f >= 1/n, so the log is finite.
        const double lambda = std::exp(-o.alpha * (std::log(f[std::size_t(i)]) - mean_log));
        for (Index d = 0; d < dims; ++d) h(i, d) = h0 * lambda * (scale.empty() ? 1.0 : scale[std::size_t(d)]);
    }
    return h;
}

}  // namespace meanshift
