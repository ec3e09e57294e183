#pragma once
// The GEMM form of one step for a block of modes (gemm_step.hpp). Included by exactly one unit per
// instruction set, which first defines `Eigen` to a unit-specific namespace name (see there).
//
// For a block of m modes with centre c (their mean) and a tile of points gathered from the block's
// row ranges, everything relative to c (q' = q − c, x' = x − c), so the float32 expansion cancels
// only on the block's own spread, not on the distance to the data's centre:
//   Shared   : t_ji = q'_j·x'_i − ½|q'_j|² − ½|x'_i|²            (= −½|q_j − x_i|²)
//              S = Q' · X'ᵀ, R = E · X': R_j,d = Σ e x'_d; Σ e is summed in the weight loop
//   PerPoint : t_ji = Σ_d (q'_d · w_id x'_id − ½ q'²_d · w_id) − ½ Σ_d w_id x'²_id
//              S = [Q' | −½Q'²] · [W∘X' | W]ᵀ, R = E · [W∘X' | W]: R_j,d = Σ e w x', R_j,k+d = Σ e w
// t is clamped to ≤ 0 (it is −½D², which rounding may push above 0), pairs with −2t > cutoff2 get
// weight 0, and e = exp2(log2(e)·t + log2(e)·c_i) by the SIMD kernels' exp2 (exactly 0 on underflow). Each tile's R (float32 sums over ≤ rows_per_tile terms) is added
// into float64 sums; y'_d = c_d + Σ e (w) x'_d / Σ e (w).
// With MS_GEMM_AMX (gemm_step_amx.cpp, after gemm_amx.hpp) the two products are AMX bf16 products of
// three-limb splits (gemm_amx.hpp) instead of Eigen's float32 ones; everything else is the same code.

// GCC 12 warns of uninitialised lanes inside its own AVX-512 intrinsics as Eigen uses them (bogus, as
// noted in simd_vec.hpp); this unit holds nothing else.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define EIGEN_DONT_PARALLELIZE  // one OpenMP thread per block already; Eigen must not start more
#include <Eigen/Core>

#include "gemm_step.hpp"
#include "simd_exp2.hpp"

#include <cmath>
#include <vector>
#include <cstdint>

