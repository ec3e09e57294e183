#pragma once
// Alg. 3 (approxMode) of Malysiak & Handmann on the SIMD lanes of one CPU thread (one PPU).
// Included by exactly one kernel TU per instruction set, after it defines MS_SIMD_WIDTH.
//
// Two loop shapes, chosen by f_vppu:
//  * f_vppu = 1 ("one mode per lane"): each lane (PU = vPPU) owns a mode; a block holds
//    regs · τ modes in registers and every data point is broadcast to all lanes. Per point and
//    lane: k subtractions, k FMAs, one polynomial exp2, 1 + k FMAs (Shared model).
//  * f_vppu > 1 ("lanes share a mode"): lane l works for mode j = l / f_vppu of the block as PU
//    pu = l mod f_vppu. PUs pu < f_load visit points i = pu + f_load·t (cyclic distribution:
//    same per-PU count as Alg. 3's contiguous chunks, but one contiguous vector load per step);
//    PUs pu ≥ f_load are idle: they run in lock-step but their weights are masked to 0. After
//    the loop the f_vppu partial sums of each vPPU are combined by a tree reduction.
//
// Accuracy: weights are summed in float32 over chunks of at most kChunk points, and the chunk
// sums are added into float64 accumulators, so n = millions of points keeps ~1e-6 relative
// accuracy instead of the ~n·ε drift of one long float32 sum.

#include "backends/common/finish_mode.hpp"
#include "simd_exp2.hpp"
#include "simd_kernel.hpp"

#include "kernels/meanshift_device.h"
#include "kernels/profiles/profiles.h"

#include <type_traits>

