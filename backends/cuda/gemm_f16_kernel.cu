// The GEMM form of the step for the shared model (issue 11, docs/high-dimensional.md), k ≤ 256:
//   −½|q − p|² = q·p − ½|q|² − ½|p|²,   S0 = Σ e,   S1 = E·P − q S0,
// on fp16 tensor cores (mma.sync m16n8k16: twice the dimensions per instruction of TF32's m16n8k8)
// with the operands split x = hi + lo in fp16 (hi·hi + hi·lo + lo·hi: about 22 significant bits,
// as 3xTF32). The modes' fragments stay in registers for the whole kernel (in shared memory above
// k = 128); each staged point tile serves both products through ldmatrix (rows for the exponents,
// transposed for the sums), so a point's fp16 copy is written to shared memory once per block.
//
// Range: fp16 holds |x| < 65504. Coordinates are taken relative to the block's median mode and
// scaled by a power of two s that keeps the block's modes below 2^13; a point whose scaled
// coordinate exceeds 2^15 is at least 3·2^13/s bandwidths from every mode of the block (weight 0).
// The weights of each group of 16 or 32 points are scaled by their row maximum before the fp16
// split (e = 2^(x − m) ≤ 1, m the group's largest log2 weight of that mode), and the group's sums
// are scaled back by 2^m in float32: so fp16's narrow exponent costs nothing against a float32 sum.
//
// Skeleton mapping as in gemm_kernel.cu: PPU = block of warps × 16·MT modes, each mode's row held by
// a quad (f_vppu = f_load = 4), row sums reduced by shuffles (Alg. 3 lines 17-18); point slices over
// blockIdx.y add atomically.
#include "backends/cuda/gemm_common.cuh"
#include "backends/cuda/kernel_params.hpp"

#include <cuda_fp16.h>

#include <cstdint>

namespace meanshift::cuda {
namespace {

using gemm::ex2;
using gemm::kLog2e;
using gemm::quad_max;
using gemm::split2;

/// d += a · b for one m16n8k16 fp16 tile (a: 16 × 16 row fragment, b: 16 × 8 column fragment).
__device__ __forceinline__ void mma(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Four 8 × 8 fp16 matrices from shared memory; lane l gives the address of row l % 8 of matrix l / 8.
/// TRANS: each lane receives a column pair instead of a row pair.
template <bool TRANS>
__device__ __forceinline__ void ldsm4(std::uint32_t (&r)[4], const __half* p)
{
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a)
                     : "memory");
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a)
                     : "memory");
}

/// Stage points [t0, t0 + NT) of the slice: fp16 hi/lo rows of p' = x − c scaled by s, and the point
/// terms pn = L·½|p'|² (+inf: padding, or out of fp16's range: no weight). C = KF/(4V) ≤ 32 consecutive
/// threads per point, 4V dimensions each (fixed for the whole kernel: V = 2 above k = 128 keeps a row
/// within one warp), |p'|² reduced over them by shuffles; a batch of loads is issued before the first
/// is used (their latency overlaps). ALIGNED (k % 4 == 0): 16-byte loads. (x − c)·s is one fma with c·s
/// precomputed (s a power of two: exactly s·(x − c)), so |p'|² = |s p'|² / s².
template <int KF>
constexpr int stage_vectors()
{
    return KF > 128 ? 2 : 1;
}