namespace meanshift::openmp_detail {
namespace {

using Index = std::int64_t;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapF = Eigen::Map<RowMat, Eigen::Aligned64>;
using MapD = Eigen::Map<RowMatD, Eigen::Aligned64>;

constexpr std::size_t kAlign = 64;

inline std::size_t round_up(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

/// Columns of the point-side matrix B: X' (Shared; Σ e comes from the weight loop) or [W∘X' | W] (PerPoint).
inline int b_cols(const GemmData& D) { return D.per_point ? 2 * D.k : D.k; }
/// Columns of the mode-side matrix A: Q' (Shared) or [Q' | −½Q'²] (PerPoint).
inline int a_cols(const GemmData& D) { return D.per_point ? 2 * D.k : D.k; }

/// The per-thread buffers, carved from one scratch area in this order.
struct Buffers {
    float *centre, *a, *hq, *qn, *b, *hp, *lw, *bw, *s, *r;
    double *acc, *den;
    std::int64_t* row;  ///< the point index of each tile row
#if MS_GEMM_AMX
    std::uint16_t *qa, *ps, *pr, *el;  ///< bf16 limbs: A, S's and R's packed point tile, the weights E
#endif
};

#if MS_GEMM_AMX
/// AMX padding: A and the S point tile to 32 columns (whole K-steps), R to 16 (whole tile columns).
inline int amx_kpad(const GemmData& D) { return amx::pad32(a_cols(D)); }
inline int amx_cpad(const GemmData& D) { return amx::pad16(b_cols(D)); }
inline std::size_t amx_mpad(const GemmData& D) { return static_cast<std::size_t>(amx::pad16(D.modes_per_block)); }
#endif

std::size_t carve(const GemmData& D, unsigned char* base, Buffers* out)
{
    const std::size_t mb = static_cast<std::size_t>(D.modes_per_block), nb = static_cast<std::size_t>(D.rows_per_tile);
    const std::size_t k = static_cast<std::size_t>(D.k), ac = static_cast<std::size_t>(a_cols(D)),
                      bc = static_cast<std::size_t>(b_cols(D));
    std::size_t off = 0;
    auto take = [&](std::size_t bytes) {
        unsigned char* p = base ? base + off : nullptr;
        off += round_up(bytes);
        return p;
    };
    Buffers b;
    b.centre = reinterpret_cast<float*>(take(k * sizeof(float)));
    b.a = reinterpret_cast<float*>(take(mb * ac * sizeof(float)));
    b.hq = reinterpret_cast<float*>(take(mb * sizeof(float)));
    b.qn = reinterpret_cast<float*>(take(mb * sizeof(float)));
    b.b = reinterpret_cast<float*>(take(nb * bc * sizeof(float)));
    b.hp = reinterpret_cast<float*>(take(nb * sizeof(float)));
    b.lw = reinterpret_cast<float*>(take(nb * sizeof(float)));
    b.bw = reinterpret_cast<float*>(take(nb * sizeof(float)));
    b.row = reinterpret_cast<std::int64_t*>(take(nb * sizeof(std::int64_t)));
#if MS_GEMM_AMX
    // Whole tiles: S and R are written 16 modes (and R 16 columns) at a time.
    const std::size_t mp = amx_mpad(D), kp = static_cast<std::size_t>(amx_kpad(D)),
                      cp = static_cast<std::size_t>(amx_cpad(D));
    b.s = reinterpret_cast<float*>(take(mp * nb * sizeof(float)));
    b.r = reinterpret_cast<float*>(take(mp * cp * sizeof(float)));
    b.qa = reinterpret_cast<std::uint16_t*>(take(3 * mp * kp * 2));
    b.ps = reinterpret_cast<std::uint16_t*>(take(3 * nb * kp * 2));
    b.pr = reinterpret_cast<std::uint16_t*>(take(3 * nb * cp * 2));
    b.el = reinterpret_cast<std::uint16_t*>(take(2 * mp * nb * 2));  // E: two limbs (split2_store)
#else
    b.s = reinterpret_cast<float*>(take(mb * nb * sizeof(float)));
    b.r = reinterpret_cast<float*>(take(mb * bc * sizeof(float)));
#endif
    b.acc = reinterpret_cast<double*>(take(mb * bc * sizeof(double)));
    b.den = reinterpret_cast<double*>(take(mb * sizeof(double)));
    if (out) *out = b;
    return off;
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

std::size_t scratch_bytes(const GemmData& D) { return carve(D, nullptr, nullptr) + kAlign; }

void run_block(const GemmData& D, const double* positions, int m, const std::int64_t* ranges, int nranges,
               double* out, unsigned char* supported, void* scratch)
{
    const int k = D.k, ac = a_cols(D), bc = b_cols(D), nb = D.rows_per_tile;
    const bool per_point = D.per_point;
    auto* base = static_cast<unsigned char*>(scratch);
    base += (kAlign - reinterpret_cast<std::uintptr_t>(base) % kAlign) % kAlign;
    Buffers buf;
    carve(D, base, &buf);  // the caller zero-fills scratch once, so S's pad columns stay finite

    // The block's centre and the mode-side matrix A (m × ac), relative to it.
    for (int d = 0; d < k; ++d) {
        double s = 0;
        for (int j = 0; j < m; ++j) s += positions[static_cast<Index>(j) * k + d];
        buf.centre[d] = static_cast<float>(s / m);
    }
    for (int j = 0; j < m; ++j) {
        const double* y = positions + static_cast<Index>(j) * k;
        float* a = buf.a + static_cast<Index>(j) * ac;
        double h = 0;
        for (int d = 0; d < k; ++d) {
            const double q = y[d] - static_cast<double>(buf.centre[d]);
            a[d] = static_cast<float>(q);
            if (per_point) a[k + d] = static_cast<float>(-0.5 * q * q);
            h += q * q;
        }
        buf.hq[j] = per_point ? 0.0f : static_cast<float>(0.5 * h);
        buf.qn[j] = static_cast<float>(0.5 * h);
    }
    MapD acc(buf.acc, m, bc);
#if MS_GEMM_AMX
    const int kpad = amx_kpad(D), cpad = amx_cpad(D), mt = amx::pad16(m) / 16;
    const std::size_t limb_a = amx_mpad(D) * static_cast<std::size_t>(kpad),
                      limb_s = static_cast<std::size_t>(nb) * static_cast<std::size_t>(kpad),
                      limb_r = static_cast<std::size_t>(nb) * static_cast<std::size_t>(cpad),
                      limb_e = amx_mpad(D) * static_cast<std::size_t>(nb);
    amx::pack_rows(buf.a, m, ac, 16 * mt, kpad, buf.qa, limb_a);
    amx::configure_tiles();
#endif
    acc.setZero();
    for (int j = 0; j < m; ++j) buf.den[j] = 0;

    const bool truncated = std::isfinite(D.cutoff2);
    // u = −½D² < u_min: beyond the cutoff (−inf: never).
    const vf u_min = splat(truncated ? static_cast<float>(-0.5 * D.cutoff2) : -__builtin_huge_valf());
    const vf zero = splat(0.0f), log2e = splat(1.44269504088896341f);
    // Rounding bound of u = −½D² in the expansion, relative to ½|x'|²_w + max_d w · ½|q'|² (each ≥ the
    // magnitudes the dot products cancel): ~(2k + 8) float32 roundings, doubled for safety. AMX: the
    // tile sums all six limb terms in float32, 6·kpad roundings, and the dropped terms ≤ 3·2^-24.
#if MS_GEMM_AMX
    const vf err = splat(static_cast<float>((6 * amx_kpad(D) + 16) * 0x1p-23));
#else
    const vf err = splat(static_cast<float>((2 * k + 8) * 0x1p-23));
#endif
    vf lane;
    for (int l = 0; l < W; ++l) lane[l] = static_cast<float>(l);
    FlushDenormals ftz;  // weights below 2^-126 are exactly 0, as in the SIMD kernels

    // One tile of `rows` gathered points in B, hp, lw: products, weights, sums. S has row stride
    // nb (a multiple of W), so the weight loop runs whole vectors; the pad columns are never read
    // by the second product.
    // Per mode, the largest log2-weight seen so far (c_i − ½D² in log2 units): the weights are
    // exp2(v − top), so the float32 weights never all underflow while float64 would not (per-point
    // log-weights may span far more than float32's 2^-126: |H_i|^-1/2 in 128 dimensions); sums
    // already made are rescaled when top grows. y' = c + S1/S0 does not depend on the scale.
    std::vector<float> top(static_cast<std::size_t>(m), -__builtin_huge_valf());
    constexpr float kNoWeight = -3.0e38f;  // v of pairs beyond the cutoff and of pad lanes
    // Weighs mode j against the tile's S row: v = log2 weight (kNoWeight beyond the cutoff and in pad
    // lanes), the running maximum, then e = exp2(v − top) in place (Eigen) or as E's limbs (AMX).
    auto weigh = [&](int j, int rows, int weighed) {
        float* s = buf.s + static_cast<Index>(j) * nb;
        const vf hq = splat(buf.hq[j]), qn = splat(buf.qn[j]);
        vf esum = zero, vtop = splat(kNoWeight);
        for (int i = 0; i < weighed; i += W) {
            vf u = loadu(s + i) - hq - loadu(buf.hp + i);
            if (truncated) {
                // Within the expansion's rounding bound of the cutoff: decide (and weigh) by the
                // direct distance, as the direct kernels and the oracle do, so no pair flips.
                const vf gap = u - u_min, band = err * (loadu(buf.hp + i) + loadu(buf.bw + i) * qn + splat(1.0f));
                if (any_lane(gap <= band && -gap <= band)) {
                    for (int l = 0; l < W && i + l < rows; ++l)
                        if (gap[l] <= band[l] && -gap[l] <= band[l])
                            u[l] = direct_exponent(D, positions + static_cast<Index>(j) * k, buf.row[i + l]);
                }
            }
            u = -vmax(-u, zero);                         // −½D² ≤ 0 (rounding may give > 0)
            vf v = u * log2e + loadu(buf.lw + i);
            v = u < u_min ? splat(kNoWeight) : v;        // truncated kernel: weight 0
            if (i + W > rows) v = lane + static_cast<float>(i) < static_cast<float>(rows) ? v : splat(kNoWeight);  // pad lanes
            vtop = vmax(vtop, v);
            storeu(s + i, v);
        }
        float t = kNoWeight;
        for (int l = 0; l < W; ++l) t = std::max(t, vtop[l]);
        if (t > top[static_cast<std::size_t>(j)]) {
            if (t == kNoWeight) t = -__builtin_huge_valf();  // nothing in this tile, nothing before
            if (top[static_cast<std::size_t>(j)] > -__builtin_huge_valf()) {
                const double f = std::exp2(static_cast<double>(top[static_cast<std::size_t>(j)]) - t);
                acc.row(j) *= f;
                buf.den[j] *= f;
            }
            top[static_cast<std::size_t>(j)] = t;
        }
        const vf shift = splat(top[static_cast<std::size_t>(j)]);
        const bool none = !(top[static_cast<std::size_t>(j)] > -__builtin_huge_valf());
#if MS_GEMM_AMX
        // E's two limbs (R's A operand: modes as rows, points as K), 32 points (one K-step) at a time,
        // stored tile by tile ([mode tile][K-step][16 × 32]) so that R loads contiguous tiles. Σ e sums
        // e itself, within 2^-17 relative of the limbs' sum that R weighs by.
        std::uint16_t* el = buf.el + static_cast<std::size_t>(j / 16) * nb * 16 + 32 * (j % 16);
        for (int i = 0; i < weighed; i += 2 * W) {
            const vf e0 = none ? zero : exp2_poly(vmax(loadu(s + i) - shift, splat(-150.0f)));
            const vf e1 = none ? zero : exp2_poly(vmax(loadu(s + i + W) - shift, splat(-150.0f)));
            amx::split2_store((__m512)e0, (__m512)e1, el + 16 * i, limb_e);
            esum += e0 + e1;
        }
#else
        for (int i = 0; i < rows; i += W) {
            // exp2 of ≤ −150 is 0 (kNoWeight lanes included, whatever the shift)
            const vf e = none ? zero : exp2_poly(vmax(loadu(s + i) - shift, splat(-150.0f)));
            esum += e;
            storeu(s + i, e);
        }
#endif
        if (!per_point) {
            double sum = 0;
            for (int l = 0; l < W; ++l) sum += static_cast<double>(esum[l]);
            buf.den[j] += sum;
        }
    };
    auto tile = [&](int rows) {
#if MS_GEMM_AMX
        const int weighed = amx::pad32(rows);  // R's K-steps take 32 points: the pad ones weigh 0
        amx::pack_points(buf.b, rows, bc, kpad, buf.ps, limb_s, buf.pr, limb_r);
        const int ks = kpad / 32, cg = cpad / 16;
        // S = A · Bᵀ on the tiles (a_cols = b_cols, so B's rows are S's K as well as R's N): 6 terms.
        amx::product<amx::kTerms>(
            mt, amx::pad16(rows) / 16, ks, ks,
            [&](int l, int i, int s) { return buf.qa + l * limb_a + static_cast<std::size_t>(16 * i) * kpad + 32 * s; },
            2 * kpad,
            [&](int l, int g, int s) { return buf.ps + l * limb_s + (static_cast<std::size_t>(g) * ks + s) * 512; },
            buf.s, nb);
        for (int j = 0; j < m; ++j) weigh(j, rows, weighed);
        // R = E · B, K-steps in chunks of 2 (gemm_amx.hpp product()): E's two limbs, 5 terms.
        amx::product<amx::kTermsE>(
            mt, cg, amx::pad32(rows) / 32, 2,
            [&](int l, int i, int s) { return buf.el + l * limb_e + static_cast<std::size_t>(16 * i) * nb + 512 * s; },
            64,
            [&](int l, int c, int s) { return buf.pr + l * limb_r + (static_cast<std::size_t>(s) * cg + c) * 512; },
            buf.r, cpad);
        const Eigen::Map<const RowMat, Eigen::Aligned64, Eigen::OuterStride<>> R(buf.r, m, bc, Eigen::OuterStride<>(cpad));
        acc += R.cast<double>();
#else
        const MapF A(buf.a, m, ac), B(buf.b, rows, bc);
        Eigen::Map<RowMat, Eigen::Aligned64, Eigen::OuterStride<>> S(buf.s, m, rows, Eigen::OuterStride<>(nb));
        S.noalias() = A * B.leftCols(ac).transpose();
        for (int j = 0; j < m; ++j) weigh(j, rows, rows);
        MapF R(buf.r, m, bc);
        R.noalias() = S * B;
        acc += R.cast<double>();
#endif
    };

    // Gather the rows of the ranges into tiles of nb rows, relative to the centre.
    int rows = 0;
    using RowF = Eigen::Map<const Eigen::ArrayXf>;
    using RowOut = Eigen::Map<Eigen::ArrayXf>;
    const RowF centre(buf.centre, k);
    auto add_row = [&](Index i) {
        const RowF x(D.x + i * k, k);
        RowOut b(buf.b + static_cast<Index>(rows) * bc, bc);
        buf.row[rows] = i;
        if (per_point) {
            const RowF w(D.w + i * k, k);
            b.head(k) = w * (x - centre);
            b.tail(k) = w;
            buf.hp[rows] = 0.5f * (b.head(k) * (x - centre)).sum();
            buf.lw[rows] = 1.44269504088896341f * D.c[i];  // log2 units, for exp2
            buf.bw[rows] = w.maxCoeff();
        } else {
            b = x - centre;
            buf.hp[rows] = 0.5f * b.square().sum();
            buf.lw[rows] = 0.0f;
            buf.bw[rows] = 1.0f;
        }
        if (++rows == nb) {
            tile(rows);
            rows = 0;
        }
    };
    if (nranges < 0) {
        for (Index i = 0; i < D.n; ++i) add_row(i);
    } else {
        for (int r = 0; r < nranges; ++r)
            for (Index i = ranges[2 * r]; i < ranges[2 * r + 1]; ++i) add_row(i);
    }
    if (rows > 0) tile(rows);
#if MS_GEMM_AMX
    amx::release_tiles();
#endif

    for (int j = 0; j < m; ++j) {
        const double* y = positions + static_cast<Index>(j) * k;
        double* o = out + static_cast<Index>(j) * k;
        const double* sums = buf.acc + static_cast<Index>(j) * bc;
        // As the float64 oracle: no support when even the largest weight underflows float64's exp
        // (below 2^-1074; the shift above would otherwise give such a mode its nearest points).
        if (!(top[static_cast<std::size_t>(j)] >= -1074.0f)) {
            for (int d = 0; d < k; ++d) o[d] = y[d];
            supported[j] = 0;
            continue;
        }
        bool any = false;
        for (int d = 0; d < k; ++d) {
            const double den = per_point ? sums[k + d] : buf.den[j];
            if (den > 0) {
                o[d] = static_cast<double>(buf.centre[d]) + sums[d] / den;
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