namespace meanshift::openmp_detail {
namespace {

using Index = std::int64_t;

constexpr Index kChunk = 512;  // float32 terms per lane before the float64 flush

inline Index min_index(Index a, Index b)
{
    return a < b ? a : b;
}

/// Adds the W lanes of v into acc[0..W) (float64).
inline void flush(double* acc, vf v)
{
    float tmp[W];
    storeu(tmp, v);
    for (int l = 0; l < W; ++l) acc[l] += static_cast<double>(tmp[l]);
}

/// Calls f(i0, i1) for the pieces of at most `chunk` rows (or steps) of the block's ranges.
template <class F>
inline void for_pieces(const KernelData& D, Index chunk, F&& f)
{
    if (!D.ranges) {
        for (Index i0 = 0; i0 < D.n; i0 += chunk) f(i0, min_index(D.n, i0 + chunk));
        return;
    }
    for (int r = 0; r < D.nranges; ++r) {
        const Index b = D.ranges[2 * r], e = D.ranges[2 * r + 1];
        for (Index i0 = b; i0 < e; i0 += chunk) f(i0, min_index(e, i0 + chunk));
    }
}

/// Calls f(i0, i1) for the pieces of the block's ranges and done() after every `chunk` rows in
/// all and once at the end: short ranges (a pixel window is ~30 rows of ~30 pixels) share one
/// chunk, so the float64 flush runs once per `chunk` rows, not once per range.
template <class F, class Done>
inline void for_chunks(const KernelData& D, Index chunk, F&& f, Done&& done)
{
    Index left = chunk;
    auto range = [&](Index b, Index e) {
        while (b < e) {
            const Index i1 = min_index(e, b + left);
            f(b, i1);
            left -= i1 - b;
            b = i1;
            if (left == 0) {
                done();
                left = chunk;
            }
        }
    };
    if (!D.ranges)
        range(0, D.n);
    else
        for (int r = 0; r < D.nranges; ++r) range(D.ranges[2 * r], D.ranges[2 * r + 1]);
    if (left < chunk) done();
}

/// e where a ≥ thr, else 0 (the truncated kernel's mask: one compare, one AND).
inline vf mask_ge(vf e, vf a, vf thr)
{
    return (vf)((vi)e & (vi)(a >= thr));
}

/// The weight of a pair for profile PF (KernelData::profile) from a = the Gaussian's log2 weight
/// c2 − Σ_d (kernel-unit distance)², c2 the point's log2 prior weight (vf{} for Shared), p2 = 2^c2
/// (PerPoint compact profiles only) and thr = c2 + cut, the truncation's threshold on a. Gaussian
/// (and vMF): 2^a. Compact profiles: q = D² = (c2 − a)·2 ln 2 and 2^c2 · g(q) with g = 1, 1 − q,
/// (1 − q)² (flat, Epanechnikov, biweight) where a ≥ thr, i.e. q ≤ 1 (bind() keeps cut ≥ −½ log2 e):
/// no exp2 at all.
template <int PF, bool PP>
inline vf pair_weight(vf a, vf c2, vf p2, vf thr)
{
    if constexpr (PF == 0) {
        (void)c2, (void)p2;
        return mask_ge(exp2_poly(a), a, thr);
    } else {
        constexpr float kTwoLn2 = 1.38629436111989061883f;  // D² per unit of −a
        const vf one = splat(1.0f);
        const vf in = PP ? one - (c2 - a) * kTwoLn2 : one + a * kTwoLn2;  // 1 − q, ≥ 0 in the support
        vf g;
        if constexpr (PF == 1)
            g = one;
        else if constexpr (PF == 2)
            g = (vf)((vi)in & (vi)(in > vf{}));  // max(1 − q, 0): rounding at the edge stays ≥ 0
        else if constexpr (PF == 3)
            g = in * in;
        else if constexpr (PF == 5) {
            const vf c = (vf)((vi)in & (vi)(in > vf{}));  // triweight: an odd power, so clamp as above
            g = c * c * c;
        } else {  // any other compact profile: its device header's g(q), lane by lane
            const vf q = one - in;
            for (int l = 0; l < W; ++l) g[l] = ms_profile_weight_unit(PF, q[l]);
        }
        if constexpr (PP) g *= p2;
        return mask_ge(g, a, thr);
    }
}

inline void zero(double* p, Index count)
{
    for (Index i = 0; i < count; ++i) p[i] = 0.0;
}

/// Writes the new position of one mode from its float64 sums (Alg. 3 line 20). s0 has k entries
/// for PerPoint (H_h,t is diagonal), one for Shared; `stride` separates entries of one sum. A
/// dimension without support (sum underflowed to 0) keeps its old coordinate. Returns 0 when the
/// mode had no support at all.
inline unsigned char write_mode(const KernelData& D, const double* s0, const double* s1, Index stride,
                                const double* old_y, double* out)
{
    if (D.sums) {  // Binding::accumulate: the sums themselves, in prepared units
        double* a = D.sums + (out - D.sums_out) / D.k * D.sums_width;
        const int ns0 = D.per_point ? D.k : 1;
        for (int c = 0; c < ns0; ++c) a[c] += s0[c * stride];
        for (int d = 0; d < D.k; ++d) a[ns0 + d] += s1[d * stride] / D.y_scale;
    }
    return detail::finish_mode(s0, D.per_point ? stride : 0, s1, stride, D.y_scale, old_y, out, D.k) ? 1 : 0;
}

// ----------------------------------------------------------------------------------------------
// f_vppu = 1: one mode per lane, R vectors of modes, fixed k = K.

template <int PF, int K, int R, bool PP>
void lanes_fixed_k(const KernelData& D, const double* pos, int m, double* out, unsigned char* sup, void* scratch)
{
    [[maybe_unused]] const FlushDenormals ftz;
    constexpr int NS0 = PP ? K : 1;
    constexpr int NC = NS0 + K;  // sums per lane
    // acc[(r·NC + c)·W + l]: float64 sum c of lane l in vector r.
    double* acc = static_cast<double*>(align64(scratch));
    zero(acc, Index{R} * NC * W);

    vf Y[R][K];
    for (int r = 0; r < R; ++r)
        for (int l = 0; l < W; ++l) {
            const int q = r * W + l < m ? r * W + l : 0;  // surplus lanes copy mode 0
            for (int d = 0; d < K; ++d) Y[r][d][l] = static_cast<float>(pos[q * K + d] * D.y_scale);
        }

    const vf cut = splat(D.cut);
    vf S0[R][NS0], S1[R][K];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
        for (int c = 0; c < NS0; ++c) S0[r][c] = vf{};
#pragma GCC unroll 16
        for (int d = 0; d < K; ++d) S1[r][d] = vf{};
    }
    auto flush_sums = [&] {
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
            for (int c = 0; c < NS0; ++c) {
                flush(acc + (r * NC + c) * W, S0[r][c]);
                S0[r][c] = vf{};
            }
#pragma GCC unroll 16
            for (int d = 0; d < K; ++d) {
                flush(acc + (r * NC + NS0 + d) * W, S1[r][d]);
                S1[r][d] = vf{};
            }
        }
    };
    for_chunks(
        D, kChunk,
        [&](Index i0, Index i1) {
            for (Index i = i0; i < i1; ++i) {
                const float* xi = D.x + i * K;
                if constexpr (!PP) {
#pragma GCC unroll 16
                    for (int r = 0; r < R; ++r) {
                        vf a = vf{};
#pragma GCC unroll 16
                        for (int d = 0; d < K; ++d) {
                            const vf t = Y[r][d] - xi[d];
                            a -= t * t;  // a = -|y - x|² in kernel units = log2 of the weight
                        }
                        const vf e = pair_weight<PF, false>(a, vf{}, vf{}, cut);
                        S0[r][0] += e;
#pragma GCC unroll 16
                        for (int d = 0; d < K; ++d) S1[r][d] += e * xi[d];
                    }
                } else {
                    const float* swi = D.sw + i * K;
                    const float* wi = D.w + i * K;
                    const float* wxi = D.wx + i * K;
                    const float ci = D.c2[i];
                    const vf thr = splat(ci) + cut;
                    const vf p2i = PF != 0 ? splat(D.p2[i]) : vf{};
#pragma GCC unroll 16
                    for (int r = 0; r < R; ++r) {
                        vf a = splat(ci);
#pragma GCC unroll 16
                        for (int d = 0; d < K; ++d) {
                            const vf t = Y[r][d] * swi[d] - xi[d];  // √w_d (y_d - x_d), one FMA
                            a -= t * t;
                        }
                        const vf e = pair_weight<PF, true>(a, splat(ci), p2i, thr);
#pragma GCC unroll 16
                        for (int d = 0; d < K; ++d) {
                            S0[r][d] += e * wi[d];
                            S1[r][d] += e * wxi[d];
                        }
                    }
                }
            }
        },
        flush_sums);

