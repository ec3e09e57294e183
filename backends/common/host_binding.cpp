// HostBinding: mode storage, Alg. 5 shifts and active-set compaction of the host backends.
#include "backends/common/host_binding.hpp"
#include "backends/common/partial_sums.hpp"
#include "skeleton/src/core/array_scan.hpp"
#include "skeleton/src/core/prepare.hpp"

#include <meanshift/errors.hpp>

#include <chrono>
#include <cstdint>
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace meanshift::detail {

HostBinding::HostBinding(std::shared_ptr<const PreparedData> data, const Topology& topology)
    : data_(std::move(data)), topology_(topology)
{
    if (!data_) throw InvalidArgument("bind: no data (null PreparedData)");
    if (data_->sphere_radius > 0 && data_->sphere_origin.size() != data_->k())
        throw InvalidArgument("bind: the vmf profile's sphere_origin must have k entries");
    search_ = data_->search();  // data_ is const and shared: its grid or tree stays where it is
}

void HostBinding::set_modes(const double* positions, Index m, const double* metric)
{
    const int k = data_->k();
    if (m < 1) throw InvalidArgument("set_modes: need at least one mode (m = " + std::to_string(m) + ")");
    if (!positions) throw InvalidArgument("set_modes: null positions");
    const std::size_t values = static_cast<std::size_t>(m) * static_cast<std::size_t>(k);
    if (!all_finite(positions, values)) throw InvalidArgument("set_modes: positions must be finite");
    modes_ = Eigen::Map<const MatrixD>(positions, m, k);
    if (metric) {
        metric_ = Eigen::Map<const MatrixD>(metric, m, k);
        if (!all_finite(metric, values) || (metric_.array() < 0).any())
            throw InvalidArgument("set_modes: metric weights must be finite and >= 0");
    } else {
        metric_.resize(0, 0);
    }
    // Blocks of consecutive active modes share their ranges (block_ranges), which are fewest
    // when a block's modes are close: the search's own order (grid: the Morton curve of the
    // cells, a block of 32 modes of a full image is an 8 x 4 tile; kd-tree: the leaves' order;
    // brute force: as given). Retiring modes keeps that order; moving modes shuffle it a little:
    // re-sorting every step saved 5 % of the pairs on china.jpg and cost more than that.
    active_ = search_->order(modes_.data(), m);
}

Index HostBinding::mode_sums(const double* y, std::vector<Index>& ranges, double* s0, double* s1) const
{
    const PreparedData& D = *data_;
    const int k = D.k();
    std::fill(s0, s0 + k, 0.0);
    std::fill(s1, s1 + k, 0.0);
    ranges.clear();
    const Index rows = block_ranges(y, 1, ranges);
    // vMF's weights are the Gaussian's (kernel_profile.hpp); the other profiles go through the
    // float64 reference weight profile_weight().
    const bool gaussian = D.profile == KernelProfile::Gaussian || D.profile == KernelProfile::VonMisesFisher;
    for (std::size_t rg = 0; rg < ranges.size(); rg += 2)
        for (Index i = ranges[rg]; i < ranges[rg + 1]; ++i) {
            const double* x = D.points.data() + i * k;
            if (D.model == KernelModel::Shared) {
                double d2 = 0;
                for (int d = 0; d < k; ++d) d2 += (y[d] - x[d]) * (y[d] - x[d]);
                if (d2 > D.cutoff2) continue;
                const double e = gaussian ? std::exp(-0.5 * d2) : profile_weight(D.profile, d2);
                for (int d = 0; d < k; ++d) {
                    s0[d] += e;
                    s1[d] += e * x[d];
                }
            } else {
                const double* w = D.precision.data() + i * k;
                double d2 = 0;
                for (int d = 0; d < k; ++d) d2 += w[d] * (y[d] - x[d]) * (y[d] - x[d]);
                if (d2 > D.cutoff2) continue;
                // Compact profiles: the point's prior weight e^{c_i} times g(D_i²) (eq. 4-6).
                const double e = gaussian ? std::exp(D.log_weight[i] - 0.5 * d2)
                                          : std::exp(D.log_weight[i]) * profile_weight(D.profile, d2);
                for (int d = 0; d < k; ++d) {
                    s0[d] += e * w[d];
                    s1[d] += e * w[d] * x[d];
                }
            }
        }
    return rows;
}

double HostBinding::accumulate(const double* positions, Index count, double* sums)
{
    check_accumulate(*data_, positions, count, sums);
    const int k = data_->k();
    const bool pp = data_->model == KernelModel::PerPoint;
    const Index width = sum_width();
    [[maybe_unused]] const int threads = std::max(1, topology_.ppus);
    double pairs = 0;
#if defined(_OPENMP)
#pragma omp parallel num_threads(threads) reduction(+ : pairs)
#endif
    {
        std::vector<double> s0(static_cast<std::size_t>(k)), s1(static_cast<std::size_t>(k));
        std::vector<Index> ranges;
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 16)
#endif
        for (Index q = 0; q < count; ++q) {
            pairs += static_cast<double>(mode_sums(positions + q * k, ranges, s0.data(), s1.data()));
            double* out = sums + q * width;
            if (pp)
                for (int d = 0; d < k; ++d) out[d] += s0[std::size_t(d)];
            else
                out[0] += s0[0];
            double* o1 = out + (pp ? k : 1);
            for (int d = 0; d < k; ++d) o1[d] += s1[std::size_t(d)];
        }
    }
    return pairs;
}

