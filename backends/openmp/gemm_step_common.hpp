#pragma once
// What the GEMM form's two block functions share (gemm_step.hpp): the block's modes relative to
// their centre, the log2 weights of one vector of products, the direct exponent near the cutoff
// and the final division. gemm_step_impl.hpp (Eigen's float32 products) and gemm_amx_step.hpp
// (Intel AMX products, software-pipelined) include it; each unit that includes either first
// defines `Eigen` to a unit-specific namespace name (gemm_step.hpp).
//
// For a block of m modes with centre c (their mean) and a tile of points, everything is relative
// to c (q' = q − c, x' = x − c), so the float32 expansion cancels only on the block's own spread,
// not on the distance to the data's centre. That spread is bounded by the caller: a mode whose
// rounding bound err·(3·max w·½|q'|² + 1) exceeds 1/32 (a far outlier in the block moves c away
// from every mode) takes the float64 direct form instead (openmp_dispatch.cpp, spread_modes):
//   Shared   : t_ji = q'_j·x'_i − ½|q'_j|² − ½|x'_i|²            (= −½|q_j − x_i|²)
//              S = Q' · X'ᵀ, R = E · X': R_j,d = Σ e x'_d; Σ e is summed in the weight loop
//   PerPoint : t_ji = Σ_d (q'_d · w_id x'_id − ½ q'²_d · w_id) − ½ Σ_d w_id x'²_id
//              S = [Q' | −½Q'²] · [W∘X' | W]ᵀ, R = E · [W∘X' | W]: R_j,d = Σ e w x', R_j,k+d = Σ e w
// t is clamped to ≤ 0 (it is −½D², which rounding may push above 0), pairs with −2t > cutoff2 get
// weight 0, and e = exp2(log2(e)·t + log2(e)·c_i − shift_j) by the SIMD kernels' exp2 (exactly 0 on
// underflow), with a per-mode shift so that float32 weights never all underflow where float64's
// would not (per-point log-weights may span far beyond 2^-126: |H_i|^-1/2 in 128 dimensions).
// Each tile's R (float32 sums over ≤ rows_per_tile terms) is added into float64 sums;
// y'_d = c_d + Σ e (w) x'_d / Σ e (w).

// GCC 12 warns of uninitialised lanes inside its own AVX-512 intrinsics as Eigen uses them (bogus, as
// noted in simd_vec.hpp); these units hold nothing else.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define EIGEN_DONT_PARALLELIZE  // one OpenMP thread per block already; Eigen must not start more
#include <Eigen/Core>

#include "gemm_step.hpp"
#include "simd_exp2.hpp"

#include <cmath>
#include <cstdint>

namespace meanshift::openmp_detail {
namespace {

using Index = std::int64_t;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapF = Eigen::Map<RowMat, Eigen::Aligned64>;
using MapD = Eigen::Map<RowMatD, Eigen::Aligned64>;

constexpr std::size_t kAlign = 64;
/// The log2 weight of pairs beyond the cutoff and of pad lanes (exp2 of it minus any shift is 0).
constexpr float kNoWeight = -3.0e38f;
constexpr float kLog2e = 1.44269504088896341f;

inline std::size_t round_up(std::size_t bytes)
{
    return (bytes + kAlign - 1) / kAlign * kAlign;
}

/// Columns of the point-side matrix B: X' (Shared; Σ e comes from the weight loop) or [W∘X' | W] (PerPoint).
inline int b_cols(const GemmData& D)
{
    return D.per_point ? 2 * D.k : D.k;
}
/// Columns of the mode-side matrix A: Q' (Shared) or [Q' | −½Q'²] (PerPoint).
inline int a_cols(const GemmData& D)
{
    return D.per_point ? 2 * D.k : D.k;
}

/// Whether any lane of a comparison result is set.
inline bool any_lane(vi m)
{
#if MS_SIMD_WIDTH == 16 && defined(__AVX512F__)
    return _mm512_test_epi32_mask((__m512i)m, (__m512i)m) != 0;
#elif MS_SIMD_WIDTH == 8 && defined(__AVX__)
    return _mm256_movemask_ps((__m256)m) != 0;
#elif MS_SIMD_WIDTH == 4 && defined(__SSE2__)
    return _mm_movemask_ps((__m128)m) != 0;
#else
    bool any = false;
    for (int l = 0; l < W; ++l) any = any || m[l];
    return any;
#endif
}

/// −½D² of mode y (prepared units) and point i by the direct form, in float64 over the float32 data.
inline float direct_exponent(const GemmData& D, const double* y, Index i)
{
    const float* x = D.x + i * D.k;
    const float* w = D.per_point ? D.w + i * D.k : nullptr;
    double d2 = 0;
    for (int d = 0; d < D.k; ++d) {
        const double t = y[d] - static_cast<double>(x[d]);
        d2 += (w ? static_cast<double>(w[d]) : 1.0) * t * t;
    }
    return static_cast<float>(-0.5 * d2);
}

/// The block's centre c (k floats: the mean of its m modes, rounded to float32) and the mode-side
/// matrix a (m × a_cols, row-major) relative to it; hq_j = ½|q'_j|² (Shared; 0 PerPoint, whose
/// products hold it), qn_j = ½|q'_j|² (the rounding bound near the cutoff).
inline void centre_modes(const GemmData& D, const double* positions, int m, float* centre, float* a, float* hq,
                         float* qn)
{
    const int k = D.k, ac = a_cols(D);
    for (int d = 0; d < k; ++d) {
        double s = 0;
        for (int j = 0; j < m; ++j) s += positions[static_cast<Index>(j) * k + d];
        centre[d] = static_cast<float>(s / m);
    }
    for (int j = 0; j < m; ++j) {
        const double* y = positions + static_cast<Index>(j) * k;
        float* row = a + static_cast<Index>(j) * ac;
        double h = 0;
        for (int d = 0; d < k; ++d) {
            const double q = y[d] - static_cast<double>(centre[d]);
            row[d] = static_cast<float>(q);
            if (D.per_point) row[k + d] = static_cast<float>(-0.5 * q * q);
            h += q * q;
        }
        hq[j] = D.per_point ? 0.0f : static_cast<float>(0.5 * h);
        qn[j] = static_cast<float>(0.5 * h);
    }
}

/// Point i relative to the block's centre as the point-side row b (b_cols floats: x' or [w∘x' | w]),
/// with hp = ½|x'|²_w, lw = log2 e · c_i (0 Shared) and bw = max_d w_id (1 Shared).
inline void point_row(const GemmData& D, const float* centre, Index i, float* b, float& hp, float& lw, float& bw)
{
    using RowF = Eigen::Map<const Eigen::ArrayXf>;
    using RowOut = Eigen::Map<Eigen::ArrayXf>;
    const int k = D.k;
    const RowF x(D.x + i * k, k), c(centre, k);
    if (D.per_point) {
        const RowF w(D.w + i * k, k);
        RowOut head(b, k), tail(b + k, k);
        head = w * (x - c);
        tail = w;
        hp = 0.5f * (head * (x - c)).sum();
        lw = kLog2e * D.c[i];  // log2 units, for exp2
        bw = w.maxCoeff();
    } else {
        RowOut row(b, k);
        row = x - c;
        hp = 0.5f * row.square().sum();
        lw = 0.0f;
        bw = 1.0f;
    }
}

/// Turns W products of one mode into log2 weights (c_i − ½D² in log2 units, or kNoWeight).
class LogWeights {
public:
    /// err: the expansion's rounding bound of −½D² per unit of ½|x'|²_w + max_d w · ½|q'|².
    LogWeights(const GemmData& D, float err)
        : D_(D),
          truncated_(std::isfinite(D.cutoff2)),
          u_min_(splat(truncated_ ? static_cast<float>(-0.5 * D.cutoff2) : -__builtin_huge_valf())),
          err_(splat(err))
    {
        for (int l = 0; l < W; ++l) lane_[l] = static_cast<float>(l);
    }

