// The GEMM form of the step for the shared model at high k (k = 257 … 1,024; any k the
// device's shared memory holds), the same arithmetic as gemm_f16_kernel.cu
//   −½|q − p|² = q·p − ½|q|² − ½|p|²,   S0 = Σ e,   S1 = E·P − q S0,
// on fp16 tensor cores (mma.sync m16n8k16, operands split x = hi + lo: hi·hi + hi·lo + lo·hi, about
// 22 significant bits), but tiled over the dimensions so that nothing scales with k in registers:
//
//  - a block of 16 warps holds BM = 64 modes (k ≤ 512) or 32 (fp16 hi/lo rows in shared memory) and
//    stages NT = 16 points at a time (32 at k = 513-640; fp16 hi/lo rows of all k dimensions);
//  - exponents: the BM × NT tile is split over the k16 steps: warp w computes the 16 × NT tile of
//    its m-tile (w % (BM/16)) over one of 16/(BM/16) shares of the dimensions (A fragments of the
//    modes and B fragments of the points by ldmatrix), the partial tiles are summed in shared memory;
//  - weights: one thread per (mode, point), BM·NT/512 each: log2 weight, the row maximum of the NT
//    points (the group scale of gemm_f16_kernel.cu: e = 2^(x − m) ≤ 1 in fp16, 2^m applied in
//    float32), fp16 hi/lo weights into shared memory;
//  - sums: warp w owns the columns [w·KF/16, (w + 1)·KF/16) of all BM modes (BM·KF/512 accumulators
//    per thread: 64 at k = 1,024 or 512), B fragments by transposed ldmatrix of the same staged rows.
// So every staged point serves BM modes for both products; the accumulators of BM modes × KF
// dimensions are spread over the 16 warps (the fp16 kernel keeps a mode's whole row in one warp,
// which stops at k = 256).
//
// Range and accuracy as in gemm_f16_kernel.cu: coordinates relative to the block's per-dimension
// median mode, scaled by a power of two s that keeps the modes below 2^13; a point with four
// consecutive scaled coordinates whose squares sum beyond 2^30 (one beyond 2^14) is more than 2^13/s
// bandwidths from every mode of the block (weight 0). As in the fp16 kernel, a weight whose tile
// factor 2^(m − L/2·|q'|²) is below 2^-126 flushes to 0: a mode whose nearest point is beyond ~13
// bandwidths gets no support (NoSupport), as the other GPU kernels document.
//
// Skeleton mapping: PPU = block (τ = 512 threads, BM modes); a mode's row is served by NT PUs in
// the weight step (a vPPU of NT whose maximum and S0 are reduced by shuffles) and by the 16 warps'
// column shares in the sums (disjoint outputs, no reduction); point tiles are staged (Alg. 7);
// point slices over blockIdx.y add their sums atomically.
#include "backends/cuda/gemm_common.cuh"
#include "backends/cuda/kernel_params.hpp"

#include <cuda_fp16.h>

#include <cstdint>

