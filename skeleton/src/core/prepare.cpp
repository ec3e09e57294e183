#include "skeleton/src/core/prepare.hpp"
#include "skeleton/src/core/array_scan.hpp"
#include "skeleton/src/core/parallel.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#if defined(__unix__) || defined(__APPLE__)
#include <sys/resource.h>
#endif

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
        // One pass on the threads: every value finite and >= FLT_MIN (NaN fails the comparison).
        const float* x = D.precision_f.data();
        const Index count = D.precision_f.size();
        bool bad = false;
        MS_PARALLEL_FOR_OR(count, bad)
        for (Index i = 0; i < count; ++i)
            bad = bad || !(x[i] >= std::numeric_limits<float>::min() && x[i] <= std::numeric_limits<float>::max());
        if (bad)
            throw InvalidArgument("bandwidth range: per-point bandwidths span too many orders of magnitude; the "
                                  "precisions 1/H_i,dd relative to their geometric mean leave the float32 range");
    }
}

/// Calls fn(r0, len) for blocks of consecutive rows [r0, r0 + len) that cover [0, n), one block per
/// host thread when n × k is large enough to pay for the fork, else one block.
template <class Fn>
void for_row_blocks(Index n, Index k, Fn fn)
{
#if defined(_OPENMP)
    if (n * k >= kParallelMinValues && host_threads() > 1) {
#pragma omp parallel num_threads(host_threads())
        {
            const Index t = omp_get_thread_num(), T = omp_get_num_threads();
            const Index r0 = n * t / T, r1 = n * (t + 1) / T;
            if (r1 > r0) fn(r0, r1 - r0);
        }
        return;
    }
#endif
    if (n > 0) fn(0, n);
}

/// Calls fn(i, var) with H_i's diagonal var (k variances, Bandwidth::covariance_diagonal of the
/// row's coordinates in float64) for every point i, on the host threads. A refused H_i (the
/// exception cannot leave an OpenMP region) is found again by one thread in row order, so the
/// InvalidArgument thrown names the first refused point, as a serial loop would.
template <class Fn>
void per_point_variances(const Bandwidth& bw, const float* data, Index n, int k, Fn fn)
{
    const std::size_t ku = static_cast<std::size_t>(k);
    bool refused = false;
#if defined(_OPENMP)
#pragma omp parallel num_threads(host_threads()) if (n * k >= kParallelMinValues) reduction(|| : refused)
#endif
    {
        std::vector<double> row(ku), var(ku);
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
        for (Index i = 0; i < n; ++i) {
            if (refused) continue;
            for (std::size_t d = 0; d < ku; ++d) row[d] = data[static_cast<std::size_t>(i) * ku + d];
            try {
                bw.covariance_diagonal(i, row.data(), k, var.data());
            } catch (const InvalidArgument&) {
                refused = true;
                continue;
            }
            fn(i, var.data());
        }
    }
    if (!refused) return;
    std::vector<double> row(ku), var(ku);
    for (Index i = 0; i < n; ++i) {
        for (std::size_t d = 0; d < ku; ++d) row[d] = data[static_cast<std::size_t>(i) * ku + d];
        bw.covariance_diagonal(i, row.data(), k, var.data());  // throws for the first refused H_i
    }
}

std::string bytes_text(double b)
{
    std::ostringstream s;
    s.precision(3);
    if (b >= 1e9)
        s << b / 1e9 << " GB";
    else if (b >= 1e6)
        s << b / 1e6 << " MB";
    else if (b >= 1e3)
        s << b / 1e3 << " kB";
    else
        s << b << " bytes";
    return s.str();
}

}  // namespace

void check_memory(Index n, int k, const Options& options, Index m, bool weighted)
{
    if (options.max_memory == std::numeric_limits<std::size_t>::max()) return;
    const std::size_t limit = options.max_memory > 0 ? options.max_memory : available_memory();
    if (limit == 0) return;  // unknown: nothing to compare with
    const std::size_t need = estimate_memory(n, k, options, m, weighted);
    if (need <= limit) return;
    std::ostringstream s;
    s << "out of memory: clustering " << n << " points of " << k << " dimensions needs about "
      << bytes_text(static_cast<double>(need)) << " (estimate), over the "
      << (options.max_memory > 0 ? "max_memory budget of " : "available physical memory of ")
      << bytes_text(static_cast<double>(limit))
      << (options.max_memory > 0 ? "" : " (max_memory = 0: the machine's MemAvailable)");
    throw OutOfMemory(s.str(), need, limit);
}