template <int KF, int NT, int LD, int T, bool ALIGNED>
__device__ __forceinline__ void stage_points(const GemmParams& p, long long t0, long long p_end, const float4 (&cs)[2],
                                             float s, float pn_scale, __half* ph, __half* pl, float* pn, int tid)
{
    constexpr int V = stage_vectors<KF>();
    constexpr int C = KF / (4 * V);  // threads per point row
    constexpr int RS = T / C;  // rows per pass of the block
    constexpr int R = NT / RS;  // passes
    constexpr int B = R * V > 8 ? 8 / V : R;  // passes loaded together
    const int k = p.k, q = tid % C, j0 = tid / C;
    const float* src = p.points + (t0 + j0) * k + 4 * V * q;
#pragma unroll
    for (int r0 = 0; r0 < R; r0 += B) {
        float4 v[B][V];
#pragma unroll
        for (int r = 0; r < B; ++r)
#pragma unroll
            for (int u = 0; u < V; ++u) {
                const int d = 4 * (V * q + u);
                const bool ok = d < k && t0 + j0 + (r0 + r) * RS < p_end;
                const float* x = src + static_cast<long long>((r0 + r) * RS) * k + 4 * u;
                if (ALIGNED) {
                    v[r][u] = ok ? *reinterpret_cast<const float4*>(x) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                } else {  // dimensions beyond k read as 0 (their centre is 0 too)
                    v[r][u].x = ok ? x[0] : 0.0f;
                    v[r][u].y = ok && d + 1 < k ? x[1] : 0.0f;
                    v[r][u].z = ok && d + 2 < k ? x[2] : 0.0f;
                    v[r][u].w = ok && d + 3 < k ? x[3] : 0.0f;
                }
            }
#pragma unroll
        for (int r = 0; r < B; ++r) {
            const int j = j0 + (r0 + r) * RS;
            float nrm = 0.0f;
#pragma unroll
            for (int u = 0; u < V; ++u) {
                const bool in = 4 * (V * q + u) < k;
                float a = in ? fmaf(v[r][u].x, s, -cs[u].x) : 0.0f, b = in ? fmaf(v[r][u].y, s, -cs[u].y) : 0.0f;
                float e = in ? fmaf(v[r][u].z, s, -cs[u].z) : 0.0f, f = in ? fmaf(v[r][u].w, s, -cs[u].w) : 0.0f;
                const bool far = fmaxf(fmaxf(fabsf(a), fabsf(b)), fmaxf(fabsf(e), fabsf(f))) > 32768.0f;
                nrm += far ? INFINITY : a * a + b * b + e * e + f * f;
                if (far) a = b = e = f = 0.0f;  // beyond every mode's reach (pn = +inf); finite for the sums
                uint2 hi, lo;
                split2(a, b, hi.x, lo.x);
                split2(e, f, hi.y, lo.y);
                *reinterpret_cast<uint2*>(ph + j * LD + 4 * (V * q + u)) = hi;
                *reinterpret_cast<uint2*>(pl + j * LD + 4 * (V * q + u)) = lo;
            }
#pragma unroll
            for (int off = 1; off < C; off *= 2) nrm += __shfl_xor_sync(0xffffffffu, nrm, off);
            if (q == 0) pn[j] = t0 + j < p_end ? pn_scale * nrm : INFINITY;
        }
    }
}

/// KF = k padded to 16; WARPS warps of MT × 16 modes; NT points per staged tile; weights scaled per
/// group of 8·GT points. Point rows are KF + 8 halves apart (16 bytes of padding), which makes every
/// ldmatrix phase free of bank conflicts. Shapes measured on an H200 (docs/high-dimensional.md):
/// two m-tiles per warp halve the shared-memory loads per mma where the registers allow it; above
/// k = 128 the sums of a warp's modes do not fit its registers next to their fragments: two warps
/// share an m-tile (SPLIT), both compute its exponents, each sums half of the dimensions, and the
/// modes' fragments are read from shared memory.
template <int KF>
struct Shape {
    static constexpr int split = KF > 128 ? 2 : 1;  // warps per m-tile (halves of the sums)
    static constexpr bool qsmem = split > 1;  // mode fragments in shared memory
    static constexpr int mt = (KF == 16 || KF == 64) ? 2 : 1;  // m16 tiles of modes per warp
    static constexpr int warps = KF == 64 ? 4 : 8;
    static constexpr int blocks = KF >= 128 ? 1 : 2;  // per SM (__launch_bounds__)
    static constexpr int bm = 16 * mt * warps / split;
    static constexpr int nt = KF > 128 ? 64 : 128;
    static constexpr int gt = (mt == 2 || qsmem) ? 2 : 4;  // n8 tiles of points per weight group
    static constexpr int ld = KF + 8;  // halves per staged point row
    static constexpr int raw_ld = KF + 4;  // floats per staged mode row (before the tiles)
    static constexpr unsigned long tiles = 2ul * nt * ld * sizeof(__half);  // P hi, P lo
    static constexpr unsigned long raw = sizeof(float) * bm * raw_ld;
    static constexpr unsigned long head = tiles > raw ? tiles : raw;  // the modes alias the tiles
    static constexpr unsigned long qtiles = qsmem ? 2ul * bm * ld * sizeof(__half) : 0;  // Q hi, Q lo
    // + point terms (nt), centre (KF), mode terms (bm), the block's largest |q'|.
    static constexpr unsigned long smem = head + qtiles + sizeof(float) * (nt + KF + bm + 1);
};