namespace meanshift::cuda {
namespace {

using gemm::ex2;
using gemm::kLog2e;
using gemm::split2;

__device__ __forceinline__ void mma(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Four 8 × 8 fp16 matrices from shared memory; lane l gives the address of row l % 8 of matrix l / 8.
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

/// KF = k padded to a multiple of 128 (whole k16 steps per warp share of the exponents, 128-wide
/// float4 rows in the staging); BM modes (32 or 64) × NT points (16 or 32) per block. Rows of the
/// staged matrices are KF + 8 halves apart (conflict-free ldmatrix), the weight tile's rows NT + 8.
template <int KF, int BM, int NT, int W = 16>
struct WideShape {
    static constexpr int warps = W, threads = 32 * warps;
    static constexpr int blocks = W == 16 ? 1 : 2;  // per SM (launch bounds: 128 registers a thread)
    static constexpr int bm = BM, nt = NT;
    static constexpr int mt = BM / 16;  // m-tiles of 16 modes
    static constexpr int nb = NT / 8;  // n8 tiles of points in the exponents
    static constexpr int ld = KF + 8;
    static constexpr int eld = NT + 8;
    static constexpr int splits = warps / mt;  // K shares of the exponents
    static constexpr unsigned long q_bytes = 2ul * BM * ld * 2;  // Q hi, Q lo
    static constexpr unsigned long p_bytes = 2ul * NT * ld * 2;  // P hi, P lo
    static constexpr unsigned long x_bytes = 4ul * splits * BM * NT;  // partial exponents
    static constexpr unsigned long e_bytes = 2ul * BM * eld * 2;  // E hi, E lo
    // Columns of the modes staged at once for the median: the widest that the point tiles alias.
    static constexpr int cw = 4ul * BM * (256 + 4) <= p_bytes + x_bytes   ? 256
                              : 4ul * BM * (128 + 4) <= p_bytes + x_bytes ? 128
                                                                          : 64;
    static constexpr unsigned long raw_bytes = 4ul * BM * (cw + 4);  // aliases P and the partials
    static_assert(raw_bytes <= p_bytes + x_bytes, "the modes' staging must fit the point tiles");
    static_assert(BM % 32 == 0 && NT % 16 == 0 && NT <= 32 && NT % W == 0 && (KF / 16) % splits == 0 &&
                      (KF / W) % 8 == 0,
                  "block shape");
    // + group scales (BM), point terms (NT), centre and s·centre (2 KF), mode terms (BM), S0 (BM), max |q'|.
    static constexpr unsigned long smem =
        q_bytes + p_bytes + x_bytes + e_bytes + 4ul * (BM + NT + 2 * KF + BM + BM + 4);
};

template <int KF, int BM, int NT, int WARPS, bool TRUNC>
__global__ void __launch_bounds__(WideShape<KF, BM, NT, WARPS>::threads, WideShape<KF, BM, NT, WARPS>::blocks)
    gemm_wide_t(const GemmParams p)
{
    using S = WideShape<KF, BM, NT, WARPS>;
    constexpr int LD = S::ld, ELD = S::eld, T = S::threads, W = S::warps, MT = S::mt, NB = S::nb;
    constexpr int KS = KF / 16, KW = KS / S::splits;  // k16 steps, per K share
    constexpr int SC = KF / W, SCN = SC / 8;  // sum columns per warp, n8 tiles of them
    constexpr int KT = NT / 16;  // k16 steps of the sums (over the tile's points)
    constexpr int V = KF / 128;  // float4 per lane per staged row
    constexpr int RW = NT / W;  // staged rows per warp
    constexpr int RS = T / NT, RP = BM / RS;  // weight step: rows per pass, passes
    extern __shared__ __align__(16) unsigned char smem[];
    __half* qsh = reinterpret_cast<__half*>(smem);
    __half* qsl = qsh + BM * LD;
    __half* ph = qsl + BM * LD;
    __half* pl = ph + NT * LD;
    float* xs = reinterpret_cast<float*>(smem + S::q_bytes + S::p_bytes);
    __half* eh = reinterpret_cast<__half*>(smem + S::q_bytes + S::p_bytes + S::x_bytes);
    __half* el = eh + BM * ELD;
    float* fs = reinterpret_cast<float*>(smem + S::q_bytes + S::p_bytes + S::x_bytes + S::e_bytes);
    float* pn = fs + BM;
    float* centre = pn + NT;
    float* cs = centre + KF;  // s·centre: staging takes s·(x − c) as one fma (s a power of two: exact)
    float* qn = cs + KF;
    float* s0 = qn + BM;
    unsigned* qmax = reinterpret_cast<unsigned*>(s0 + BM);
    float* raw = reinterpret_cast<float*>(ph);  // the modes' columns, before the first tile

    const int k = p.k;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const long long m0 = static_cast<long long>(blockIdx.x) * BM;
    const int bm = static_cast<int>(min(static_cast<long long>(BM), p.count - m0));
    const float* qsrc = p.queries + m0 * k;

    // The block centre: the per-dimension lower median of its modes (gemm::block_median), staged
    // S::cw columns at a time.
    if (tid == 0) *qmax = 0u;
    for (int c0 = 0; c0 < KF; c0 += S::cw) {
        const int cw = min(S::cw, KF - c0);
        __syncthreads();
        for (int i = tid; i < BM * cw; i += T) {
            const int j = i / cw, d = c0 + i % cw;
            raw[j * (S::cw + 4) + i % cw] = (j < bm && d < k) ? qsrc[static_cast<long long>(j) * k + d] : 0.0f;
        }
        __syncthreads();
        gemm::block_median(raw, S::cw + 4, bm, cw, centre + c0, tid, T);
    }
    __syncthreads();
    // L·½|q'|² and the largest |q'_d| of the block, one warp a mode.
    for (int j = warp; j < BM; j += W) {
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
            atomicMax(qmax, __float_as_uint(mx));  // non-negative floats order as their bits
        }
    }
    __syncthreads();
    int e2 = 0;
    frexpf(__uint_as_float(*qmax), &e2);  // max |q'| < 2^e2
    const float s = ldexpf(1.0f, e2 > 13 ? 13 - e2 : 0);
    const float dot_scale = kLog2e / (s * s);  // q'·p' = (s q')·(s p') / s²
    const float pn_scale = 0.5f * dot_scale;  // L·½|p'|² from |s p'|²
    const float inv_s = 1.0f / s;
    for (int d = tid; d < KF; d += T) cs[d] = centre[d] * s;
    // The modes as fp16 hi/lo rows of s·q' (zero rows and columns beyond bm and k).
    for (int i = tid; i < BM * KF / 2; i += T) {
        const int j = i / (KF / 2), d = 2 * (i % (KF / 2));
        const bool ok = j < bm;
        const float a = ok && d < k ? (qsrc[static_cast<long long>(j) * k + d] - centre[d]) * s : 0.0f;
        const float b = ok && d + 1 < k ? (qsrc[static_cast<long long>(j) * k + d + 1] - centre[d + 1]) * s : 0.0f;
        std::uint32_t h, l;
        split2(a, b, h, l);
        *reinterpret_cast<std::uint32_t*>(qsh + j * LD + d) = h;
        *reinterpret_cast<std::uint32_t*>(qsl + j * LD + d) = l;
    }

    const long long per_slice = (p.n + gridDim.y - 1) / gridDim.y;
    const long long p_begin = blockIdx.y * per_slice;
    const long long p_end = min(p.n, p_begin + per_slice);
    const bool aligned = (k % 4) == 0;  // rows 16-byte aligned: float4 loads (warp-uniform)

    // Exponent share of this warp: m-tile em, k16 steps [KW·ek, KW·(ek + 1)).
    const int em = warp % MT, ek = warp / MT;
    // Weight step: thread ↔ (modes wr + RS·r, point wj).
    const int wr = tid / NT, wj = tid % NT;
    float qw[RP], s0p[RP];  // each row's L·½|q'|² and this thread's share of its S0
#pragma unroll
    for (int r = 0; r < RP; ++r) {
        qw[r] = qn[wr + RS * r];
        s0p[r] = 0.0f;
    }
    // Sums: columns [c0, c0 + SC) of every m-tile.
    const int c0 = warp * SC;
    float acc[MT][SCN][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int i = 0; i < SCN; ++i) acc[mt][i][0] = acc[mt][i][1] = acc[mt][i][2] = acc[mt][i][3] = 0.0f;
    const float cut = p.cut_log2;

    // Staging: warp w stages points t0 + w + W·r of each tile (rows of KF dimensions), VB float4 per
    // lane at a time. Where the registers allow (PF) the next tile's rows are loaded into registers
    // while this tile is computed (their latency overlaps the products).
    // Registers (launch bounds: 128 a thread): the sums' BM·KF/T accumulators are live throughout;
    // the prefetched rows only where they fit beside them.
    constexpr int VB = V < 4 ? V : 4;
    constexpr bool PF = V <= 4 && BM * KF / T + 16 * RW + 4 * NB <= 72;
    auto fetch = [&](long long tt, int u0, float4* v) {
        const long long i = tt;
        const bool ok = i < p_end;
        const float* src = p.points + i * k;
#pragma unroll
        for (int u = 0; u < VB; ++u) {
            const int d = 4 * (lane + 32 * (u0 + u));
            if (!ok || d >= k || u0 + u >= V) {
                v[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            } else if (aligned) {
                v[u] = *reinterpret_cast<const float4*>(src + d);
            } else {
                v[u].x = src[d];
                v[u].y = d + 1 < k ? src[d + 1] : 0.0f;
                v[u].z = d + 2 < k ? src[d + 2] : 0.0f;
                v[u].w = d + 3 < k ? src[d + 3] : 0.0f;
            }
        }
    };
    auto put = [&](int j, int u0, const float4* v, float& nrm) {
#pragma unroll
        for (int u = 0; u < VB; ++u) {
            if (u0 + u >= V) continue;
            const int d = 4 * (lane + 32 * (u0 + u));
            const float4 c = *reinterpret_cast<const float4*>(cs + d);
            // Dimensions beyond k: x = 0 and centre 0, so 0.
            float a = fmaf(v[u].x, s, -c.x), b = fmaf(v[u].y, s, -c.y), e = fmaf(v[u].z, s, -c.z);
            float f = fmaf(v[u].w, s, -c.w);
            const float n4 = a * a + b * b + e * e + f * f;
            // Four coordinates whose squares exceed 2^30: one of them beyond 2^14, so the point is more
            // than 2^13/s bandwidths from every mode (weight 0); below, every one is within fp16's range.
            const bool far = n4 > 1073741824.0f;
            nrm += far ? INFINITY : n4;
            if (far) a = b = e = f = 0.0f;  // pn = +inf; finite for the sums
            uint2 hi, lo;
            split2(a, b, hi.x, lo.x);
            split2(e, f, hi.y, lo.y);
            *reinterpret_cast<uint2*>(ph + j * LD + d) = hi;
            *reinterpret_cast<uint2*>(pl + j * LD + d) = lo;
        }
    };
    float4 next[RW][VB];
    if (PF)
#pragma unroll
        for (int r = 0; r < RW; ++r) fetch(p_begin + warp + W * r, 0, next[r]);

    for (long long t0 = p_begin; t0 < p_end; t0 += NT) {
        __syncthreads();  // the previous tile's points and weights (or the modes' staging) are consumed
#pragma unroll
        for (int r = 0; r < RW; ++r) {
            const int j = warp + W * r;
            float nrm = 0.0f;
            if (PF) {
                put(j, 0, next[r], nrm);
            } else {
#pragma unroll
                for (int u0 = 0; u0 < V; u0 += VB) {
                    float4 v[VB];
                    fetch(t0 + j, u0, v);
                    put(j, u0, v, nrm);
                }
            }
            for (int off = 16; off > 0; off /= 2) nrm += __shfl_xor_sync(0xffffffffu, nrm, off);
            if (lane == 0) pn[j] = t0 + j < p_end ? pn_scale * nrm : INFINITY;
        }
        __syncthreads();
        if (PF)
#pragma unroll
            for (int r = 0; r < RW; ++r) fetch(t0 + NT + warp + W * r, 0, next[r]);  // zeros beyond the slice

        // Exponents: partial 16 × NT tile of m-tile em over this warp's K share. (One accumulator per
        // split term, three independent chains, measured no faster on the H100.)
        {
            float x[NB][4];
#pragma unroll
            for (int h = 0; h < NB; ++h) x[h][0] = x[h][1] = x[h][2] = x[h][3] = 0.0f;
            const int qoff = (em * 16 + (lane & 15)) * LD + (lane >> 4) * 8;
            const __half* rowp = ((lane & 16) ? pl : ph) + (lane & 7) * LD + (lane & 8);
#pragma unroll 2
            for (int ks = KW * ek; ks < KW * (ek + 1); ++ks) {
                std::uint32_t ah[4], al[4];
                ldsm4<false>(ah, qsh + qoff + ks * 16);
                ldsm4<false>(al, qsl + qoff + ks * 16);
#pragma unroll
                for (int h = 0; h < NB; ++h) {
                    std::uint32_t b[4];
                    ldsm4<false>(b, rowp + h * 8 * LD + ks * 16);
                    mma(x[h], al, b[0], b[1]);
                    mma(x[h], ah, b[2], b[3]);
                    mma(x[h], ah, b[0], b[1]);
                }
            }
            // x[h][e]: row g (e < 2) or g + 8 of m-tile em, point 8h + 2t + (e & 1).
            float* dst = xs + (ek * BM + em * 16 + g) * NT + 2 * t;
#pragma unroll
            for (int h = 0; h < NB; ++h) {
                *reinterpret_cast<float2*>(dst + 8 * h) = make_float2(x[h][0], x[h][1]);
                *reinterpret_cast<float2*>(dst + 8 * NT + 8 * h) = make_float2(x[h][2], x[h][3]);
            }
        }
        __syncthreads();

        // Weights of (mode wr + RS·r, point wj), relative to the row's largest of the tile (≤ 1 in fp16).
#pragma unroll
        for (int r = 0; r < RP; ++r) {
            const int row = wr + RS * r;
            float xsum = 0.0f;
#pragma unroll
            for (int i = 0; i < S::splits; ++i) xsum += xs[(i * BM + row) * NT + wj];
            // No NaN: the fp16 operands are finite; pn = +inf gives −inf.
            float v = fmaf(dot_scale, xsum, -pn[wj]);
            if (TRUNC) v = v - qw[r] < cut ? -INFINITY : v;
            float m = v;
#pragma unroll
            for (int off = NT / 2; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
            // A slightly positive log2 weight (cancellation) only scales the tile by slightly more than 1.
            const float f = m == -INFINITY ? 0.0f : ex2(m - qw[r]);
            const float e = m == -INFINITY ? 0.0f : ex2(v - m);
            s0p[r] += f * e;
            const __half hi = __float2half_rn(e);
            eh[row * ELD + wj] = hi;
            el[row * ELD + wj] = __float2half_rn(e - __half2float(hi));
            if (wj == 0) fs[row] = f;
        }
        __syncthreads();

        // Sums: acc (BM × SC) += diag(f) · E (BM × NT) · P (NT × SC), two m-tiles at a time; matrices
        // 0/1 = P hi of points +0 / +8 transposed, 2/3 = P lo.
#pragma unroll
        for (int mp = 0; mp < MT; mp += 2) {
            std::uint32_t ah[2][KT][4], al[2][KT][4];
            float fa[2], fb[2];
#pragma unroll
            for (int j = 0; j < 2; ++j) {
#pragma unroll
                for (int kt = 0; kt < KT; ++kt) {
                    const int off = ((mp + j) * 16 + (lane & 15)) * ELD + (lane >> 4) * 8 + 16 * kt;
                    ldsm4<false>(ah[j][kt], eh + off);
                    ldsm4<false>(al[j][kt], el + off);
                }
                fa[j] = fs[(mp + j) * 16 + g];
                fb[j] = fs[(mp + j) * 16 + g + 8];
            }
            const __half* colp = ((lane & 16) ? pl : ph) + (lane & 15) * LD + c0;
#pragma unroll
            for (int nn = 0; nn < SCN; ++nn) {
                std::uint32_t b[KT][4];
#pragma unroll
                for (int kt = 0; kt < KT; ++kt) ldsm4<true>(b[kt], colp + 16 * kt * LD + nn * 8);
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
                    for (int kt = 0; kt < KT; ++kt) {
                        mma(c, al[j][kt], b[kt][0], b[kt][1]);
                        mma(c, ah[j][kt], b[kt][2], b[kt][3]);
                        mma(c, ah[j][kt], b[kt][0], b[kt][1]);
                    }
                    acc[mp + j][nn][0] += fa[j] * c[0];
                    acc[mp + j][nn][1] += fa[j] * c[1];
                    acc[mp + j][nn][2] += fb[j] * c[2];
                    acc[mp + j][nn][3] += fb[j] * c[3];
                }
            }
        }
    }

    // S0 of each mode over its NT PUs (the vPPU reduction), then S0 and S1 relative to the mode.
#pragma unroll
    for (int r = 0; r < RP; ++r)
#pragma unroll
        for (int off = NT / 2; off > 0; off /= 2) s0p[r] += __shfl_xor_sync(0xffffffffu, s0p[r], off);
    __syncthreads();
    if (wj == 0)
#pragma unroll
        for (int r = 0; r < RP; ++r) s0[wr + RS * r] = s0p[r];
    __syncthreads();
    const int stride = k + 1;
    if (tid < bm) atomicAdd(p.acc + (m0 + tid) * stride, s0[tid]);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = mt * 16 + g + 8 * half;
            if (row >= bm) continue;
            const long long q = m0 + row;
            float* out = p.acc + q * stride;
            const float rs = s0[row];
#pragma unroll
            for (int nn = 0; nn < SCN; ++nn)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int col = c0 + nn * 8 + 2 * t + e;
                    if (col >= k) continue;
                    const float yd = p.queries[q * k + col] - centre[col];
                    atomicAdd(out + 1 + col, acc[mt][nn][2 * half + e] * inv_s - yd * rs);
                }
        }
}

template <int KF, int BM, int NT, int W = 16>
GemmKernel entry(bool truncated)
{
    const void* fn = truncated ? reinterpret_cast<const void*>(&gemm_wide_t<KF, BM, NT, W, true>)
                               : reinterpret_cast<const void*>(&gemm_wide_t<KF, BM, NT, W, false>);
    using S = WideShape<KF, BM, NT, W>;
    return {fn, S::threads, S::bm, S::nt, S::smem};
}

}  // namespace