    for (int r = 0; r < R; ++r)
        for (int l = 0; l < W; ++l) {
            const int q = r * W + l;
            if (q >= m) continue;
            const double* base = acc + r * NC * W + l;
            sup[q] = write_mode(D, base, base + NS0 * W, W, pos + q * K, out + q * K);
        }
}

// f_vppu = 1, any k: the per-dimension vectors live in scratch memory (L1). P points are taken
// together so that each Y[d] load serves P distances and each S[d] load/store P accumulations.
template <int PF, int P, bool PP>
__attribute__((always_inline)) inline void lanes_any_k_points(const KernelData& D, Index i, const vf* Y, vf* S)
{
    const int k = D.k;
    const float* x = D.x + i * k;  // rows of points i … i+P-1
    vf a[P];
#pragma GCC unroll 8
    for (int j = 0; j < P; ++j) a[j] = PP ? splat(D.c2[i + j]) : vf{};
    for (int d = 0; d < k; ++d) {
        const vf y = Y[d];
#pragma GCC unroll 8
        for (int j = 0; j < P; ++j) {
            const vf t = PP ? y * D.sw[(i + j) * k + d] - x[j * k + d] : y - x[j * k + d];
            a[j] -= t * t;
        }
    }
    vf e[P];
    const vf cut = splat(D.cut);
#pragma GCC unroll 8
    for (int j = 0; j < P; ++j) {
        const vf c2 = PP ? splat(D.c2[i + j]) : vf{};
        const vf p2 = PP && PF != 0 ? splat(D.p2[i + j]) : vf{};
        e[j] = pair_weight<PF, PP>(a[j], c2, p2, PP ? c2 + cut : cut);
    }
    if constexpr (!PP) {
        vf s0 = S[0];
#pragma GCC unroll 8
        for (int j = 0; j < P; ++j) s0 += e[j];
        S[0] = s0;
        for (int d = 0; d < k; ++d) {
            vf s1 = S[1 + d];
#pragma GCC unroll 8
            for (int j = 0; j < P; ++j) s1 += e[j] * x[j * k + d];
            S[1 + d] = s1;
        }
    } else {
        const float* w = D.w + i * k;
        const float* wx = D.wx + i * k;
        for (int d = 0; d < k; ++d) {
            vf s0 = S[d], s1 = S[k + d];
#pragma GCC unroll 8
            for (int j = 0; j < P; ++j) {
                s0 += e[j] * w[j * k + d];
                s1 += e[j] * wx[j * k + d];
            }
            S[d] = s0;
            S[k + d] = s1;
        }
    }
}