template <int KF, bool ALIGNED, bool TRUNC>
__global__ void __launch_bounds__(Shape<KF>::warps * 32, Shape<KF>::blocks) gemm_f16_t(const GemmParams p)
{
    using S = Shape<KF>;
    constexpr int LD = S::ld, RL = S::raw_ld, BM = S::bm, NT = S::nt, W = S::warps, T = W * 32, KS = KF / 16;
    constexpr int GT = S::gt, MT = S::mt, SPLIT = S::split, SC = KF / SPLIT;  // SC: sum columns per warp
    extern __shared__ __align__(16) unsigned char smem[];
    __half* ph = reinterpret_cast<__half*>(smem);
    __half* pl = ph + NT * LD;
    float* raw = reinterpret_cast<float*>(smem);
    __half* qsh = reinterpret_cast<__half*>(smem + S::head);  // Q hi, Q lo (S::qsmem)
    __half* qsl = qsh + (S::qsmem ? BM * LD : 0);
    float* pn = reinterpret_cast<float*>(smem + S::head + S::qtiles);  // L·½|p'|² (+inf: no weight)
    float* centre = pn + NT;
    float* qn = centre + KF;  // L·½|q'|²
    unsigned* qmax = reinterpret_cast<unsigned*>(qn + BM);  // bits of max |q'_d| (non-negative floats order as ints)

    const int k = p.k;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const long long m0 = static_cast<long long>(blockIdx.x) * BM;
    const int bm = static_cast<int>(min(static_cast<long long>(BM), p.count - m0));

    const float s = gemm::stage_modes(p, m0, bm, BM, KF, raw, RL, centre, qn, qmax);
    const float dot_scale = kLog2e / (s * s);  // q'·p' = (s q')·(s p') / s²
    const float pn_scale = 0.5f * dot_scale;  // L·½|p'|² from |s p'|²
    float4 cs[2];  // c·s of this thread's 4V dimensions (stage_points)
    {
        constexpr int V = stage_vectors<KF>();
#pragma unroll
        for (int u = 0; u < 2; ++u) {
            const int d = 4 * (V * (tid % (KF / (4 * V))) + (u < V ? u : 0));
            cs[u] = make_float4(centre[d] * s, centre[d + 1] * s, centre[d + 2] * s, centre[d + 3] * s);
        }
    }
    const float inv_s = 1.0f / s;

    // This warp's MT × 16 modes as m16n8k16 A fragments (rows g, g + 8 of each m-tile; columns
    // 2t, 2t + 8 of each k-step), and the columns [c0, c0 + SC) of the sums it keeps.
    const int r16 = (warp / SPLIT) * 16 * MT;  // the warp's first m-tile
    const int rw = r16 + g;  // row g of it
    const int c0 = (warp % SPLIT) * SC;
    constexpr int QR = S::qsmem ? 1 : MT, QK = S::qsmem ? 1 : KS;
    std::uint32_t qh[QR][QK][4], ql[QR][QK][4];
    float qa[MT], qb[MT];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
        if constexpr (!S::qsmem) {
#pragma unroll
            for (int ks = 0; ks < KS; ++ks)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const float* src = raw + (rw + 16 * mt + (i & 1) * 8) * RL + ks * 16 + 2 * t + (i & 2) * 4;
                    split2(s * src[0], s * src[1], qh[mt][ks][i], ql[mt][ks][i]);
                }
        }
        qa[mt] = qn[rw + 16 * mt];
        qb[mt] = qn[rw + 16 * mt + 8];
    }
    if constexpr (S::qsmem) {  // fp16 hi/lo rows, read by ldmatrix per k-step
        for (int i = tid; i < BM * KF / 2; i += T) {
            const int row = i / (KF / 2), col = 2 * (i % (KF / 2));
            std::uint32_t h, l;
            split2(s * raw[row * RL + col], s * raw[row * RL + col + 1], h, l);
            *reinterpret_cast<std::uint32_t*>(qsh + row * LD + col) = h;
            *reinterpret_cast<std::uint32_t*>(qsl + row * LD + col) = l;
        }
    }

    const long long per_slice = (p.n + gridDim.y - 1) / gridDim.y;
    const long long p_begin = blockIdx.y * per_slice;
    const long long p_end = min(p.n, p_begin + per_slice);

    float acc[MT][SC / 8][4];
    float rs0[MT], rs1[MT];  // S0 of rows g and g + 8 of each m-tile (this thread's share)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
        rs0[mt] = rs1[mt] = 0.0f;