    /// Mode y (prepared units; hq, qn from centre_modes) against points [i, i + W) of a tile of
    /// `rows` points: s = its products, hp = ½|x'|²_w, lw = log2 e · c_i, bw = max_d w_id, row = the
    /// points' indices (all indexed from the tile's start). Lanes ≥ rows give kNoWeight.
    vf operator()(const float* s, float hq, float qn, const double* y, const float* hp, const float* lw,
                  const float* bw, const std::int64_t* row, int i, int rows) const
    {
        const vf zero = splat(0.0f);
        vf u = loadu(s + i) - splat(hq) - loadu(hp + i);
        if (truncated_) {
            // Within the expansion's rounding bound of the cutoff: decide (and weigh) by the direct
            // distance, as the direct kernels and the oracle do, so no pair flips.
            const vf gap = u - u_min_, band = err_ * (loadu(hp + i) + loadu(bw + i) * splat(qn) + splat(1.0f));
            if (any_lane(gap <= band && -gap <= band)) {
                for (int l = 0; l < W && i + l < rows; ++l)
                    if (gap[l] <= band[l] && -gap[l] <= band[l]) u[l] = direct_exponent(D_, y, row[i + l]);
            }
        }
        u = -vmax(-u, zero);  // −½D² ≤ 0 (rounding may give > 0)
        vf v = u * splat(kLog2e);
        if (D_.per_point) v += loadu(lw + i);
        v = u < u_min_ ? splat(kNoWeight) : v;  // truncated kernel: weight 0
        if (i + W > rows) v = lane_ + static_cast<float>(i) < static_cast<float>(rows) ? v : splat(kNoWeight);
        return v;
    }

private:
    const GemmData& D_;
    bool truncated_;
    vf u_min_, err_, lane_;
};

/// out_j = c + sums_j / den_j per coordinate (sums: m × b_cols float64, den: Shared's Σ e; PerPoint's
/// denominators are sums_j[k + d]); supported_j = 0 and out_j = y_j where no weight is left, i.e.
/// where even the largest log2 weight top_j is below float64's exp range (2^-1074), as the oracle.
inline void finish_modes(const GemmData& D, const double* positions, int m, const float* centre, const double* acc,
                         const double* den, const float* top, double* out, unsigned char* supported)
{
    const int k = D.k, bc = b_cols(D);
    for (int j = 0; j < m; ++j) {
        const double* y = positions + static_cast<Index>(j) * k;
        double* o = out + static_cast<Index>(j) * k;
        const double* sums = acc + static_cast<Index>(j) * bc;
        if (!(top[j] >= -1074.0f)) {
            for (int d = 0; d < k; ++d) o[d] = y[d];
            supported[j] = 0;
            continue;
        }
        bool any = false;
        for (int d = 0; d < k; ++d) {
            const double q = D.per_point ? sums[k + d] : den[j];
            if (q > 0) {
                o[d] = static_cast<double>(centre[d]) + sums[d] / q;
                any = true;
            } else {
                o[d] = y[d];
            }
        }
        supported[j] = any ? 1 : 0;
    }
}

}  // namespace
}  // namespace meanshift::openmp_detail
