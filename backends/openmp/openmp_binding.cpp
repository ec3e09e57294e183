// openmp backend: the binding's construction (the form each step takes: SIMD kernels, GEMM form,
// float64 or wide loop), Binding::advance and accumulate, the kernels' float32 layout and the loops
// for data the SIMD kernels do not take (docs/backend-openmp.md).
#include "backends/openmp/openmp_binding.hpp"

#include "backends/common/partial_sums.hpp"
#include "backends/openmp/cpu_features.hpp"

#include <meanshift/errors.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace meanshift::openmp_detail {

OpenMPBinding::OpenMPBinding(std::shared_ptr<const PreparedData> data, const Topology& t, PairForm form, bool amx,
                             std::optional<bool> auto_gemm)
    : HostBinding(std::move(data), t)
{
    const PreparedData& D = *data_;
    const Index n = D.n();
    const int k = D.k();
    const bool per_point = D.model == KernelModel::PerPoint;
    if (per_point && (D.precision.rows() != n || D.precision.cols() != k || D.log_weight.size() != n))
        throw InvalidArgument("openmp backend: per-point model needs precision (n x k) and log_weight (n)");
    table_ = openmp_detail::kernel_for_width(t.pus_per_ppu);
    kd_.per_point = per_point;
    kd_.n = n;
    kd_.k = k;
    kd_.f_vppu = t.f_vppu;
    kd_.f_load = t.f_load;
    // The truncated kernel's threshold on −Σ (kernel-unit distance)² = −½·log2(e)·D².
    kd_.cut = std::isfinite(D.cutoff2) ? static_cast<float>(-0.5 * kLog2e * D.cutoff2)
                                       : -std::numeric_limits<float>::infinity();
    // The kernels' profile (simd_kernel.hpp): vMF weighs as the Gaussian; a compact profile's
    // support q <= 1 is the mask a >= c2 + cut, so cut is at least −½·log2(e).
    compact_ = is_compact(D.profile);
    kd_.profile = compact_ ? static_cast<int>(D.profile) : 0;
    if (compact_) kd_.cut = std::max(kd_.cut, static_cast<float>(-0.5 * kLog2e));
    // Very wide data (k > kMaxSimdK) take the plain per-mode loop: the SIMD kernels keep k
    // sums per lane, which would need gigabytes of scratch for k = 10^6.
    // The GEMM form: asked for, or Auto at k ≥ the measured crossover with the default one-mode-per-
    // lane topology (an explicit f_vppu > 1 asks for the direct kernels' lane sharing); Auto then
    // also keeps the direct layout for steps with too few active modes to fill a block per thread.
    // Per-point weights spanning beyond float32's range (detail::needs_log2_shift): the SIMD kernels
    // weigh every point relative to one global maximum, so whole clusters would underflow. Auto then
    // takes the GEMM form for every step (its per-mode shift of the exponent is exact at any k); the
    // direct kernels asked for (pair_form = direct, or f_vppu > 1) give way to the float64 loop.
    wide_weights_ = detail::needs_log2_shift(D);
    const openmp_detail::GemmTable* unit =
        t.pus_per_ppu == 16  ? (amx ? openmp_detail::gemm_table_amx() : openmp_detail::gemm_table_avx512())
        : t.pus_per_ppu == 8 ? openmp_detail::gemm_table_avx2()
                             : openmp_detail::gemm_table_generic();
    // Coordinates beyond kFloat32MaxExtent (an outlier 1e8 bandwidths away, a bandwidth of 1e-20
    // on data of extent 10) lose the digits that tell nearby points apart in float32, and near
    // 1e19 the GEMM form's squares overflow (NaN): the float64 sums instead, for every step.
    // (Per point: in units of the narrowest bandwidth, √max w.)
    const double extent =
        n > 0 ? D.points.cwiseAbs().maxCoeff() * (per_point ? std::sqrt(D.precision.maxCoeff()) : 1.0) : 0.0;
    float64_ = !(extent <= kFloat32MaxExtent);
    // The GEMM forms expand the Gaussian's exponent: compact profiles always take the direct form.
    const bool gemm =
        !compact_ && !float64_ && k <= kMaxSimdK &&
        (form == PairForm::Gemm ||
         (form == PairForm::Auto && (auto_gemm.value_or(k >= unit->min_k) || wide_weights_) && t.f_vppu == 1));
    if (gemm) {
        gemm_always_ = form == PairForm::Gemm || wide_weights_;
        gemm_ = unit;
        gd_.per_point = per_point;
        gd_.n = n;
        gd_.k = k;
        gd_.x = D.points_f.data();
        gd_.w = per_point ? D.precision_f.data() : nullptr;
        gd_.c = per_point ? D.log_weight_f.data() : nullptr;
        gd_.cutoff2 = D.cutoff2;
        gd_.modes_per_block = gemm_->modes_per_block;
        gd_.rows_per_tile = kGemmRowsPerTile;
        // The units' rounding bounds of u = −½D² per unit of ½|x'|²_w + max w·½|q'|²
        // (gemm_step_impl.hpp: 2k + 8 float32 roundings, doubled; gemm_amx_step.hpp: six bf16
        // limb terms over the padded columns), and the largest w of any point.
        const int acols = per_point ? 2 * k : k;
        gemm_err_ =
            (amx && unit == openmp_detail::gemm_table_amx() ? 6.0 * ((acols + 31) / 32 * 32) + 16 : 2.0 * k + 8) *
            0x1p-23;
        gemm_wmax_ = per_point && n > 0 ? static_cast<double>(D.precision_f.maxCoeff()) : 1.0;
    }
    if (k <= kMaxSimdK && !gemm_always_ && !wide_weights_ && !float64_) {
        build_layout(D);
        direct_ready_ = true;
    }
    if (const CellGrid* G = search().cell_grid()) {
        fine_cells_ = true;
        for (int j = 0; j < G->g(); ++j)
            fine_cells_ = fine_cells_ && G->side[std::size_t(j)] < G->radius[std::size_t(j)];
    }
}