#pragma unroll
        for (int i = 0; i < SC / 8; ++i) acc[mt][i][0] = acc[mt][i][1] = acc[mt][i][2] = acc[mt][i][3] = 0.0f;
    }
    const float cut = p.cut_log2;

    for (long long t0 = p_begin; t0 < p_end; t0 += NT) {
        __syncthreads();  // the previous tile (or the staged modes) is consumed
        stage_points<KF, NT, LD, T, ALIGNED>(p, t0, p_end, cs, s, pn_scale, ph, pl, pn, tid);
        __syncthreads();

        // This warp: MT·16 modes × NT points in groups of 8·GT (GT n8 tiles of exponents = GT/2 k16
        // steps of the sums), each group with its own weight scale per mode. Each point fragment
        // loaded from shared memory serves the MT m-tiles.
#pragma unroll 1
        for (int j0 = 0; j0 < NT; j0 += 8 * GT) {
            float x[MT][GT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int h = 0; h < GT; ++h) x[mt][h][0] = x[mt][h][1] = x[mt][h][2] = x[mt][h][3] = 0.0f;
            // Exponents: matrices 0/1 = P hi (dims +0, +8), 2/3 = P lo, rows = the 8 points of tile h.
            const __half* rowp = ((lane & 16) ? pl : ph) + (j0 + (lane & 7)) * LD + (lane & 8);
#pragma unroll
            for (int ks = 0; ks < KS; ++ks) {
                if constexpr (S::qsmem) {
                    // A fragments: matrices (rows 0-7 | 8-15) × (columns +0 | +8) of the m-tile.
                    const int off = (r16 + (lane & 15)) * LD + ks * 16 + (lane >> 4) * 8;
                    ldsm4<false>(qh[0][0], qsh + off);
                    ldsm4<false>(ql[0][0], qsl + off);
                }
#pragma unroll
                for (int h = 0; h < GT; ++h) {
                    std::uint32_t b[4];
                    ldsm4<false>(b, rowp + h * 8 * LD + ks * 16);
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        const int qm = S::qsmem ? 0 : mt, qk = S::qsmem ? 0 : ks;
                        mma(x[mt][h], ql[qm][qk], b[0], b[1]);
                        mma(x[mt][h], qh[qm][qk], b[2], b[3]);
                        mma(x[mt][h], qh[qm][qk], b[0], b[1]);
                    }
                }
            }
            // log2 weights up to the row's −L·½|q'|², which only scales the group (applied in fa, fb);
            // x[mt][h][e]: row g (e < 2) or g + 8, point j0 + 8h + 2t + (e & 1). No NaN: the fp16
            // operands are finite and pn = +inf gives −inf.
            float fa[MT], fb[MT];
            std::uint32_t eh[MT][GT / 2][4], el[MT][GT / 2][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                float ma = -INFINITY, mb = -INFINITY;
#pragma unroll
                for (int h = 0; h < GT; ++h) {
                    const float2 pn2 = *reinterpret_cast<const float2*>(pn + j0 + 8 * h + 2 * t);
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        float v = fmaf(dot_scale, x[mt][h][e], -((e & 1) ? pn2.y : pn2.x));
                        if (TRUNC) v = v - (e < 2 ? qa[mt] : qb[mt]) < cut ? -INFINITY : v;
                        x[mt][h][e] = v;
                        if (e < 2)
                            ma = fmaxf(ma, v);
                        else
                            mb = fmaxf(mb, v);
                    }
                }
                ma = quad_max(ma);
                mb = quad_max(mb);
                // A slightly positive log2 weight (cancellation) only scales its group by slightly more than 1.
                fa[mt] = ma == -INFINITY ? 0.0f : ex2(ma - qa[mt]);
                fb[mt] = mb == -INFINITY ? 0.0f : ex2(mb - qb[mt]);
                if (ma == -INFINITY) ma = 0.0f;  // no weight in this group: every e is 0
                if (mb == -INFINITY) mb = 0.0f;
                // Weights relative to the group's largest (≤ 1) as A fragments of the sums: the C
                // layout of two exponent tiles is the A layout of a 16 × 16 tile (no shuffle).
                // Scaling per group (not by a running maximum) keeps fp16's flush below 2^-24
                // relative to these 8·GT points.
                float sa = 0.0f, sb = 0.0f;
#pragma unroll
                for (int h = 0; h < GT; ++h) {
                    const float e0 = ex2(x[mt][h][0] - ma), e1 = ex2(x[mt][h][1] - ma);
                    const float e2w = ex2(x[mt][h][2] - mb), e3 = ex2(x[mt][h][3] - mb);
                    sa += e0 + e1;
                    sb += e2w + e3;
                    split2(e0, e1, eh[mt][h / 2][2 * (h % 2)], el[mt][h / 2][2 * (h % 2)]);
                    split2(e2w, e3, eh[mt][h / 2][2 * (h % 2) + 1], el[mt][h / 2][2 * (h % 2) + 1]);
                }
                rs0[mt] += fa[mt] * sa;
                rs1[mt] += fb[mt] * sb;
            }
            // Sums: acc (16 × KF) += 2^m · E (16 × 8GT) · P (8GT × KF) per m-tile; matrices 0/1 = P hi
            // of points +0 / +8 transposed, 2/3 = P lo.
            const __half* colp = ((lane & 16) ? pl : ph) + (j0 + (lane & 15)) * LD + c0;