template <int PF, bool PP>
void lanes_any_k(const KernelData& D, const double* pos, int m, double* out, unsigned char* sup, void* scratch)
{
    [[maybe_unused]] const FlushDenormals ftz;
    constexpr int P = 4;
    const int k = D.k;
    const int ns0 = PP ? k : 1;
    const int nc = ns0 + k;
    vf* Y = static_cast<vf*>(align64(scratch));
    vf* S = Y + k;  // S[0..ns0) = S0, S[ns0..nc) = S1
    double* acc = reinterpret_cast<double*>(S + nc);
    zero(acc, Index{nc} * W);

    for (int l = 0; l < W; ++l) {
        const int q = l < m ? l : 0;
        for (int d = 0; d < k; ++d) Y[d][l] = static_cast<float>(pos[q * k + d] * D.y_scale);
    }

    for_pieces(D, kChunk, [&](Index i0, Index i1) {
        for (int c = 0; c < nc; ++c) S[c] = vf{};
        Index i = i0;
        for (; i + P <= i1; i += P) lanes_any_k_points<PF, P, PP>(D, i, Y, S);
        for (; i < i1; ++i) lanes_any_k_points<PF, 1, PP>(D, i, Y, S);
        for (int c = 0; c < nc; ++c) flush(acc + c * W, S[c]);
    });

    for (int l = 0; l < m && l < W; ++l)
        sup[l] = write_mode(D, acc + l, acc + ns0 * W + l, W, pos + l * k, out + l * k);
}

// ----------------------------------------------------------------------------------------------
// f_vppu = G > 1: τ/G modes per vector, G lanes (PUs) per mode, f_load of them active.

/// Tree reduction of the G partial sums of every vPPU (lanes j·G … j·G+G-1) into lane j·G,
/// for `rows` sums of W lanes each. G divides τ, and τ is a power of two, so G is one too and
/// the tree has exactly log2 G levels (the paper's ℵ term is 0); idle PUs enter it as zeros.
template <int G>
void reduce_vppu(double* acc, int rows)
{
    for (int c = 0; c < rows; ++c) {
        double* a = acc + c * W;
        for (int s = G / 2; s >= 1; s /= 2)
            for (int l = 0; l < W; ++l)
                if (l % G < s) a[l] += a[l + s];
    }
}

/// Lane mask: 1 for PUs pu = l mod G < active, 0 for idle PUs.
template <int G>
vf pu_mask(int active)
{
    vf mask;
    for (int l = 0; l < W; ++l) mask[l] = (l % G) < active ? 1.0f : 0.0f;
    return mask;
}

