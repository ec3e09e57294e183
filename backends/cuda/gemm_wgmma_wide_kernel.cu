// The GEMM form of the step for the shared model on Hopper's warpgroup MMA (wgmma, sm_90a only, as
// gemm_wgmma_kernel.cu) for k = 129-512, where the modes' fragments no longer fit the registers
// beside the sums. The arithmetic is gemm_f16_kernel.cu's:
//   −½|q − p|² = q·p − ½|q|² − ½|p|²,   S0 = Σ e,   S1 = E·P − q S0,
// fp16 operands split x = hi + lo (hi·hi + hi·lo + lo·hi, ~22 significant bits), coordinates
// relative to the block's median mode and scaled by a power of two, weights scaled per group of
// points (the tile) by their row maximum. What differs from the 64-dimension kernel:
//   - both operands of the exponents come from shared memory by descriptor (the modes' fp16 hi/lo
//     rows are staged once per block in the core-matrix layout of the points), so no register
//     holds a mode's k dimensions;
//   - the sums go straight into the accumulators (64 modes × the warpgroup's dimensions, one
//     register a thread per 2 dimensions) without a per-group copy: the accumulators are kept
//     relative to a reference log2 weight per mode, the current group's maximum, and rescaled by
//     2^(old − new) when it changes (as flash attention does with its running maximum). A group
//     whose maximum is more than 2^64 below the largest weight seen adds nothing (its weights are
//     < 2^-64 of S0), so a rescale factor stays within [0, 2^64] and the sums within float32's range;
//   - SPLIT = 1 (k ≤ 256): two warpgroups of 64 modes each (128 per block), tiles of 64 points, each
//     warpgroup all dimensions; SPLIT = 2 (k = 257-512): the two warpgroups share 64 modes and split
//     the dimensions: each computes the exponents over its half (the partial 64 × 32 tiles are added
//     through shared memory, so both hold the same weights) and the sums of its half, tiles of 32
//     points (shared memory: the modes' and the points' fp16 rows of all k dimensions).
// Skeleton mapping: PPU = block of 2 warpgroups (τ = 256), each mode's row held by a quad of a warp
// (f_vppu = f_load = 4), row sums reduced by shuffles (Alg. 3 lines 17-18); SPLIT = 2: a mode is
// served by two quads, one per warpgroup, with disjoint dimensions of the sums; point tiles staged
// once for both warpgroups and both products (Alg. 7); point slices over blockIdx.y add atomically,
// as in the other GEMM kernels.
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

/// d (64 × 64 float32 accumulators of the warpgroup) += A · B, both fp16 in shared memory by
/// K-major descriptors. scale_d = 0: d = A · B.
__device__ __forceinline__ void wgmma_ss(float (&d)[32], std::uint64_t da, std::uint64_t db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,"
                 "%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "r"(scale_d));
}

/// wgmma_ss with N = 32 (16 accumulators a thread).
__device__ __forceinline__ void wgmma_ss(float (&d)[16], std::uint64_t da, std::uint64_t db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "l"(da), "l"(db), "r"(scale_d));
}