#pragma unroll
            for (int nn = 0; nn < SC / 8; ++nn) {
                float c[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) c[mt][0] = c[mt][1] = c[mt][2] = c[mt][3] = 0.0f;
#pragma unroll
                for (int kg = 0; kg < GT / 2; ++kg) {
                    std::uint32_t b[4];
                    ldsm4<true>(b, colp + kg * 16 * LD + nn * 8);
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma(c[mt], el[mt][kg], b[0], b[1]);
                        mma(c[mt], eh[mt][kg], b[2], b[3]);
                        mma(c[mt], eh[mt][kg], b[0], b[1]);
                    }
                }
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    acc[mt][nn][0] += fa[mt] * c[mt][0];
                    acc[mt][nn][1] += fa[mt] * c[mt][1];
                    acc[mt][nn][2] += fb[mt] * c[mt][2];
                    acc[mt][nn][3] += fb[mt] * c[mt][3];
                }
            }
        }
    }

    // Row sums over the quad (the vPPU reduction), then S0 and S1 relative to the mode.
    const int stride = k + 1;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
        for (int off = 1; off < 4; off *= 2) {
            rs0[mt] += __shfl_xor_sync(0xffffffffu, rs0[mt], off);
            rs1[mt] += __shfl_xor_sync(0xffffffffu, rs1[mt], off);
        }
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = rw + 16 * mt + 8 * half;
            if (row >= bm) continue;
            const long long q = m0 + row;
            float* out = p.acc + q * stride;
            const float rs = half ? rs1[mt] : rs0[mt];
            if (t == 0 && c0 == 0) atomicAdd(out, rs);  // S0 once per mode (both halves computed it)
#pragma unroll
            for (int nn = 0; nn < SC / 8; ++nn)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int col = c0 + nn * 8 + 2 * t + e;
                    if (col >= k) continue;
                    const float yd = p.queries[q * k + col] - centre[col];
                    atomicAdd(out + 1 + col, acc[mt][nn][2 * half + e] * inv_s - yd * rs);
                }
        }
    }
}

template <int KF, bool ALIGNED>
GemmKernel entry(bool truncated)
{
    const void* fn = truncated ? reinterpret_cast<const void*>(&gemm_f16_t<KF, ALIGNED, true>)
                               : reinterpret_cast<const void*>(&gemm_f16_t<KF, ALIGNED, false>);
    return {fn, Shape<KF>::warps * 32, Shape<KF>::bm, Shape<KF>::nt, Shape<KF>::smem};
}

}  // namespace

GemmKernel gemm_f16_kernel(int k, bool truncated)
{
    // 16-byte point loads where rows are 16-byte aligned (k % 4 == 0).
    const bool vec = k % 4 == 0;  // rows 16-byte aligned: float4 loads
    if (k <= 16) return vec ? entry<16, true>(truncated) : entry<16, false>(truncated);
    if (k <= 32) return vec ? entry<32, true>(truncated) : entry<32, false>(truncated);
    if (k <= 64) return vec ? entry<64, true>(truncated) : entry<64, false>(truncated);
    if (k <= 128) return vec ? entry<128, true>(truncated) : entry<128, false>(truncated);
    if (k <= 256) return vec ? entry<256, true>(truncated) : entry<256, false>(truncated);
    return {};
}

}  // namespace meanshift::cuda
