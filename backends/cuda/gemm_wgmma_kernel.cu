// The GEMM form of the step for the shared model on Hopper's asynchronous warpgroup MMA (wgmma,
// sm_90a only: compiled for that target alone and launched only on compute capability 9.0), k = 33-64
// with k % 4 == 0 (issue 11, docs/high-dimensional.md). The arithmetic is gemm_f16_kernel.cu's:
//   −½|q − p|² = q·p − ½|q|² − ½|p|²,   S0 = Σ e,   S1 = E·P − q S0,
// fp16 operands split x = hi + lo (hi·hi + hi·lo + lo·hi, ~22 significant bits), coordinates
// relative to the block's median mode and scaled by a power of two, weights scaled per group of 64
// points by their row maximum (so fp16's narrow exponent costs nothing against float32 sums).
// What differs is how the products run:
//   - each warpgroup (4 warps, 64 modes) issues m64n64k16 products asynchronously: the modes' fp16
//     fragments from registers, the point tile from shared memory through matrix descriptors;
//   - one staged copy of a point tile serves both products: as the K-major operand of the
//     exponents (K = dimensions) and as the MN-major operand of the sums (K = points), in the
//     unswizzled core-matrix layout (8 points × 8 dimensions, 128 bytes each);
//   - the float32 rows of the next tile arrive by cp.async a step ahead, and their fp16 copy is made
//     while the tensor cores run the current tile's products (double-buffered), so staging is in
//     the shadow of the MMAs.
// Measured on an H200 (`meanshift bench --exact --dims 64 -b cuda`, with and without
// `--tune cuda.wgmma=0`; docs/high-dimensional.md): kernels 5.3e11 pairs/s at k = 64, n = 262,144,
// 1.19× the mma.sync kernel. A probe of the same design at k = 16 and 32 (one warpgroup per block)
// was 0.93× and 1.03× the mma.sync kernel, so only 64-dimension rows take this one.
//
// Skeleton mapping: PPU = block of 2 warpgroups × 64 modes (128), each mode's row held by a quad of
// a warp (f_vppu = f_load = 4), row sums reduced by shuffles (Alg. 3 lines 17-18); point slices over
// blockIdx.y add atomically, as in the other GEMM kernels.
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