void OpenMPBinding::advance(const double* in, double* out, unsigned char* supported, Index count)
{
    if (float64_) {
        advance_float64(in, out, supported, count);
        return;
    }
    // Auto: the GEMM form only when every thread gets a full block of modes (measured, 2 threads,
    // n = 2048, k = 64: GEMM/direct = 0.28, 0.43, 0.98, 1.17 at 16, 64, 256, 1024 active modes).
    if (gemm_ && (gemm_always_ || count >= static_cast<Index>(gd_.modes_per_block) * topology_.ppus)) {
        advance_gemm(in, out, supported, count);
        return;
    }
    if (kd_.k > kMaxSimdK || wide_weights_) {
        advance_wide(in, out, supported, count);
        return;
    }
    advance_simd(in, out, supported, count);
}

double OpenMPBinding::accumulate(const double* positions, Index count, double* sums)
{
    if (float64_ || gemm_always_ || kd_.k > kMaxSimdK || kd_.per_point)
        return HostBinding::accumulate(positions, count, sums);
    detail::check_accumulate(*data_, positions, count, sums);
    if (count == 0) return 0;
    std::vector<double> out(static_cast<std::size_t>(count) * static_cast<std::size_t>(kd_.k));
    std::vector<unsigned char> supported(static_cast<std::size_t>(count));
    struct Reset {  // kd_ must not keep the caller's pointers
        KernelData& kd;
        ~Reset() { kd.sums = nullptr, kd.sums_out = nullptr; }
    } reset{kd_};
    kd_.sums = sums;
    kd_.sums_out = out.data();
    kd_.sums_width = sum_width();
    pairs_ = -1;
    advance_simd(positions, out.data(), supported.data(), count);
    return pairs_ >= 0 ? pairs_ : static_cast<double>(count) * static_cast<double>(data_->n());
}