void HostBinding::step(double tol2, bool retire, StepReport& report)
{
    report.clear();
    if (modes_.rows() == 0) throw Error("step() before set_modes()");
    const Index a = active_count();
    if (a == 0) return;
    const int k = data_->k();
    // The active set only shrinks: keep the buffers of the first step (a resize to a smaller a
    // would reallocate them and fault in fresh pages every step).
    if (in_.rows() < a || in_.cols() != k) {
        in_.resize(a, k);
        out_.resize(a, k);
    }
    supported_.assign(static_cast<std::size_t>(a), 1);
    const std::size_t ku = static_cast<std::size_t>(k);
    double* Y = modes_.data();
    double* in = in_.data();
    for (Index j = 0; j < a; ++j)
        std::copy_n(Y + static_cast<std::size_t>(active_[static_cast<std::size_t>(j)]) * ku, ku, in + j * k);
    const auto t0 = std::chrono::steady_clock::now();
    pairs_ = -1;
    advance(in, out_.data(), supported_.data(), a);
    report.kernel_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report.pairs = pairs_ >= 0 ? pairs_ : static_cast<double>(a) * static_cast<double>(data_->n());
    if (!all_finite(out_.data(), static_cast<std::size_t>(a) * static_cast<std::size_t>(k)))
        throw Error("backend produced non-finite mode positions (a backend defect)");
    if (data_->sphere_radius > 0)  // vMF: every mode back onto the unit sphere, once for all host forms
        for (Index j = 0; j < a; ++j)
            if (supported_[static_cast<std::size_t>(j)])
                project_to_sphere(data_->sphere_origin.data(), data_->sphere_radius, out_.data() + j * k, k);

    report.mode.resize(static_cast<std::size_t>(a));
    report.shift2.resize(static_cast<std::size_t>(a));
    report.status.resize(static_cast<std::size_t>(a));
    const double* out = out_.data();
    const double* W = metric_.size() ? metric_.data() : nullptr;
    std::size_t kept = 0;
    for (Index j = 0; j < a; ++j) {
        const std::size_t sj = static_cast<std::size_t>(j);
        const Index q = active_[sj];
        const double* o = out + j * k;
        const double* y = in + j * k;
        const double* w = W ? W + static_cast<std::size_t>(q) * ku : nullptr;
        double d2 = 0;
        for (int d = 0; d < k; ++d) {
            const double t = o[d] - y[d];
            d2 += (w ? w[d] : 1.0) * t * t;
        }
        std::copy_n(o, ku, Y + static_cast<std::size_t>(q) * ku);
        const ModeStatus st = !supported_[sj] ? ModeStatus::NoSupport
                              : d2 <= tol2    ? ModeStatus::Converged
                                              : ModeStatus::Active;
        report.mode[sj] = q;
        report.shift2[sj] = d2;
        report.status[sj] = st;
        if (!retire || st == ModeStatus::Active) active_[kept++] = q;
    }
    active_.resize(kept);
}

void HostBinding::read_modes(double* out) const
{
    if (modes_.rows() == 0) throw Error("read_modes() before set_modes()");
    Eigen::Map<MatrixD>(out, modes_.rows(), modes_.cols()) = modes_;
}

}  // namespace meanshift::detail