GemmKernel gemm_wide_kernel(int k, bool truncated, unsigned long smem_limit)
{
    // 64 modes per block up to k = 512 (each staged point serves twice as many modes: half the point
    // traffic and twice the products between two barriers; above, their sums would not fit the
    // registers), 32 beyond and where the device's shared memory is smaller; 32-point tiles at
    // k = 513-640. Kernel probe on one H100 (n = 131,072): k = 384 / 512 / 640 4.59 / 3.31 / 2.07e10
    // pairs/s against 3.54 / 2.79 / 1.96e10 for 32 × 16 (the probe apps/bench/cuda_wide_probe.cu, removed in c456a0f).
    GemmKernel g;
    if (k <= 256)
        g = entry<256, 32, 16>(truncated);  // where the fp16 kernel does not fit the device
    else if (k <= 384)
        g = entry<384, 64, 16>(truncated);
    else if (k <= 512)
        g = entry<512, 64, 16>(truncated);
    else if (k <= 640)
        g = entry<640, 32, 32>(truncated);
    else if (k <= 768)
        g = entry<768, 32, 16>(truncated);
    else if (k <= 1024)
        g = entry<1024, 32, 16>(truncated);
    if (g.fn && g.smem > smem_limit && (g.modes == 64 || g.points == 32))
        g = k <= 384   ? entry<384, 32, 16>(truncated)
            : k <= 512 ? entry<512, 32, 16>(truncated)
                       : entry<640, 32, 16>(truncated);
    return g.smem <= smem_limit ? g : GemmKernel{};
}

