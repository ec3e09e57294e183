// The GEMM form of the step for the shared model (issue 11, docs/high-dimensional.md), k ≤ 128:
// the same products as gemm_kernel.cu,
//   −½|q − p|² = q·p − ½|q|² − ½|p|²,   S0 = Σ e,   S1 = E·P − q S0,
// on fp16 tensor cores (mma.sync m16n8k16: twice the dimensions per instruction of TF32's m16n8k8)
// with the operands split x = hi + lo in fp16 (hi·hi + hi·lo + lo·hi: about 22 significant bits,
// as 3xTF32). The modes' fragments stay in registers for the whole kernel; each staged point tile
// serves both products through ldmatrix (rows for the exponents, transposed for the sums), so a
// point's fp16 copy is written to shared memory once per block.
//
// Range: fp16 holds |x| < 65504. Coordinates are taken relative to the block's median mode and
// scaled by a power of two s that keeps the block's modes below 2^13; a point whose scaled
// coordinate exceeds 2^15 is at least 3·2^13/s bandwidths from every mode of the block (weight 0).
// The weights of each group of 16 points are scaled by their row maximum before the fp16 split
// (e = 2^(x − m) ≤ 1, m the group's largest log2 weight of that mode), and the group's sums are
// scaled back by 2^m in float32: so fp16's narrow exponent costs nothing against a float32 sum.
//
// Skeleton mapping as in gemm_kernel.cu: PPU = block of 16·warps modes, each mode's row held by a
// quad (f_vppu = f_load = 4), row sums reduced by shuffles (Alg. 3 lines 17-18); point slices over
// blockIdx.y add atomically.
#include "backends/cuda/gemm_common.cuh"
#include "backends/cuda/kernel_params.hpp"

#include <cuda_fp16.h>

#include <cstdint>