template <int PF, int G, int K, bool PP>
void vppu_fixed_k(const KernelData& D, const double* pos, int m, double* out, unsigned char* sup, void* scratch)
{
    [[maybe_unused]] const FlushDenormals ftz;
    static_assert(G > 1 && W % G == 0, "f_vppu must divide the SIMD width");
    constexpr int NS0 = PP ? K : 1;
    constexpr int NC = NS0 + K;
    double* acc = static_cast<double*>(align64(scratch));
    zero(acc, Index{NC} * W);

    vf Y[K];
    for (int l = 0; l < W; ++l) {
        const int j = l / G < m ? l / G : 0;  // mode of this lane's vPPU
        for (int d = 0; d < K; ++d) Y[d][l] = static_cast<float>(pos[j * K + d] * D.y_scale);
    }

    const Index stride = D.stride;
    const int f_load = D.f_load;
    const vf cut = splat(D.cut);

    // One step of the n-loop: PU pu of every vPPU visits point base + pu.
    // `masked` (std::true_type/false_type): whether some PUs are idle and need the lane mask.
    auto visit = [&](Index base, vf mask, vf* S0, vf* S1, auto masked) {
        vf x[K];
#pragma GCC unroll 16
        for (int d = 0; d < K; ++d) x[d] = load_replicated<G>(D.xs + d * stride + base);
        if constexpr (!PP) {
            vf a = vf{};
#pragma GCC unroll 16
            for (int d = 0; d < K; ++d) {
                const vf t = Y[d] - x[d];
                a -= t * t;
            }
            vf e = pair_weight<PF, false>(a, vf{}, vf{}, cut);
            if constexpr (decltype(masked)::value) e *= mask;
            S0[0] += e;
#pragma GCC unroll 16
            for (int d = 0; d < K; ++d) S1[d] += e * x[d];
        } else {
            const vf c2 = load_replicated<G>(D.c2s + base);
            vf a = c2;
#pragma GCC unroll 16
            for (int d = 0; d < K; ++d) {
                const vf t = Y[d] * load_replicated<G>(D.sws + d * stride + base) - x[d];
                a -= t * t;
            }
            const vf p2 = PF != 0 ? load_replicated<G>(D.p2s + base) : vf{};
            vf e = pair_weight<PF, true>(a, c2, p2, c2 + cut);
            if constexpr (decltype(masked)::value) e *= mask;
#pragma GCC unroll 16
            for (int d = 0; d < K; ++d) {
                S0[d] += e * load_replicated<G>(D.ws + d * stride + base);
                S1[d] += e * load_replicated<G>(D.wxs + d * stride + base);
            }
        }
    };
    auto flush_all = [&](const vf* S0, const vf* S1) {
        for (int c = 0; c < NS0; ++c) flush(acc + c * W, S0[c]);
        for (int d = 0; d < K; ++d) flush(acc + (NS0 + d) * W, S1[d]);
    };

    const vf active = pu_mask<G>(f_load);
    // Each range [b, e) of the block: steps where every active PU has a point, then a ragged end.
    auto run_range = [&](Index b, Index e, auto masked) {
        const Index steps = (e - b) / f_load;
        const int rest = static_cast<int>((e - b) % f_load);
        for (Index t0 = 0; t0 < steps; t0 += kChunk) {
            const Index t1 = min_index(steps, t0 + kChunk);
            vf S0[NS0] = {}, S1[K] = {};
            for (Index t = t0; t < t1; ++t) visit(b + t * f_load, active, S0, S1, masked);
            flush_all(S0, S1);
        }
        if (rest > 0) {  // ragged end: only PUs pu < (e - b) mod f_load still have a point
            vf S0[NS0] = {}, S1[K] = {};
            visit(b + steps * f_load, pu_mask<G>(rest), S0, S1, std::true_type{});
            flush_all(S0, S1);
        }
    };
    auto run_all = [&](auto masked) {
        if (!D.ranges) {
            run_range(0, D.n, masked);
            return;
        }
        for (int r = 0; r < D.nranges; ++r) run_range(D.ranges[2 * r], D.ranges[2 * r + 1], masked);
    };
    if (f_load == G)
        run_all(std::false_type{});  // every PU busy: no mask multiply in the hot loop
    else
        run_all(std::true_type{});

    reduce_vppu<G>(acc, NC);
    for (int j = 0; j < m && j < W / G; ++j)
        sup[j] = write_mode(D, acc + j * G, acc + NS0 * W + j * G, W, pos + j * K, out + j * K);
}