void OpenMPBinding::advance_float64(const double* in, double* out, unsigned char* supported, Index count)
{
    const int k = data_->k();
    double pairs = 0;
#pragma omp parallel num_threads(topology_.ppus) reduction(+ : pairs)
    {
        std::vector<double> s0(static_cast<std::size_t>(k)), s1(static_cast<std::size_t>(k));
        std::vector<Index> ranges;
#pragma omp for schedule(dynamic, 16)
        for (Index q = 0; q < count; ++q) {
            const double* y = in + q * k;
            pairs += static_cast<double>(mode_sums(y, ranges, s0.data(), s1.data()));
            supported[q] = detail::finish_mode(s0.data(), 1, s1.data(), 1, 1.0, y, out + q * k, k) ? 1 : 0;
        }
    }
    pairs_ = pairs;
}

void OpenMPBinding::advance_wide(const double* in, double* out, unsigned char* supported, Index count)
{
    const PreparedData& D = *data_;
    const Index n = D.n();
    const int k = D.k();
    const bool per_point = D.model == KernelModel::PerPoint;
#pragma omp parallel num_threads(topology_.ppus)
    {
        std::vector<double> s0(static_cast<std::size_t>(k)), s1(static_cast<std::size_t>(k));
        std::vector<float> y(static_cast<std::size_t>(k));
#pragma omp for schedule(dynamic, 1)
        for (Index q = 0; q < count; ++q) {
            const double* yq = in + q * k;
            for (int d = 0; d < k; ++d) y[d] = static_cast<float>(yq[d]);
            std::fill(s0.begin(), s0.end(), 0.0);
            std::fill(s1.begin(), s1.end(), 0.0);
            for (Index i = 0; i < n; ++i) {
                const float* x = D.points_f.data() + i * k;
                const float* w = per_point ? D.precision_f.data() + i * k : nullptr;
                double d2 = 0.0;
                for (int d = 0; d < k; ++d) {
                    const double t = static_cast<double>(y[d]) - x[d];
                    d2 += (per_point ? w[d] : 1.0f) * t * t;
                }
                if (d2 > D.cutoff2) continue;
                const double c = per_point ? D.log_weight_f[i] : 0.0;
                const double e = compact_ ? std::exp(c) * profile_weight(D.profile, d2) : std::exp(c - 0.5 * d2);
                if (e == 0.0) continue;
                for (int d = 0; d < k; ++d) {
                    const double ew = per_point ? e * w[d] : e;
                    s0[d] += ew;
                    s1[d] += ew * x[d];
                }
            }
            supported[q] = detail::finish_mode(s0.data(), 1, s1.data(), 1, 1.0, yq, out + q * k, k) ? 1 : 0;
        }
    }
}