/// d (64 × 64 float32 accumulators of the warpgroup; this thread's 32) += a · B, a: this warp's
/// 16 × 16 fp16 rows in registers (the mma.sync A layout), B: 16 × 64 fp16 in shared memory by
/// descriptor. MN = 0: B is K-major, 1: MN-major. scale_d = 0: d = a · B (the accumulators' old
/// values ignored).
template <int MN>
__device__ __forceinline__ void wgmma64(float (&d)[32], const std::uint32_t (&a)[4], std::uint64_t desc, int scale_d)
{
    static_assert(MN == 0 || MN == 1, "B is K-major (0) or MN-major (1)");
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,"
                 "%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, %38;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(scale_d), "n"(MN));
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
/// Shared-memory writes of the generic proxy made visible to the asynchronous proxy (wgmma).
__device__ __forceinline__ void proxy_fence()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/// 16 bytes global → shared, asynchronously; src_bytes = 0 writes zeros.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes)
{
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
}

/// Shared-memory matrix descriptor without swizzle: start address, leading and stride byte offsets
/// (each >> 4, 14 bits). K-major: LBO steps between the two 8-column halves of K, SBO between
/// 8-row groups of N; MN-major: LBO steps along K, SBO along N (measured: the other assignment reads
/// outside the tile).
__device__ __forceinline__ std::uint64_t desc(const void* p, unsigned lbo, unsigned sbo)
{
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
    return std::uint64_t((a >> 4) & 0x3fff) | (std::uint64_t((lbo >> 4) & 0x3fff) << 16) |
           (std::uint64_t((sbo >> 4) & 0x3fff) << 32);
}

/// Half-offset of point j, dimension d in a tile: core matrices of 8 points × 8 dimensions (128
/// bytes, 16 per point), the KF/8 dimension blocks of a point block contiguous, point blocks KF·16
/// bytes apart.
template <int KF>
__device__ __forceinline__ int tile_off(int j, int d)
{
    return ((j >> 3) * (KF / 8) + (d >> 3)) * 64 + (j & 7) * 8 + (d & 7);
}

/// Two warpgroups of 64 modes share each tile of NT points, products in chunks of CH points.
template <int KF>
struct WShape {
    static constexpr int T = 256, BM = 128, NT = 128, CH = 64;
    static constexpr int raw_ld = KF + 4;  // floats per staged mode row
    static constexpr unsigned long tile = 2ul * NT * KF * sizeof(__half);  // P hi, P lo of one tile
    static constexpr unsigned long tiles = 2 * tile;  // double-buffered
    static constexpr unsigned long raw = sizeof(float) * BM * raw_ld;  // the modes (prologue only)
    static constexpr unsigned long head = tiles > raw ? tiles : raw;
    static constexpr int rp_ld = KF + 4;  // floats per fetched point row (padding: conflict-free reads)
    static constexpr unsigned long rawp = sizeof(float) * NT * rp_ld;  // one float32 tile (two buffers)
    // + point terms (2 × NT), centre and c·s (2 × KF), mode terms (BM), the block's largest |q'|.
    static constexpr unsigned long smem = head + 2 * rawp + sizeof(float) * (2 * NT + 2 * KF + BM + 1);
};

template <int KF, bool TRUNC>
__global__ void __launch_bounds__(WShape<KF>::T, 1) gemm_wgmma_t(const GemmParams p)
{
    using S = WShape<KF>;
    constexpr int W = S::T / 32;
    constexpr int RL = S::raw_ld, BM = S::BM, NT = S::NT, T = S::T, KS = KF / 16, CH = S::CH;
    extern __shared__ __align__(16) unsigned char smem[];
    __half* tiles = reinterpret_cast<__half*>(smem);  // buffer b: P hi at b·2·NT·KF, P lo NT·KF after
    float* raw = reinterpret_cast<float*>(smem);  // the modes (prologue only; aliases the fp16 tiles)
    float* rawp = reinterpret_cast<float*>(smem + S::head);  // two float32 tiles (cp.async targets)
    float* pnb = rawp + 2 * NT * S::rp_ld;  // L·½|p'|² per buffer (+inf: no weight)
    float* centre = pnb + 2 * NT;
    float* csh = centre + KF;  // c·s
    float* qn = csh + KF;
    unsigned* qmax = reinterpret_cast<unsigned*>(qn + BM);

    const int k = p.k;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const long long m0 = static_cast<long long>(blockIdx.x) * BM;
    const int bm = static_cast<int>(min(static_cast<long long>(BM), p.count - m0));

    const long long per_slice = (p.n + gridDim.y - 1) / gridDim.y;
    const long long p_begin = blockIdx.y * per_slice;
    const long long p_end = min(p.n, p_begin + per_slice);
    // Rows [t0, t0 + NT) of the slice into float32 buffer t0 / NT % 2, asynchronously (rows past
    // the end: zeros). Always one commit group, empty past the end, so wait_group counts stay fixed.
    auto fetch = [&](long long t0) {
        float* dst = rawp + ((t0 - p_begin) / NT % 2) * NT * S::rp_ld;
        if (t0 < p_end)
            for (int i = tid; i < NT * (KF / 4); i += T) {
                const int row = i / (KF / 4), ch = i % (KF / 4);
                const bool ok = t0 + row < p_end && 4 * ch < k;
                const float* src = ok ? p.points + (t0 + row) * k + 4 * ch : p.points;
                cp_async16(dst + row * S::rp_ld + 4 * ch, src, ok ? 16 : 0);
            }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    fetch(p_begin);
    fetch(p_begin + NT);
    const float s = gemm::stage_modes(p, m0, bm, BM, KF, raw, RL, centre, qn, qmax);
    const float dot_scale = kLog2e / (s * s);
    const float pn_scale = 0.5f * dot_scale;
    const float inv_s = 1.0f / s;
    constexpr int C = KF / 4;  // 4-dimension chunks per point row
    for (int d = tid; d < KF; d += T) csh[d] = centre[d] * s;
    __syncthreads();
    // Pass r (of NT / (8 W)) of the fp16 copy of tile t0: hi/lo of s(x - c) in the core-matrix layout,
    // and pn = L·½|p'|². Each warp takes 8 points per pass, lane l point l % 8 and the chunks
    // l / 8 + 4i: a warp's 8-byte stores then fill every bank twice (no conflict), and |p'|² is
    // complete after two shuffles.
    auto convert = [&](long long t0, int r) {
        const int b = (t0 - p_begin) / NT % 2;
        const float* src = rawp + b * NT * S::rp_ld;
        __half* ph = tiles + b * 2 * NT * KF;
        __half* pl = ph + NT * KF;
        const int j = 8 * (warp + W * r) + lane % 8;
        float nrm = t0 + j < p_end ? 0.0f : INFINITY;
#pragma unroll
        for (int i = 0; i < C / 4; ++i) {
            const int ch = lane / 8 + 4 * i;
            const float4 v = *reinterpret_cast<const float4*>(src + j * S::rp_ld + 4 * ch);
            const float4 cs = *reinterpret_cast<const float4*>(csh + 4 * ch);
            float a = fmaf(v.x, s, -cs.x), bb = fmaf(v.y, s, -cs.y);
            float e = fmaf(v.z, s, -cs.z), f = fmaf(v.w, s, -cs.w);
            const bool far = fmaxf(fmaxf(fabsf(a), fabsf(bb)), fmaxf(fabsf(e), fabsf(f))) > 32768.0f;
            nrm += far ? INFINITY : a * a + bb * bb + e * e + f * f;
            if (far) a = bb = e = f = 0.0f;
            uint2 hi, lo;
            split2(a, bb, hi.x, lo.x);
            split2(e, f, hi.y, lo.y);
            const int off = tile_off<KF>(j, 4 * ch);
            *reinterpret_cast<uint2*>(ph + off) = hi;
            *reinterpret_cast<uint2*>(pl + off) = lo;
        }
        nrm += __shfl_xor_sync(0xffffffffu, nrm, 8);
        nrm += __shfl_xor_sync(0xffffffffu, nrm, 16);
        if (lane < 8) pnb[b * NT + j] = pn_scale * nrm;
    };

    const int rw = warp * 16 + g;  // warpgroup warp / 4 holds modes 64 (warp / 4) + [0, 64)
    std::uint32_t qh[KS][4], ql[KS][4];
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float* src = raw + (rw + (i & 1) * 8) * RL + ks * 16 + 2 * t + (i & 2) * 4;
            split2(s * src[0], s * src[1], qh[ks][i], ql[ks][i]);
        }
    const float qa = qn[rw], qb = qn[rw + 8];

    float acc[KF / 2];
#pragma unroll
    for (int i = 0; i < KF / 2; ++i) acc[i] = 0.0f;
    float rs0 = 0.0f, rs1 = 0.0f;
    const float cut = p.cut_log2;

    // Prologue: tile 0 in fp16. Then each step computes tile i while converting tile i + 1 (its
    // float32 rows fetched a step earlier) in the shadows of the two asynchronous products.
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
    __syncthreads();  // tile 0's rows are in (and the modes' staging area is free)
#pragma unroll
    for (int r = 0; r < NT / (8 * W); ++r) convert(p_begin, r);
    proxy_fence();
    __syncthreads();

    for (long long t0 = p_begin; t0 < p_end; t0 += NT) {
        const int buf = (t0 - p_begin) / NT % 2;
        const __half* ph = tiles + buf * 2 * NT * KF;
        const __half* pl = ph + NT * KF;
        const float* pn = pnb + buf * NT;
        const long long t1 = t0 + NT;
        fetch(t1 + NT);  // into the float32 buffer of tile i, converted in the previous step
        asm volatile("cp.async.wait_group 1;\n" ::: "memory");
        __syncthreads();  // tile i + 1's rows are in, for every thread
#pragma unroll 1
        for (int c0 = 0; c0 < NT; c0 += CH) {
            // Exponents: 64 modes x 64 points.
            float x[32];
            wg_fence();
#pragma unroll
            for (int ks = 0; ks < KS; ++ks) {
                // K-major B (K = dims): core matrices adjacent in K 128 B apart (LBO), point blocks KF*16 B (SBO).
                const std::uint64_t dh = desc(ph + tile_off<KF>(c0, 16 * ks), 128, KF * 16);
                const std::uint64_t dl = desc(pl + tile_off<KF>(c0, 16 * ks), 128, KF * 16);
                wgmma64<0>(x, ql[ks], dh, ks > 0);
                wgmma64<0>(x, qh[ks], dl, 1);
                wgmma64<0>(x, qh[ks], dh, 1);
            }
            wg_commit();
            if (c0 == 0 && t1 < p_end) convert(t1, 0);
            wg_wait0();
            // x[4j + e]: row g (e < 2) or g + 8, point c0 + 8j + 2t + (e & 1).
            float ma = -INFINITY, mb = -INFINITY;
#pragma unroll
            for (int jn = 0; jn < 8; ++jn) {
                const float2 pn2 = *reinterpret_cast<const float2*>(pn + c0 + 8 * jn + 2 * t);
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
            if (ma == -INFINITY) ma = 0.0f;
            if (mb == -INFINITY) mb = 0.0f;
            std::uint32_t eh[4][4], el[4][4];
            float sa = 0.0f, sb = 0.0f;
#pragma unroll
            for (int jn = 0; jn < 8; ++jn) {
                const float e0 = ex2(x[4 * jn] - ma), e1 = ex2(x[4 * jn + 1] - ma);
                const float e2w = ex2(x[4 * jn + 2] - mb), e3 = ex2(x[4 * jn + 3] - mb);
                sa += e0 + e1;
                sb += e2w + e3;
                split2(e0, e1, eh[jn / 2][2 * (jn % 2)], el[jn / 2][2 * (jn % 2)]);
                split2(e2w, e3, eh[jn / 2][2 * (jn % 2) + 1], el[jn / 2][2 * (jn % 2) + 1]);
            }
            rs0 += fa * sa;
            rs1 += fb * sb;
            // Sums: 64 modes x KF dims over the 64 points (K = points: MN-major B, dims contiguous).
            float cacc[KF / 2];
#pragma unroll
            for (int i = 0; i < KF / 2; ++i) cacc[i] = 0.0f;
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                const unsigned along_n = 128, along_k = KF * 16;
                const unsigned lbo = along_k, sbo = along_n;  // MN-major: LBO steps along K
                const std::uint64_t dh = desc(ph + tile_off<KF>(c0 + 16 * kk, 0), lbo, sbo);
                const std::uint64_t dl = desc(pl + tile_off<KF>(c0 + 16 * kk, 0), lbo, sbo);
                wgmma64<1>(cacc, el[kk], dh, kk > 0);
                wgmma64<1>(cacc, eh[kk], dl, 1);
                wgmma64<1>(cacc, eh[kk], dh, 1);
            }
            wg_commit();
            if (c0 == 0 && t1 < p_end) convert(t1, 1);
            wg_wait0();
#pragma unroll
            for (int jn = 0; jn < KF / 8; ++jn) {
                acc[4 * jn] += fa * cacc[4 * jn];
                acc[4 * jn + 1] += fa * cacc[4 * jn + 1];
                acc[4 * jn + 2] += fb * cacc[4 * jn + 2];
                acc[4 * jn + 3] += fb * cacc[4 * jn + 3];
            }
        }
        proxy_fence();
        __syncthreads();  // tile i + 1 in fp16 for every thread; tile i's buffers are free
    }

    const int stride = k + 1;
    for (int off = 1; off < 4; off *= 2) {
        rs0 += __shfl_xor_sync(0xffffffffu, rs0, off);
        rs1 += __shfl_xor_sync(0xffffffffu, rs1, off);
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        const int row = rw + 8 * half;
        if (row >= bm) continue;
        const long long q = m0 + row;
        float* out = p.acc + q * stride;
        const float rs = half ? rs1 : rs0;
        if (t == 0) atomicAdd(out, rs);
#pragma unroll
        for (int jn = 0; jn < KF / 8; ++jn)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int col = jn * 8 + 2 * t + e;
                if (col >= k) continue;
                const float yd = p.queries[q * k + col] - centre[col];
                atomicAdd(out + 1 + col, acc[4 * jn + 2 * half + e] * inv_s - yd * rs);
            }
    }
}

template <bool TRUNC>
GemmKernel entry()
{
    return {reinterpret_cast<const void*>(&gemm_wgmma_t<64, TRUNC>), WShape<64>::T, WShape<64>::BM, WShape<64>::NT,
            WShape<64>::smem};
}

}  // namespace

GemmKernel gemm_wgmma_kernel(int k, bool truncated)
{
    // Rows padded to 64 dimensions (k = 33..64, 16-byte aligned rows for cp.async): 1.18-1.21× the
    // mma.sync kernel there (which pads to 64 as well); at k ≤ 32 the design measured 0.93-1.03×, and
    // k > 64 is not written.
    if (k <= 32 || k > 64 || k % 4 != 0) return {};
    return truncated ? entry<true>() : entry<false>();
}

}  // namespace meanshift::cuda