template <int PF, int G, bool PP>
void vppu_any_k(const KernelData& D, const double* pos, int m, double* out, unsigned char* sup, void* scratch)
{
    [[maybe_unused]] const FlushDenormals ftz;
    const int k = D.k;
    const int ns0 = PP ? k : 1;
    const int nc = ns0 + k;
    vf* Y = static_cast<vf*>(align64(scratch));
    vf* S = Y + k;
    vf* X = S + nc;  // the current step's coordinates
    double* acc = reinterpret_cast<double*>(X + k);
    zero(acc, Index{nc} * W);

    for (int l = 0; l < W; ++l) {
        const int j = l / G < m ? l / G : 0;
        for (int d = 0; d < k; ++d) Y[d][l] = static_cast<float>(pos[j * k + d] * D.y_scale);
    }

    const Index stride = D.stride;
    const int f_load = D.f_load;
    const vf cut = splat(D.cut);

    auto visit = [&](Index base, vf mask) {
        const vf c2 = PP ? load_replicated<G>(D.c2s + base) : vf{};
        vf a = c2;
        for (int d = 0; d < k; ++d) {
            X[d] = load_replicated<G>(D.xs + d * stride + base);
            vf t;
            if constexpr (PP)
                t = Y[d] * load_replicated<G>(D.sws + d * stride + base) - X[d];
            else
                t = Y[d] - X[d];
            a -= t * t;
        }
        const vf p2 = PP && PF != 0 ? load_replicated<G>(D.p2s + base) : vf{};
        const vf e = pair_weight<PF, PP>(a, c2, p2, c2 + cut) * mask;
        if constexpr (!PP) {
            S[0] += e;
            for (int d = 0; d < k; ++d) S[1 + d] += e * X[d];
        } else {
            for (int d = 0; d < k; ++d) {
                S[d] += e * load_replicated<G>(D.ws + d * stride + base);
                S[k + d] += e * load_replicated<G>(D.wxs + d * stride + base);
            }
        }
    };
    auto flush_all = [&] {
        for (int c = 0; c < nc; ++c) {
            flush(acc + c * W, S[c]);
            S[c] = vf{};
        }
    };

    for (int c = 0; c < nc; ++c) S[c] = vf{};
    const vf active = pu_mask<G>(f_load);
    auto run_range = [&](Index b, Index e) {
        const Index steps = (e - b) / f_load;
        const int rest = static_cast<int>((e - b) % f_load);
        for (Index t0 = 0; t0 < steps; t0 += kChunk) {
            const Index t1 = min_index(steps, t0 + kChunk);
            for (Index t = t0; t < t1; ++t) visit(b + t * f_load, active);
            flush_all();
        }
        if (rest > 0) {
            visit(b + steps * f_load, pu_mask<G>(rest));
            flush_all();
        }
    };
    if (!D.ranges)
        run_range(0, D.n);
    else
        for (int r = 0; r < D.nranges; ++r) run_range(D.ranges[2 * r], D.ranges[2 * r + 1]);

    reduce_vppu<G>(acc, nc);
    for (int j = 0; j < m && j < W / G; ++j)
        sup[j] = write_mode(D, acc + j * G, acc + ns0 * W + j * G, W, pos + j * k, out + j * k);
}

// ----------------------------------------------------------------------------------------------
// Dispatch on (f_vppu, k, regs, model).

constexpr int kMaxFixedK = 8;  // f_vppu = 1 specialisations k = 1..8
constexpr int kMaxFixedKVppu = 4;  // f_vppu > 1 specialisations k = 1..4

/// Whether two vectors of modes (their k coordinates and k+1 or 2k sums each) fit the register
/// file with room for temporaries and constants: 32 vector registers with AVX-512, 16 otherwise.
/// Spilling them costs more than the second vector gains.
constexpr bool two_vectors_fit(int k, bool per_point)
{
    return 2 * (k + (per_point ? 2 * k : k + 1)) <= (W >= 16 ? 22 : 8);
}