namespace meanshift::cuda {
namespace {

using gemm::ex2;
using gemm::kLog2e;

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

/// (a, b) → fp16 pairs hi and lo with a ≈ hi.x + lo.x, b ≈ hi.y + lo.y (a in the low half).
__device__ __forceinline__ void split2(float a, float b, std::uint32_t& hi, std::uint32_t& lo)
{
    const __half2 h = __floats2half2_rn(a, b);
    const float2 f = __half22float2(h);
    const __half2 l = __floats2half2_rn(a - f.x, b - f.y);
    hi = *reinterpret_cast<const std::uint32_t*>(&h);
    lo = *reinterpret_cast<const std::uint32_t*>(&l);
}

__device__ __forceinline__ float quad_max(float v)
{
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

/// fp16 hi/lo of a point coordinate v (relative to the block centre, scaled by s) into row j of
/// the tile; returns v² for |p'|², or +inf where the scaled value leaves fp16's safe range.
__device__ __forceinline__ float stage_value(float v, float s, __half* hi, __half* lo)
{
    float vs = v * s;
    const bool far = fabsf(vs) > 32768.0f;
    vs = fminf(fmaxf(vs, -32768.0f), 32768.0f);
    const __half h = __float2half_rn(vs);
    *hi = h;
    *lo = __float2half_rn(vs - __half2float(h));
    return far ? INFINITY : v * v;
}

/// Stage points [t0, t0 + NT) of the slice: fp16 hi/lo rows of p' = x − c (scaled by s) and the
/// point terms pn = L·½|p'|² (+inf: padding or out of range: no weight). Any k: a warp per point,
/// a lane per dimension.
template <int KF, int NT, int LD, int W>
__device__ __forceinline__ void stage_scalar(const GemmParams& p, long long t0, long long p_end, const float* centre,
                                             float s, __half* ph, __half* pl, float* pn, int warp, int lane)
{
    const int k = p.k;
    for (int j = warp; j < NT; j += W) {
        const long long i = t0 + j;
        const bool ok = i < p_end;
        float nrm = 0.0f;
        for (int d = lane; d < KF; d += 32) {
            const float v = (ok && d < k) ? p.points[i * k + d] - centre[d] : 0.0f;
            nrm += stage_value(v, s, ph + j * LD + d, pl + j * LD + d);
        }
        for (int off = 16; off > 0; off /= 2) nrm += __shfl_xor_sync(0xffffffffu, nrm, off);
        if (lane == 0) pn[j] = ok ? 0.5f * kLog2e * nrm : INFINITY;
    }
}

/// The same for k % 4 == 0: 16-byte loads, all issued before the first is used (their latency
/// overlaps), KF/4 consecutive threads per point, |p'|² reduced over them by shuffles.
template <int KF, int NT, int LD, int T>
__device__ __forceinline__ void stage_vec(const GemmParams& p, long long t0, long long p_end, const float* centre,
                                          float s, __half* ph, __half* pl, float* pn, int tid)
{
    constexpr int C = KF / 4;                   // float4 chunks per point row (≤ 32: one warp)
    constexpr int R = NT * C / T;               // chunks per thread
    constexpr int B = R > 8 ? 8 : R;            // loaded together
    const int k = p.k;
    const float4* src = reinterpret_cast<const float4*>(p.points);
#pragma unroll
    for (int r0 = 0; r0 < R; r0 += B) {
        float4 v[B];
#pragma unroll
        for (int r = 0; r < B; ++r) {
            const int c = tid + (r0 + r) * T, j = c / C, q = c % C;
            const long long i = t0 + j;
            v[r] = (i < p_end && 4 * q < k) ? src[(i * k) / 4 + q] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int r = 0; r < B; ++r) {
            const int c = tid + (r0 + r) * T, j = c / C, q = c % C;
            const bool in = 4 * q < k;
            const float4 cq = *reinterpret_cast<const float4*>(centre + 4 * q);
            const float a = in ? v[r].x - cq.x : 0.0f, b = in ? v[r].y - cq.y : 0.0f;
            const float e = in ? v[r].z - cq.z : 0.0f, f = in ? v[r].w - cq.w : 0.0f;
            const float m = fmaxf(fmaxf(fabsf(a), fabsf(b)), fmaxf(fabsf(e), fabsf(f))) * s;
            float nrm = m > 32768.0f ? INFINITY : a * a + b * b + e * e + f * f;
            const float lim = 32768.0f;
            uint2 hi, lo;
            split2(fminf(fmaxf(a * s, -lim), lim), fminf(fmaxf(b * s, -lim), lim), hi.x, lo.x);
            split2(fminf(fmaxf(e * s, -lim), lim), fminf(fmaxf(f * s, -lim), lim), hi.y, lo.y);
            *reinterpret_cast<uint2*>(ph + j * LD + 4 * q) = hi;
            *reinterpret_cast<uint2*>(pl + j * LD + 4 * q) = lo;
#pragma unroll
            for (int off = 1; off < C; off *= 2) nrm += __shfl_xor_sync(0xffffffffu, nrm, off);
            if (q == 0) pn[j] = t0 + j < p_end ? 0.5f * kLog2e * nrm : INFINITY;
        }
    }
}

/// KF = k padded to 16; WARPS warps of 16 modes; NT points per staged tile. Point rows are KF + 8
/// halves apart (16 bytes of padding), which makes every ldmatrix phase free of bank conflicts.
template <int KF>
struct Shape {
    static constexpr int warps = 8;
    static constexpr int bm = 16 * warps;
    static constexpr int nt = 128;
    static constexpr int gt = 4;           // n8 tiles of points per weight group
    static constexpr int ld = KF + 8;      // halves per staged point row
    static constexpr int raw_ld = KF + 4;  // floats per staged mode row (before the tiles)
    static constexpr unsigned long tiles = 2ul * nt * ld * sizeof(__half);  // P hi, P lo
    static constexpr unsigned long raw = sizeof(float) * bm * raw_ld;
    static constexpr unsigned long head = tiles > raw ? tiles : raw;        // the modes alias the tiles
    // + point terms (nt), centre (KF), mode terms (bm), the block's largest |q'|.
    static constexpr unsigned long smem = head + sizeof(float) * (nt + KF + bm + 1);
};

template <int KF, bool VEC, bool TRUNC>
__global__ void __launch_bounds__(Shape<KF>::warps * 32, KF >= 128 ? 1 : 2) gemm_f16_t(const GemmParams p)
{
    using S = Shape<KF>;
    constexpr int LD = S::ld, RL = S::raw_ld, BM = S::bm, NT = S::nt, W = S::warps, T = W * 32, KS = KF / 16;
    constexpr int GT = S::gt;
    extern __shared__ __align__(16) unsigned char smem[];
    __half* ph = reinterpret_cast<__half*>(smem);
    __half* pl = ph + NT * LD;
    float* raw = reinterpret_cast<float*>(smem);
    float* pn = reinterpret_cast<float*>(smem + S::head);  // L·½|p'|² (+inf: no weight)
    float* centre = pn + NT;
    float* qn = centre + KF;                                // L·½|q'|²
    unsigned* qmax = reinterpret_cast<unsigned*>(qn + BM);  // bits of max |q'_d| (non-negative floats order as ints)

    const int k = p.k;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const long long m0 = static_cast<long long>(blockIdx.x) * BM;
    const int bm = static_cast<int>(min(static_cast<long long>(BM), p.count - m0));

    if (tid == 0) *qmax = 0u;
    for (int j = warp; j < BM; j += W)
        for (int d = lane; d < KF; d += 32) raw[j * RL + d] = (j < bm && d < k) ? p.queries[(m0 + j) * k + d] : 0.0f;
    __syncthreads();
    gemm::block_median(raw, RL, bm, KF, centre, tid, T);
    __syncthreads();
    for (int j = warp; j < BM; j += W) {
        float nrm = 0.0f, mx = 0.0f;
        for (int d = lane; d < KF; d += 32) {
            const float v = (j < bm && d < k) ? raw[j * RL + d] - centre[d] : 0.0f;
            raw[j * RL + d] = v;
            nrm += v * v;
            mx = fmaxf(mx, fabsf(v));
        }
        for (int off = 16; off > 0; off /= 2) {
            nrm += __shfl_xor_sync(0xffffffffu, nrm, off);
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        }
        if (lane == 0) {
            qn[j] = 0.5f * kLog2e * nrm;
            atomicMax(qmax, __float_as_uint(mx));
        }
    }
    __syncthreads();
    int e2 = 0;
    frexpf(__uint_as_float(*qmax), &e2);  // max |q'| < 2^e2
    const float s = ldexpf(1.0f, e2 > 13 ? 13 - e2 : 0);
    const float dot_scale = kLog2e / (s * s);  // q'·p' = (s q')·(s p') / s²
    const float inv_s = 1.0f / s;

    // This warp's 16 modes as m16n8k16 A fragments (rows g, g + 8; columns 2t, 2t + 8 of each k-step).
    const int r0 = warp * 16 + g;
    std::uint32_t qh[KS][4], ql[KS][4];
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float* src = raw + (r0 + (i & 1) * 8) * RL + ks * 16 + 2 * t + (i & 2) * 4;
            split2(s * src[0], s * src[1], qh[ks][i], ql[ks][i]);
        }
    const float qa = qn[r0], qb = qn[r0 + 8];

    const long long per_slice = (p.n + gridDim.y - 1) / gridDim.y;
    const long long p_begin = blockIdx.y * per_slice;
    const long long p_end = min(p.n, p_begin + per_slice);

    float acc[KF / 8][4];
#pragma unroll
    for (int i = 0; i < KF / 8; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
    float rs0 = 0.0f, rs1 = 0.0f;  // S0 of rows g and g + 8 (this thread's share)
    const float cut = p.cut_log2;

    for (long long t0 = p_begin; t0 < p_end; t0 += NT) {
        __syncthreads();  // the previous tile (or the staged modes) is consumed
        if (VEC)
            stage_vec<KF, NT, LD, T>(p, t0, p_end, centre, s, ph, pl, pn, tid);
        else
            stage_scalar<KF, NT, LD, W>(p, t0, p_end, centre, s, ph, pl, pn, warp, lane);
        __syncthreads();

        // This warp: 16 modes × NT points in groups of 8·GT (GT n8 tiles of exponents = GT/2 k16
        // steps of the sums), each group with its own weight scale.
#pragma unroll 1
        for (int j0 = 0; j0 < NT; j0 += 8 * GT) {
            float x[GT][4];
#pragma unroll
            for (int h = 0; h < GT; ++h) x[h][0] = x[h][1] = x[h][2] = x[h][3] = 0.0f;
            // Exponents: matrices 0/1 = P hi (dims +0, +8), 2/3 = P lo, rows = the 8 points of tile h.
            const __half* rowp = ((lane & 16) ? pl : ph) + (j0 + (lane & 7)) * LD + (lane & 8);
#pragma unroll
            for (int ks = 0; ks < KS; ++ks)
#pragma unroll
                for (int h = 0; h < GT; ++h) {
                    std::uint32_t b[4];
                    ldsm4<false>(b, rowp + h * 8 * LD + ks * 16);
                    mma(x[h], ql[ks], b[0], b[1]);
                    mma(x[h], qh[ks], b[2], b[3]);
                    mma(x[h], qh[ks], b[0], b[1]);
                }
            // log2 weights; x[h][e]: row g (e < 2) or g + 8, point j0 + 8h + 2t + (e & 1).
            float ma = -INFINITY, mb = -INFINITY;
#pragma unroll
            for (int h = 0; h < GT; ++h)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    // ≤ 0 up to the cancellation (a slightly positive value only scales its group
                    // by slightly more than 1); no NaN: the fp16 operands are finite and pn = +inf
                    // gives −inf.
                    float v = fmaf(dot_scale, x[h][e], -(e < 2 ? qa : qb)) - pn[j0 + 8 * h + 2 * t + (e & 1)];
                    if (TRUNC) v = v < cut ? -INFINITY : v;
                    x[h][e] = v;
                    if (e < 2) ma = fmaxf(ma, v);
                    else mb = fmaxf(mb, v);
                }
            ma = quad_max(ma);
            mb = quad_max(mb);
            if (ma == -INFINITY) ma = 0.0f;  // no weight in this group: every e is 0
            if (mb == -INFINITY) mb = 0.0f;
            // Weights relative to the group's largest (≤ 1) as A fragments of the sums: the C layout
            // of two exponent tiles is the A layout of a 16 × 16 tile (no shuffle). Scaling per group
            // (not by a running maximum) keeps fp16's flush below 2^-24 relative to these 8·GT points.
            std::uint32_t eh[GT / 2][4], el[GT / 2][4];
            float sa = 0.0f, sb = 0.0f;
#pragma unroll
            for (int h = 0; h < GT; ++h) {
                const float e0 = ex2(x[h][0] - ma), e1 = ex2(x[h][1] - ma);
                const float e2w = ex2(x[h][2] - mb), e3 = ex2(x[h][3] - mb);
                sa += e0 + e1;
                sb += e2w + e3;
                split2(e0, e1, eh[h / 2][2 * (h % 2)], el[h / 2][2 * (h % 2)]);
                split2(e2w, e3, eh[h / 2][2 * (h % 2) + 1], el[h / 2][2 * (h % 2) + 1]);
            }
            const float fa = ex2(ma), fb = ex2(mb);
            rs0 += fa * sa;
            rs1 += fb * sb;
            // Sums: acc (16 × KF) += 2^m · E (16 × 8GT) · P (8GT × KF); matrices 0/1 = P hi of points
            // +0 / +8 transposed, 2/3 = P lo.
            const __half* colp = ((lane & 16) ? pl : ph) + (j0 + (lane & 15)) * LD;
#pragma unroll
            for (int nn = 0; nn < KF / 8; ++nn) {
                float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
                for (int kg = 0; kg < GT / 2; ++kg) {
                    std::uint32_t b[4];
                    ldsm4<true>(b, colp + kg * 16 * LD + nn * 8);
                    mma(c, el[kg], b[0], b[1]);
                    mma(c, eh[kg], b[2], b[3]);
                    mma(c, eh[kg], b[0], b[1]);
                }
                acc[nn][0] += fa * c[0];
                acc[nn][1] += fa * c[1];
                acc[nn][2] += fb * c[2];
                acc[nn][3] += fb * c[3];
            }
        }
    }

    // Row sums over the quad (the vPPU reduction), then S0 and S1 relative to the mode.
    for (int off = 1; off < 4; off *= 2) {
        rs0 += __shfl_xor_sync(0xffffffffu, rs0, off);
        rs1 += __shfl_xor_sync(0xffffffffu, rs1, off);
    }
    const int stride = k + 1;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        const int row = r0 + 8 * half;
        if (row >= bm) continue;
        const long long q = m0 + row;
        float* out = p.acc + q * stride;
        const float rs = half ? rs1 : rs0;
        if (t == 0) atomicAdd(out, rs);
#pragma unroll
        for (int nn = 0; nn < KF / 8; ++nn)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int col = nn * 8 + 2 * t + e;
                if (col >= k) continue;
                const float yd = p.queries[q * k + col] - centre[col];
                atomicAdd(out + 1 + col, acc[nn][2 * half + e] * inv_s - yd * rs);
            }
    }
}

template <int KF, bool VEC>
GemmKernel entry(bool truncated)
{
    const void* fn = truncated ? reinterpret_cast<const void*>(&gemm_f16_t<KF, VEC, true>)
                               : reinterpret_cast<const void*>(&gemm_f16_t<KF, VEC, false>);
    return {fn, Shape<KF>::warps * 32, Shape<KF>::bm, Shape<KF>::nt, Shape<KF>::smem};
}

}  // namespace

GemmKernel gemm_f16_kernel(int k, bool truncated)
{
    // 16-byte point loads where rows are 16-byte aligned (k % 4 == 0).
    const bool vec = k % 4 == 0;
    if (k <= 16) return vec ? entry<16, true>(truncated) : entry<16, false>(truncated);
    if (k <= 32) return vec ? entry<32, true>(truncated) : entry<32, false>(truncated);
    if (k <= 64) return vec ? entry<64, true>(truncated) : entry<64, false>(truncated);
    if (k <= 128) return vec ? entry<128, true>(truncated) : entry<128, false>(truncated);
    return {};
}

}  // namespace meanshift::cuda