void finalize_weights(PreparedData& D)
{
    if (D.model != KernelModel::PerPoint) return;
    // log|H_i|^{-1/2} = ½ Σ_d log(1/H_i,dd). Only ratios of weights matter: shift so the
    // largest c_i is 0 (nothing overflows in exp).
    // On the threads, in blocks of rows: each row's sum is Eigen's expression over that row alone,
    // so the values are those of the whole-matrix expression for any thread count.
    const Index n = D.precision.rows();
    D.log_weight.resize(n);
    for_row_blocks(n, D.precision.cols(), [&D](Index r0, Index len) {
        D.log_weight.segment(r0, len) = 0.5 * D.precision.middleRows(r0, len).array().log().rowwise().sum().matrix();
    });
    if (n) {
        const double top = max_value(D.log_weight.data(), n);
        D.log_weight.array() -= top;
    }
    to_float(D.precision, D.precision_f);
    to_float(D.log_weight, D.log_weight_f);
}

bool check_weights(const float* weights, Index n)
{
    if (!weights) return false;
    // One pass on the threads; a refused weight is looked up again in order, so the message names
    // the first one.
    bool bad = false, any = false;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(||                                                                 \
                                                    : bad, any)                                                        \
    num_threads(host_threads()) if (n >= kParallelMinValues)
#endif
    for (Index i = 0; i < n; ++i) {
        bad = bad || !(weights[i] >= 0 && weights[i] <= std::numeric_limits<float>::max());
        any = any || weights[i] > 0;
    }
    if (!bad) {
        if (!any) throw InvalidArgument("weights: all weights are 0 (at least one point must carry weight)");
        return true;
    }
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
        throw InvalidArgument("bandwidth: " + std::to_string(params.size()) +
                              " diagonal bandwidths given for k = " + std::to_string(k) + " dimensions");
    if (bw.kind() == BandwidthKind::ExponentialLast && static_cast<int>(params.size()) != k)
        throw InvalidArgument("bandwidth: " + std::to_string(params.size()) +
                              " Sec. IV sigmas given for k = " + std::to_string(k) + " dimensions");
    if (bw.kind() == BandwidthKind::PerPoint &&
        (bw.per_point_values().rows() != n || bw.per_point_values().cols() != k))
        throw InvalidArgument("bandwidth: per-point bandwidths are " + std::to_string(bw.per_point_values().rows()) +
                              " x " + std::to_string(bw.per_point_values().cols()) + ", data are " + std::to_string(n) +
                              " x " + std::to_string(k));

    Prepared p;
    const std::size_t ku = static_cast<std::size_t>(k);
    std::vector<float> lo, hi;
    if (!float_column_range(data, static_cast<std::size_t>(n), ku, lo, hi)) check_finite(data, n, k, "data");
    p.centre.resize(k);
    for (int d = 0; d < k; ++d) p.centre[d] = 0.5 * (double(lo[std::size_t(d)]) + double(hi[std::size_t(d)]));

    PreparedData& D = p.data;
    if (bw.shared()) {
        D.model = KernelModel::Shared;
        std::vector<double> row(ku), var(ku);
        for (std::size_t d = 0; d < ku; ++d) row[d] = data[d];
        bw.covariance_diagonal(0, row.data(), k, var.data());
        p.scale.resize(k);
        for (int d = 0; d < k; ++d) p.scale[d] = 1.0 / std::sqrt(var[std::size_t(d)]);
        if (weighted) {  // weights ride on the per-point model's log-weight (unit precisions)
            D.model = KernelModel::PerPoint;
            D.precision = MatrixD::Ones(n, k);
        }
    } else {
        D.model = KernelModel::PerPoint;
        // Whiten by the geometric-mean precision so prepared coordinates and precisions are O(1):
        // scale_d = sqrt(exp(mean_i log(1/H_i,dd))), then precisions 1/H_i,dd / scale_d².
        // The logs (most of the cost) are taken on the threads into the matrix that later holds
        // the precisions; each column's sum then runs in row order on one thread, so the scale is
        // the serial value for any thread count. The precisions are computed again from H_i
        // rather than kept in a second n × k matrix.
        MatrixD prec(n, k);
        double* P = prec.data();
        per_point_variances(bw, data, n, k, [P, ku](Index i, const double* var) {
            for (std::size_t d = 0, j = static_cast<std::size_t>(i) * ku; d < ku; ++d, ++j)
                P[j] = std::log(1.0 / var[d]);
        });
        std::vector<double> log_sum(P, P + ku);
        for (Index i = 1; i < n; ++i)
            for (std::size_t d = 0, j = static_cast<std::size_t>(i) * ku; d < ku; ++d, ++j) log_sum[d] += P[j];
        p.scale.resize(k);
        std::vector<double> scale2(ku);
        for (int d = 0; d < k; ++d) {
            p.scale[d] = std::sqrt(std::exp(log_sum[std::size_t(d)] / static_cast<double>(n)));
            scale2[std::size_t(d)] = p.scale[d] * p.scale[d];
        }
        const double* s2 = scale2.data();
        per_point_variances(bw, data, n, k, [P, ku, s2](Index i, const double* var) {
            for (std::size_t d = 0, j = static_cast<std::size_t>(i) * ku; d < ku; ++d, ++j)
                P[j] = (1.0 / var[d]) / s2[d];
        });
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
        double* lw = D.log_weight.data();
        MS_PARALLEL_FOR(n)
        for (Index i = 0; i < n; ++i)
            lw[i] += weights[i] > 0 ? std::max(-1e4, std::log(static_cast<double>(weights[i]))) : -1e4;
        const double top = max_value(lw, n);
        MS_PARALLEL_FOR(n)
        for (Index i = 0; i < n; ++i) lw[i] = std::max(lw[i] - top, -1e4);
        to_float(D.log_weight, D.log_weight_f);
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

std::size_t estimate_memory(Index n, int k, const Options& options, Index m, bool weighted)
{
    // In double: n·k can overflow 64 bits for absurd sizes (bench --n 1e11 × k).
    const double N = static_cast<double>(std::max<Index>(n, 0)), K = static_cast<double>(std::max(k, 0));
    const double M = m > 0 ? static_cast<double>(m) : N;  // bin seeding gives at most one seed per point
    const bool per_point = weighted || !options.bandwidth.shared();
    // Per point value (bytes): prepared points float64 + float32 (12), the search's re-sorted copy
    // (8) and index (kd-tree boxes ≈ 1), the backend's float32 layout and its scratch (8), and a
    // margin of 11 (exact, openmp, 20,000 × 200: peak 300 MB, 75 bytes per value with the seeds).
    double per_nk = 12 + 8 + 1 + 8 + 11;
    if (per_point) per_nk += 12 + 8 + 8;  // precisions float64 + float32, their re-sorted copy, backend copy
    // Bins (default options): int64 keys (8), bin means and the binned data (≤ 16), the caller's
    // prepared points kept beside the binned ones (8), the boundary refinement's copies (≤ 16), and
    // a margin: measured peaks of 121-126 bytes per value at 200,000 × 16 and 20,000 × 200 (openmp).
    if (!options.exact) per_nk += 56;
    // Per seed value: seeds (8), the driver's ordered copy and read-back (16), the backend's modes
    // float64 + float32 (12), the modes back in data units (4) and in the result (4).
    const double per_mk = 8 + 16 + 12 + 4 + 4;
    // Per point / per seed: the search's row order and cell of each row, labels, statuses, bins.
    const double bytes = per_nk * N * K + per_mk * M * K + 48 * N + 64 * M +
                         (options.exact ? 0.0 : 8.0 * (4 * N + 1048576.0));  // grid cell offsets
    const double cap = static_cast<double>(std::numeric_limits<std::size_t>::max());
    return bytes >= cap ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(bytes);
}

std::size_t available_memory()
{
#if defined(__linux__)
    std::ifstream in("/proc/meminfo");
    std::string key;
    unsigned long long value = 0;
    std::string unit;
    while (in >> key >> value) {
        std::getline(in, unit);
        if (key == "MemAvailable:") return static_cast<std::size_t>(value) * 1024;
    }
#endif
#if defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
#endif
    return 0;
}

std::size_t peak_memory_bytes() noexcept
{
#if defined(__unix__) || defined(__APPLE__)
    rusage u{};
    if (getrusage(RUSAGE_SELF, &u) != 0 || u.ru_maxrss < 0) return 0;
#if defined(__APPLE__)
    return static_cast<std::size_t>(u.ru_maxrss);  // bytes on macOS
#else
    return static_cast<std::size_t>(u.ru_maxrss) * 1024u;  // KiB on Linux
#endif
#else
    return 0;
#endif
}

void PreparedData::finalize()
{
    detail::to_float(points, points_f);
    detail::finalize_weights(*this);
}

}  // namespace meanshift