int lane_vectors(const KernelData& D)
{
    return D.k <= kMaxFixedK && D.regs >= 2 && two_vectors_fit(D.k, D.per_point) ? 2 : 1;
}

template <int PF, int K>
RunBlockFn pick_lanes(const KernelData& D)
{
    const bool two = lane_vectors(D) == 2;
    if (D.per_point) {
        if constexpr (two_vectors_fit(K, true))
            if (two) return &lanes_fixed_k<PF, K, 2, true>;
        return &lanes_fixed_k<PF, K, 1, true>;
    }
    if constexpr (two_vectors_fit(K, false))
        if (two) return &lanes_fixed_k<PF, K, 2, false>;
    return &lanes_fixed_k<PF, K, 1, false>;
}

template <int PF, int G, int K>
RunBlockFn pick_vppu_k(const KernelData& D)
{
    return D.per_point ? &vppu_fixed_k<PF, G, K, true> : &vppu_fixed_k<PF, G, K, false>;
}

template <int PF, int G>
RunBlockFn pick_vppu(const KernelData& D)
{
    switch (D.k) {
    case 1: return pick_vppu_k<PF, G, 1>(D);
    case 2: return pick_vppu_k<PF, G, 2>(D);
    case 3: return pick_vppu_k<PF, G, 3>(D);
    case 4: return pick_vppu_k<PF, G, 4>(D);
    default: return D.per_point ? &vppu_any_k<PF, G, true> : &vppu_any_k<PF, G, false>;
    }
}

/// The kernel of profile PF for (f_vppu, k, regs, model).
template <int PF>
RunBlockFn select_for_profile(const KernelData& D)
{
    if (D.f_vppu == 1) {
        switch (D.k) {
        case 1: return pick_lanes<PF, 1>(D);
        case 2: return pick_lanes<PF, 2>(D);
        case 3: return pick_lanes<PF, 3>(D);
        case 4: return pick_lanes<PF, 4>(D);
        case 5: return pick_lanes<PF, 5>(D);
        case 6: return pick_lanes<PF, 6>(D);
        case 7: return pick_lanes<PF, 7>(D);
        case 8: return pick_lanes<PF, 8>(D);
        default: return D.per_point ? &lanes_any_k<PF, true> : &lanes_any_k<PF, false>;
        }
    }
    switch (D.f_vppu) {
    case 2: return pick_vppu<PF, 2>(D);
    case 4: return pick_vppu<PF, 4>(D);
#if MS_SIMD_WIDTH >= 8
    case 8: return pick_vppu<PF, 8>(D);
#endif
#if MS_SIMD_WIDTH >= 16
    case 16: return pick_vppu<PF, 16>(D);
#endif
    default: return nullptr;
    }
}

/// Dispatch on the profile once per block (outside the pair loop), then on the shape.
RunBlockFn select_kernel(const KernelData& D)
{
    switch (D.profile) {
    case 0: return select_for_profile<0>(D);  // the Gaussian (vMF arrives here as 0)
#define MS_SELECT_ROW(E, n, N, v, c, a) MS_PROFILE_IF(c, case v : return select_for_profile<v>(D);)
        MS_PROFILE_LIST(MS_SELECT_ROW, ~)
#undef MS_SELECT_ROW
    default: return nullptr;
    }
}

int modes_per_block(const KernelData& D)
{
    if (D.f_vppu == 1) return lane_vectors(D) * W;
    return W / D.f_vppu;
}

std::size_t scratch_bytes(const KernelData& D)
{
    // Largest layout of the kernels above: float64 sums for 2 vectors of modes, plus the
    // any-k vectors (Y, S, X) in front of them, plus 64 bytes of alignment slack.
    const std::size_t k = static_cast<std::size_t>(D.k);
    const std::size_t nc = 2 * k + 1;
    return 2 * nc * W * sizeof(double) + (k + nc + k) * W * sizeof(float) + 64;
}

static_assert(kMaxFixedKVppu <= kMaxFixedK, "vPPU specialisations are a subset");

}  // namespace
}  // namespace meanshift::openmp_detail