void OpenMPBinding::build_layout(const PreparedData& data)
{
    const Index n = data.n();
    const int k = data.k();
    const bool per_point = kd_.per_point;
    const double sigma = std::sqrt(0.5 * kLog2e);  // exp(-r²/2) = exp2(-(σr)²)
    const double x_scale = per_point ? 1.0 : sigma;
    kd_.y_scale = x_scale;

    // Per point: the distance is formed as Σ (√w_d y_d - √w_d x_d)², so x is stored as √w_d x_d.
    auto w_at = [&](Index i, int d) { return 0.5 * kLog2e * data.precision(i, d); };
    auto x_at = [&](Index i, int d) { return data.points(i, d) * x_scale; };
    auto dist_x_at = [&](Index i, int d) { return per_point ? std::sqrt(w_at(i, d)) * x_at(i, d) : x_at(i, d); };
    // c_i ≤ 0 by construction; the min() guarantees the kernel's exp2 precondition (exponent ≤ 0).
    auto c_at = [&](Index i) { return std::min(0.0, kLog2e * data.log_weight[i]); };

    if (kd_.f_vppu == 1) {  // row-major: one point's coordinates are broadcast together
        const std::size_t nk = static_cast<std::size_t>(n) * static_cast<std::size_t>(k);
        x_.resize(nk);
        if (per_point) {
            sw_.resize(nk);
            w_.resize(nk);
            wx_.resize(nk);
            c2_.resize(static_cast<std::size_t>(n));
        }
        for (Index i = 0; i < n; ++i) {
            for (int d = 0; d < k; ++d) {
                const std::size_t o = static_cast<std::size_t>(i * k + d);
                x_[o] = static_cast<float>(dist_x_at(i, d));
                if (per_point) {
                    sw_[o] = static_cast<float>(std::sqrt(w_at(i, d)));
                    w_[o] = static_cast<float>(w_at(i, d));
                    wx_[o] = static_cast<float>(w_at(i, d) * x_at(i, d));
                }
            }
            if (per_point) c2_[static_cast<std::size_t>(i)] = static_cast<float>(c_at(i));
        }
        if (per_point && compact_) {  // 2^c2 per point: the compact profiles' prior weight
            p2_.resize(static_cast<std::size_t>(n));
            for (Index i = 0; i < n; ++i) p2_[std::size_t(i)] = static_cast<float>(std::exp2(c_at(i)));
        }
        kd_.p2 = per_point && compact_ ? p2_.data() : nullptr;
        kd_.p2s = nullptr;
        kd_.x = x_.data();
        kd_.sw = per_point ? sw_.data() : nullptr;
        kd_.w = per_point ? w_.data() : nullptr;
        kd_.wx = per_point ? wx_.data() : nullptr;
        kd_.c2 = per_point ? c2_.data() : nullptr;
        kd_.stride = 0;
        kd_.xs = kd_.sws = kd_.ws = kd_.wxs = kd_.c2s = nullptr;
    } else {  // dimension-major, zero-padded: the lanes of a vPPU load consecutive points
        // Rows of a multiple of 16 floats starting on 64-byte boundaries: the f_vppu = τ loop's
        // vector loads then never straddle two cache lines.
        const Index stride = (n + 2 * table_->width + 15) / 16 * 16;
        const std::size_t sk = static_cast<std::size_t>(stride) * static_cast<std::size_t>(k);
        float* xs = zeroed_aligned(x_, sk);
        float* sws = per_point ? zeroed_aligned(sw_, sk) : nullptr;
        float* ws = per_point ? zeroed_aligned(w_, sk) : nullptr;
        float* wxs = per_point ? zeroed_aligned(wx_, sk) : nullptr;
        float* c2s = per_point ? zeroed_aligned(c2_, static_cast<std::size_t>(stride)) : nullptr;
        for (int d = 0; d < k; ++d)
            for (Index i = 0; i < n; ++i) {
                const std::size_t o = static_cast<std::size_t>(d * stride + i);
                xs[o] = static_cast<float>(dist_x_at(i, d));
                if (per_point) {
                    sws[o] = static_cast<float>(std::sqrt(w_at(i, d)));
                    ws[o] = static_cast<float>(w_at(i, d));
                    wxs[o] = static_cast<float>(w_at(i, d) * x_at(i, d));
                }
            }
        if (per_point)
            for (Index i = 0; i < n; ++i) c2s[i] = static_cast<float>(c_at(i));
        float* p2s = per_point && compact_ ? zeroed_aligned(p2_, static_cast<std::size_t>(stride)) : nullptr;
        if (p2s)
            for (Index i = 0; i < n; ++i) p2s[i] = static_cast<float>(std::exp2(c_at(i)));
        kd_.p2s = p2s;
        kd_.p2 = nullptr;
        kd_.stride = stride;
        kd_.xs = xs;
        kd_.sws = sws;
        kd_.ws = ws;
        kd_.wxs = wxs;
        kd_.c2s = c2s;
        kd_.x = kd_.sw = kd_.w = kd_.wx = kd_.c2 = nullptr;
    }
}

float* OpenMPBinding::zeroed_aligned(std::vector<float>& v, std::size_t count)
{
    v.assign(count + 16, 0.0f);
    const auto misalign = reinterpret_cast<std::uintptr_t>(v.data()) % 64;
    return v.data() + (misalign ? (64 - misalign) / sizeof(float) : 0);
}

}  // namespace meanshift::openmp_detail