/// d += a · B, a: this warp's 16 × 16 fp16 rows in registers (the mma.sync A layout), B: 16 × 64
/// fp16 in shared memory, MN-major (the dimensions contiguous).
__device__ __forceinline__ void wgmma_rs(float (&d)[32], const std::uint32_t (&a)[4], std::uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,"
                 "%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

__device__ __forceinline__ void wg_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_wait0()
{
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
__device__ __forceinline__ void proxy_fence()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/// The descriptor of the matrix `halves` fp16 values after the one whose start field is `base`
/// (shared address >> 4): the start field is linear in the address (tiles below 256 KiB).
template <unsigned LBO, unsigned SBO>
__device__ __forceinline__ std::uint64_t desc_at(unsigned base, int halves)
{
    return std::uint64_t((base + static_cast<unsigned>(halves) / 8u) & 0x3fff) |
           (std::uint64_t((LBO >> 4) & 0x3fff) << 16) | (std::uint64_t((SBO >> 4) & 0x3fff) << 32);
}

/// Half-offset of row j (a point or a mode), dimension d: core matrices of 8 rows × 8 dimensions
/// (128 bytes), the KF/8 dimension blocks of a row block contiguous, row blocks KF·16 bytes apart.
template <int KF>
__device__ __forceinline__ int tile_off(int j, int d)
{
    return ((j >> 3) * (KF / 8) + (d >> 3)) * 64 + (j & 7) * 8 + (d & 7);
}

/// KF = k padded to 64 (SPLIT = 1) or 128 (SPLIT = 2: 64-dimension slices of the sums per half).
template <int KF, int SPLIT>
struct WWShape {
    static constexpr int T = 256, BM = 128 / SPLIT, NT = 64 / SPLIT;
    static constexpr int hp = 64 / NT;  // warps that stage one point row (dimension parts)
    static constexpr unsigned long q_bytes = 2ul * BM * KF * 2;  // Q hi, Q lo
    static constexpr unsigned long p_bytes = 2ul * NT * KF * 2;  // P hi, P lo
    static constexpr unsigned long x_bytes = SPLIT == 2 ? 4ul * T * NT / 2 : 0;  // partial exponents
    // Columns of the modes staged at once for the median (aliasing the point tile).
    static constexpr int cw = 4ul * BM * (128 + 4) <= p_bytes ? 128 : 4ul * BM * (64 + 4) <= p_bytes ? 64 : 32;
    static_assert(4ul * BM * (cw + 4) <= p_bytes, "the modes' staging must fit the point tile");
    static_assert(KF % (64 * SPLIT) == 0 && (KF / 16) % hp == 0, "dimension padding");
    // + point terms (hp parts × NT), centre and s·centre (2 KF), mode terms (BM), the block's largest |q'|.
    static constexpr unsigned long smem = q_bytes + p_bytes + x_bytes + 4ul * (hp * NT + 2 * KF + BM + 4);
};

template <int KF, int SPLIT, bool TRUNC>
__global__ void __launch_bounds__(WWShape<KF, SPLIT>::T, 1) gemm_wgmma_wide_t(const GemmParams p)
{
    using S = WWShape<KF, SPLIT>;
    constexpr int T = S::T, W = T / 32, BM = S::BM, NT = S::NT, CW = S::cw, HP = S::hp;
    constexpr int KS = KF / 16 / SPLIT;  // k16 steps of a warpgroup's exponents
    constexpr int NS = KF / 64 / SPLIT;  // 64-dimension slices of a warpgroup's sums
    constexpr int NX = NT / 2, NJ = NT / 8, KK = NT / 16;  // exponent accumulators, n8 tiles, k16 steps of the sums
    extern __shared__ __align__(16) unsigned char smem[];
    __half* qh = reinterpret_cast<__half*>(smem);
    __half* ql = qh + BM * KF;
    __half* ph = ql + BM * KF;
    __half* pl = ph + NT * KF;
    float* xs = reinterpret_cast<float*>(smem + S::q_bytes + S::p_bytes);  // SPLIT = 2: [warpgroup][i][thread]
    float* pnp = reinterpret_cast<float*>(smem + S::q_bytes + S::p_bytes + S::x_bytes);  // L·½|p'|² by part
    float* centre = pnp + HP * NT;
    float* cs = centre + KF;  // s·centre
    float* qn = cs + KF;  // L·½|q'|²
    unsigned* qmax = reinterpret_cast<unsigned*>(qn + BM);
    float* raw = reinterpret_cast<float*>(ph);  // the modes' columns, before the first tile

    const int k = p.k;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const long long m0 = static_cast<long long>(blockIdx.x) * BM;
    const int bm = static_cast<int>(min(static_cast<long long>(BM), p.count - m0));
    const float* qsrc = p.queries + m0 * k;

    // The block centre (per-dimension lower median of its modes), CW columns at a time.
    if (tid == 0) *qmax = 0u;
    for (int c0 = 0; c0 < KF; c0 += CW) {
        const int cw = min(CW, KF - c0);
        __syncthreads();
        for (int i = tid; i < BM * cw; i += T) {
            const int j = i / cw, d = c0 + i % cw;
            raw[j * (CW + 4) + i % cw] = (j < bm && d < k) ? qsrc[static_cast<long long>(j) * k + d] : 0.0f;
        }
        __syncthreads();
        gemm::block_median(raw, CW + 4, bm, cw, centre + c0, tid, T);
    }
    __syncthreads();
    for (int j = warp; j < BM; j += W) {  // L·½|q'|² and the largest |q'_d|, one warp a mode
        float nrm = 0.0f, mx = 0.0f;
        if (j < bm)
            for (int d = lane; d < k; d += 32) {
                const float v = qsrc[static_cast<long long>(j) * k + d] - centre[d];
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
    const float dot_scale = kLog2e / (s * s);
    const float pn_scale = 0.5f * dot_scale;
    const float inv_s = 1.0f / s;
    for (int d = tid; d < KF; d += T) cs[d] = centre[d] * s;
    for (int i = tid; i < BM * KF / 2; i += T) {  // the modes' fp16 hi/lo rows of s·q'
        const int j = i / (KF / 2), d = 2 * (i % (KF / 2));
        const bool ok = j < bm;
        const float a = ok && d < k ? (qsrc[static_cast<long long>(j) * k + d] - centre[d]) * s : 0.0f;
        const float b = ok && d + 1 < k ? (qsrc[static_cast<long long>(j) * k + d + 1] - centre[d + 1]) * s : 0.0f;
        std::uint32_t h, l;
        split2(a, b, h, l);
        *reinterpret_cast<std::uint32_t*>(qh + tile_off<KF>(j, d)) = h;
        *reinterpret_cast<std::uint32_t*>(ql + tile_off<KF>(j, d)) = l;
    }

    const long long per_slice = (p.n + gridDim.y - 1) / gridDim.y;
    const long long p_begin = blockIdx.y * per_slice;
    const long long p_end = min(p.n, p_begin + per_slice);
    const bool aligned = k % 4 == 0;

    // Tile t0 in fp16: warp w stages point 8 (w % NJ) + l % 8, part w / NJ of its dimensions, lane l
    // the 4-dimension chunks l / 8 + 4i (8-byte stores that fill every bank twice: no conflict), and
    // that part of pn = L·½|p'|².
    auto convert = [&](long long t0) {
        const int j = 8 * (warp % NJ) + lane % 8, part = warp / NJ;
        const bool ok = t0 + j < p_end;
        const float* src = p.points + (ok ? t0 + j : 0) * k;
        float nrm = ok ? 0.0f : INFINITY;
        constexpr int CH = KF / 16 / HP, CB = 8;  // chunks per lane, loaded CB at a time (latencies overlap)
#pragma unroll
        for (int i0 = 0; i0 < CH; i0 += CB) {
            float4 v[CB];
#pragma unroll
            for (int i = 0; i < CB; ++i) {
                const int d = 4 * (lane / 8 + 4 * (part * CH + i0 + i));
                v[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (i0 + i < CH && ok && d < k) {
                    if (aligned) {
                        v[i] = *reinterpret_cast<const float4*>(src + d);
                    } else {
                        v[i].x = src[d];
                        v[i].y = d + 1 < k ? src[d + 1] : 0.0f;
                        v[i].z = d + 2 < k ? src[d + 2] : 0.0f;
                        v[i].w = d + 3 < k ? src[d + 3] : 0.0f;
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < CB; ++i) {
                if (i0 + i >= CH) continue;
                const int d = 4 * (lane / 8 + 4 * (part * CH + i0 + i));
                const float4 c = *reinterpret_cast<const float4*>(cs + d);
                float a = fmaf(v[i].x, s, -c.x), b = fmaf(v[i].y, s, -c.y);
                float e = fmaf(v[i].z, s, -c.z), f = fmaf(v[i].w, s, -c.w);
                const bool far = fmaxf(fmaxf(fabsf(a), fabsf(b)), fmaxf(fabsf(e), fabsf(f))) > 32768.0f;
                nrm += far ? INFINITY : a * a + b * b + e * e + f * f;
                if (far) a = b = e = f = 0.0f;  // beyond every mode's reach (pn = +inf); finite for the sums
                uint2 hi, lo;
                split2(a, b, hi.x, lo.x);
                split2(e, f, hi.y, lo.y);
                const int off = tile_off<KF>(j, d);
                *reinterpret_cast<uint2*>(ph + off) = hi;
                *reinterpret_cast<uint2*>(pl + off) = lo;
            }
        }
        nrm += __shfl_xor_sync(0xffffffffu, nrm, 8);
        nrm += __shfl_xor_sync(0xffffffffu, nrm, 16);
        if (lane < 8) pnp[part * NT + j] = pn_scale * nrm;
    };

    const int wg = warp / 4;  // warpgroup
    // Rows rw and rw + 8 of the block; SPLIT = 1: warpgroup wg holds modes 64·wg + [0, 64), SPLIT = 2
    // both hold modes [0, 64) and warpgroup wg the dimensions [wg·KF/2, (wg + 1)·KF/2).
    const int rw = (SPLIT == 1 ? warp : warp % 4) * 16 + g;
    const int mrow = SPLIT == 1 ? 64 * wg : 0, d0 = SPLIT == 1 ? 0 : wg * (KF / 2);
    const float qa = qn[rw], qb = qn[rw + 8];
    float acc[NS][32];
#pragma unroll
    for (int nn = 0; nn < NS; ++nn)
#pragma unroll
        for (int i = 0; i < 32; ++i) acc[nn][i] = 0.0f;
    float rs0 = 0.0f, rs1 = 0.0f;
    // Per row: the accumulators' reference log2 weight and the largest group maximum so far.
    float ra = -INFINITY, rb = -INFINITY, ma_all = -INFINITY, mb_all = -INFINITY;
    const float cut = p.cut_log2;
    auto field = [](const void* ptr) { return static_cast<unsigned>(__cvta_generic_to_shared(ptr)) >> 4; };
    const unsigned qh0 = field(qh + tile_off<KF>(mrow, d0)), ql0 = field(ql + tile_off<KF>(mrow, d0));
    const unsigned ph0 = field(ph + tile_off<KF>(0, d0)), pl0 = field(pl + tile_off<KF>(0, d0));

    for (long long t0 = p_begin; t0 < p_end; t0 += NT) {
        __syncthreads();  // the previous tile (or the modes' staging) is consumed
        convert(t0);
        proxy_fence();
        __syncthreads();
        // Exponents: 64 modes × NT points over the warpgroup's dimensions, both operands K-major in
        // shared memory.
        // The descriptors' bases pass through an empty asm each tile: derived inside the loop, the
        // 4·KS + 2·NS·KK descriptors are not all hoisted out of it into registers (spills).
        unsigned qhb = qh0, qlb = ql0, phb = ph0, plb = pl0;
        asm volatile("" : "+r"(qhb), "+r"(qlb), "+r"(phb), "+r"(plb));
        float x[NX];
        wg_fence();
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) {
            const int o = tile_off<KF>(0, 16 * ks);
            const std::uint64_t dqh = desc_at<128, KF * 16>(qhb, o), dql = desc_at<128, KF * 16>(qlb, o);
            const std::uint64_t dph = desc_at<128, KF * 16>(phb, o), dpl = desc_at<128, KF * 16>(plb, o);
            wgmma_ss(x, dql, dph, ks > 0);
            wgmma_ss(x, dqh, dpl, 1);
            wgmma_ss(x, dqh, dph, 1);
        }
        wg_commit();
        wg_wait0();
        if constexpr (SPLIT == 2) {  // add the other warpgroup's half (same fragment layout)
            const int tw = tid % 128;
#pragma unroll
            for (int i = 0; i < NX; ++i) xs[(wg * NX + i) * 128 + tw] = x[i];
            __syncthreads();
#pragma unroll
            for (int i = 0; i < NX; ++i) x[i] += xs[((1 - wg) * NX + i) * 128 + tw];
        }
        // x[4j + e]: row rw (e < 2) or rw + 8, point 8j + 2t + (e & 1).
        float ma = -INFINITY, mb = -INFINITY;
#pragma unroll
        for (int jn = 0; jn < NJ; ++jn) {
            float2 pn2 = *reinterpret_cast<const float2*>(pnp + 8 * jn + 2 * t);
            if constexpr (HP == 2) {
                const float2 o2 = *reinterpret_cast<const float2*>(pnp + NT + 8 * jn + 2 * t);
                pn2.x += o2.x;
                pn2.y += o2.y;
            }
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                float v = fmaf(dot_scale, x[4 * jn + e], -((e & 1) ? pn2.y : pn2.x));
                if (TRUNC) v = v - (e < 2 ? qa : qb) < cut ? -INFINITY : v;
                x[4 * jn + e] = v;
                if (e < 2)
                    ma = fmaxf(ma, v);
                else
                    mb = fmaxf(mb, v);
            }
        }
        ma = quad_max(ma);
        mb = quad_max(mb);
        const float fa = ma == -INFINITY ? 0.0f : ex2(ma - qa);
        const float fb = mb == -INFINITY ? 0.0f : ex2(mb - qb);
        // A group more than 2^64 below the largest weight seen adds nothing (skip: e = 0); otherwise its
        // maximum becomes the row's reference and the accumulators are rescaled to it (factor ≤ 2^64).
        ma_all = fmaxf(ma_all, ma);
        mb_all = fmaxf(mb_all, mb);
        const bool use_a = ma != -INFINITY && ma >= ma_all - 64.0f;
        const bool use_b = mb != -INFINITY && mb >= mb_all - 64.0f;
        const float ca = use_a ? ex2(ra - ma) : 1.0f, cb = use_b ? ex2(rb - mb) : 1.0f;  // ra = −inf: 0 (acc is 0)
        if (use_a) ra = ma;
        if (use_b) rb = mb;
        const float sha = use_a ? ma : INFINITY, shb = use_b ? mb : INFINITY;  // e = 2^(x − ∞) = 0 when skipped
        std::uint32_t eh[KK][4], el[KK][4];
        float sa = 0.0f, sb = 0.0f;
#pragma unroll
        for (int jn = 0; jn < NJ; ++jn) {
            const float e0 = ex2(x[4 * jn] - sha), e1 = ex2(x[4 * jn + 1] - sha);
            const float e2w = ex2(x[4 * jn + 2] - shb), e3 = ex2(x[4 * jn + 3] - shb);
            sa += e0 + e1;
            sb += e2w + e3;
            split2(e0, e1, eh[jn / 2][2 * (jn % 2)], el[jn / 2][2 * (jn % 2)]);
            split2(e2w, e3, eh[jn / 2][2 * (jn % 2) + 1], el[jn / 2][2 * (jn % 2) + 1]);
        }
        rs0 += fa * sa;
        rs1 += fb * sb;
        if (__any_sync(0xffffffffu, ca != 1.0f || cb != 1.0f))
#pragma unroll
            for (int nn = 0; nn < NS; ++nn)
#pragma unroll
                for (int jn = 0; jn < 8; ++jn) {
                    acc[nn][4 * jn] *= ca;
                    acc[nn][4 * jn + 1] *= ca;
                    acc[nn][4 * jn + 2] *= cb;
                    acc[nn][4 * jn + 3] *= cb;
                }
        // Sums: 64 modes × the warpgroup's dimensions over the NT points (K = points: MN-major B,
        // dimensions contiguous), in 64-dimension slices.
        wg_fence();
#pragma unroll
        for (int nn = 0; nn < NS; ++nn)
#pragma unroll
            for (int kk = 0; kk < KK; ++kk) {
                const int o = tile_off<KF>(16 * kk, 64 * nn);  // from (0, d0)
                const std::uint64_t dh = desc_at<KF * 16, 128>(phb, o), dl = desc_at<KF * 16, 128>(plb, o);
                wgmma_rs(acc[nn], el[kk], dh);
                wgmma_rs(acc[nn], eh[kk], dl);
                wgmma_rs(acc[nn], eh[kk], dh);
            }
        wg_commit();
        wg_wait0();
    }

    // S1 = 2^(r − L·½|q'|²) · acc, taken as 2^(m − L·½|q'|²) · 2^(r − m) with m the largest group
    // maximum (r ≥ m − 64: no underflow of the second factor where the first is a normal number).
    const int stride = k + 1;
    for (int off = 1; off < 4; off *= 2) {
        rs0 += __shfl_xor_sync(0xffffffffu, rs0, off);
        rs1 += __shfl_xor_sync(0xffffffffu, rs1, off);
    }
    const float Fa = ma_all == -INFINITY ? 0.0f : ex2(ma_all - qa) * ex2(ra - ma_all);
    const float Fb = mb_all == -INFINITY ? 0.0f : ex2(mb_all - qb) * ex2(rb - mb_all);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        const int row = rw + 8 * half;
        if (row >= bm) continue;
        const long long q = m0 + row;
        float* out = p.acc + q * stride;
        const float rs = half ? rs1 : rs0;
        const float F = (half ? Fb : Fa) * inv_s;
        if (t == 0 && (SPLIT == 1 || wg == 0)) atomicAdd(out, rs);  // S0 once per mode
#pragma unroll
        for (int nn = 0; nn < NS; ++nn)
#pragma unroll
            for (int jn = 0; jn < 8; ++jn)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int col = d0 + 64 * nn + jn * 8 + 2 * t + e;
                    if (col >= k) continue;
                    const float yd = p.queries[q * k + col] - centre[col];
                    atomicAdd(out + 1 + col, acc[nn][4 * jn + 2 * half + e] * F - yd * rs);
                }
    }
}

template <int KF, int SPLIT>
GemmKernel entry(bool truncated)
{
    const void* fn = truncated ? reinterpret_cast<const void*>(&gemm_wgmma_wide_t<KF, SPLIT, true>)
                               : reinterpret_cast<const void*>(&gemm_wgmma_wide_t<KF, SPLIT, false>);
    using S = WWShape<KF, SPLIT>;
    return {fn, S::T, S::BM, S::NT, S::smem};
}

}  // namespace

GemmKernel gemm_wgmma_wide_kernel(int k, bool truncated)
{
    if (k <= 128 || k > 512) return {};
    if (k <= 192) return entry<192, 1>(truncated);
    if (k <= 256) return entry<256, 1>(truncated);
    return k <= 384 ? entry<384, 2>(truncated) : entry<512, 2>(truncated);
}

}  // namespace meanshift::cuda