GemmKernel gemm_wide_kernel_shape(int k, int modes, int points, int threads);  // the probe's declaration
GemmKernel gemm_wide_kernel_shape(int k, int modes, int points, int threads)
{
    // Block shapes the kernel probe compares (the probe apps/bench/cuda_wide_probe.cu, removed in c456a0f), exact kernel only.
    // (8 warps with two blocks per SM, WideShape<.., 8>, measured 0.78-0.94× of 64 × 16 at k = 384-512.)
    if (threads != 512) return {};
    if (modes == 32 && points == 16) {
        if (k <= 256) return entry<256, 32, 16>(false);
        if (k <= 384) return entry<384, 32, 16>(false);
        if (k <= 512) return entry<512, 32, 16>(false);
    }
    if (modes == 64 && points == 16) {
        if (k <= 384) return entry<384, 64, 16>(false);
        if (k <= 512) return entry<512, 64, 16>(false);
    }
    if (modes == 32 && points == 32) {
        if (k <= 384) return entry<384, 32, 32>(false);
        if (k <= 512) return entry<512, 32, 32>(false);
        if (k <= 640) return entry<640, 32, 32>(false);
    }
    if (modes == 64 && points == 32 && k <= 384) return entry<384, 64, 32>(false);
    return gemm_wide_kernel(k, false, ~0ul);
}

}  // namespace meanshift::cuda
