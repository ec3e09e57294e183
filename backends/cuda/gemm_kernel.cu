// The GEMM form of the step (issue 11, docs/high-dimensional.md) for the per-point model in TF32
// (gemm_f16_kernel.cu runs the shared model): the exponents of a block of modes against a tile of
// points come from tensor-core matrix products
//   −½ Σ_d w_d (q_d − x_d)² = [q, −½q∘q]·[w∘x, w] − ½ Σ_d w_d x_d²
// fused with the exponential and the weighted sums E·P (as fused attention kernels do: the weight
// tile lives in registers, never in memory). Skeleton mapping: PPU = block (BM modes); PU = thread;
// each mode's row of the weight tile is held by the 4 threads of a quad (a vPPU of f_vppu = 4,
// f_load = 4: they share the point loop, 2 of every 8 points each); the vPPU's reduction (Alg. 3
// lines 17-18) happens inside the product E·[w∘x, w], whose output columns the quad's threads hold
// disjointly. Points are sliced over blockIdx.y when the mode blocks are too few to fill the GPU;
// slices add their sums atomically.
//
// Accuracy: mma.sync m16n8k8 in TF32 (10-bit mantissa) with the 3xTF32 split x = hi + lo
// (hi·hi + hi·lo + lo·hi) for the exponents and for the sums E·P (weights split too), so the
// products keep about float32 accuracy; coordinates are taken relative to the block's median mode
// (the block centre c), which keeps the cancellation of the expanded form to the block's extent.
//
// Per-point weights beyond float32's range (GemmParams::log2_shift, kernels/meanshift_device.h "per-mode
// log2 shift"): each mode's weights are 2^(x + L c_i − m_q), m_q staged per mode in shared memory,
// so the shift takes no instruction more per pair.
// MAXP = true is its max pass: the same exponents, no sums; the quad's largest x + L c_i of each mode
// goes into log2_shift by atomic max.
#include "backends/cuda/gemm_common.cuh"
#include "backends/cuda/kernel_params.hpp"
#include "meanshift_device.h"

#include <cstdint>

namespace meanshift::cuda {
namespace {

using gemm::ex2;
using gemm::kLog2e;

__device__ __forceinline__ std::uint32_t tf32(float x)
{
    std::uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

/// d += a · b for one m16n8k8 TF32 tile (a: 16 × 8 row-major fragment, b: 8 × 8 column fragment).
__device__ __forceinline__ void mma(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                    std::uint32_t a3, std::uint32_t b0, std::uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/// Compile-time shape of one instantiation: KF feature columns (2k padded: [q', −½q'²] against
/// [w∘x', w]), WARPS warps of 16 modes, NT points per tile. Rows of the shared-memory matrices are
/// KF + 4 words apart, which makes every fragment load below free of bank conflicts.
template <int KF>
struct GemmShape {
    static constexpr int warps = KF >= 256 ? 4 : 8;
    static constexpr int bm = 16 * warps;
    static constexpr int nt = KF >= 256 ? 32 : 64;
    static constexpr int ld = KF + 4;
    static constexpr int kp = KF / 2;  // coordinate columns
};

template <int KF>
constexpr unsigned long smem_bytes()
{
    using S = GemmShape<KF>;
    // Q hi/lo (bm × ld), P hi/lo (nt × ld), point terms (2 nt), centre (kp), mode terms (bm).
    return sizeof(float) * (2ul * S::bm * S::ld + 2ul * S::nt * S::ld + 2ul * S::nt + S::kp + S::bm);
}

template <int KF, bool MAXP = false>
__global__ void __launch_bounds__(GemmShape<KF>::warps * 32) gemm_kernel_t(const GemmParams p)
{
    using S = GemmShape<KF>;
    constexpr int LD = S::ld, BM = S::bm, NT = S::nt, KP = S::kp, T = S::warps * 32;
    extern __shared__ float smem[];
    std::uint32_t* qh = reinterpret_cast<std::uint32_t*>(smem);
    std::uint32_t* ql = qh + BM * LD;
    std::uint32_t* ph = ql + BM * LD;
    std::uint32_t* pl = ph + NT * LD;
    float* pn = reinterpret_cast<float*>(pl + NT * LD);  // L·½Σ w x'² (+inf: padding point)
    float* pc = pn + NT;  // L·c_i
    float* centre = pc + NT;
    float* qn = centre + KP;  // the mode's log2 shift m_q, or 0

    const int k = p.k;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const long long m0 = static_cast<long long>(blockIdx.x) * BM;
    const int bm = static_cast<int>(min(static_cast<long long>(BM), p.count - m0));

    // The block centre (gemm::block_median); the raw modes are staged in ql first.
    float* raw = reinterpret_cast<float*>(ql);
    for (int j = warp; j < BM; j += S::warps)
        for (int d = lane; d < KP; d += 32) raw[j * LD + d] = (j < bm && d < k) ? p.queries[(m0 + j) * k + d] : 0.0f;
    __syncthreads();
    gemm::block_median(raw, LD, bm, KP, centre, tid, T);
    __syncthreads();
    // Modes, one warp a mode: q' = y − c, features [q', −½q'²] split into TF32 hi + lo.
    for (int j = warp; j < BM; j += S::warps) {
        for (int d = lane; d < KP; d += 32) {
            const float v = (j < bm && d < k) ? raw[j * LD + d] - centre[d] : 0.0f;
            const std::uint32_t h = tf32(v);
            qh[j * LD + d] = h;
            ql[j * LD + d] = tf32(v - __uint_as_float(h));
            const float u = -0.5f * v * v;
            const std::uint32_t hu = tf32(u);
            qh[j * LD + KP + d] = hu;
            ql[j * LD + KP + d] = tf32(u - __uint_as_float(hu));
        }
        if (lane == 0) qn[j] = !MAXP && p.log2_shift && j < bm ? ms_log2_shift(p.log2_shift[m0 + j]) : 0.0f;
    }

    // Points of this slice.
    const long long per_slice = (p.n + gridDim.y - 1) / gridDim.y;
    const long long p_begin = blockIdx.y * per_slice;
    const long long p_end = min(p.n, p_begin + per_slice);

    float acc[KF / 8][4];
#pragma unroll
    for (int i = 0; i < KF / 8; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
    float mx0 = -INFINITY, mx1 = -INFINITY;  // MAXP: largest log2 weight of rows g and g + 8
    const int r0 = warp * 16 + g;  // this thread's mode rows in the block: r0, r0 + 8
    const float cut = p.cut_log2;

    for (long long t0 = p_begin; t0 < p_end; t0 += NT) {
        __syncthreads();  // the previous tile is consumed (and the modes are staged)
        for (int j = warp; j < NT; j += S::warps) {
            const long long i = t0 + j;
            const bool ok = i < p_end;
            float nrm = 0.0f;
            for (int d = lane; d < KP; d += 32) {
                float v = 0.0f, w = 1.0f;
                if (ok && d < k) {
                    v = p.points[i * k + d] - centre[d];
                    w = p.precision[i * k + d];
                }
                if (d < k) nrm += w * v * v;
                const float a = w * v;
                const std::uint32_t h = tf32(a);
                ph[j * LD + d] = h;
                pl[j * LD + d] = tf32(a - __uint_as_float(h));
                const float b = (ok && d < k) ? w : 0.0f;
                const std::uint32_t hb = tf32(b);
                ph[j * LD + KP + d] = hb;
                pl[j * LD + KP + d] = tf32(b - __uint_as_float(hb));
            }
            for (int off = 16; off > 0; off /= 2) nrm += __shfl_xor_sync(0xffffffffu, nrm, off);
            if (lane == 0) {
                pn[j] = ok ? 0.5f * kLog2e * nrm : __int_as_float(0x7f800000);
                pc[j] = ok ? kLog2e * p.log_weight[i] : 0.0f;
            }
        }
        __syncthreads();

        // This warp: 16 modes × NT points, in groups of 32 points (4 mma columns of 8).
#pragma unroll 1
        for (int j0 = 0; j0 < NT; j0 += 32) {
            float s[4][4];
#pragma unroll
            for (int c = 0; c < 4; ++c) s[c][0] = s[c][1] = s[c][2] = s[c][3] = 0.0f;
#pragma unroll 4
            for (int kk = 0; kk < KF; kk += 8) {
                const std::uint32_t* qa = qh + (warp * 16 + g) * LD + kk + t;
                const std::uint32_t* qb = ql + (warp * 16 + g) * LD + kk + t;
                const std::uint32_t ah0 = qa[0], ah1 = qa[8 * LD], ah2 = qa[4], ah3 = qa[8 * LD + 4];
                const std::uint32_t al0 = qb[0], al1 = qb[8 * LD], al2 = qb[4], al3 = qb[8 * LD + 4];
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    const int row = (j0 + 8 * c + g) * LD + kk + t;
                    const std::uint32_t bh0 = ph[row], bh1 = ph[row + 4], bl0 = pl[row], bl1 = pl[row + 4];
                    mma(s[c], al0, al1, al2, al3, bh0, bh1);
                    mma(s[c], ah0, ah1, ah2, ah3, bl0, bl1);
                    mma(s[c], ah0, ah1, ah2, ah3, bh0, bh1);
                }
            }
            // Weights. s[c][0..3]: rows (g, g, g+8, g+8), points j0 + 8c + (2t, 2t+1, 2t, 2t+1).
            std::uint32_t w[4][4], wl[4][4];
            const float qa = qn[r0], qb = qn[r0 + 8];
#pragma unroll
            for (int c = 0; c < 4; ++c) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int pt = j0 + 8 * c + 2 * t + (e & 1);
                    // qa / qb = the mode's log2 shift m_q, applied after the clamp and the cutoff
                    // (which see L/2 D² alone), as (L c_i − m_q) + x
                    const float x = gemm::pair_log2(kLog2e * s[c][e] - pn[pt], cut);
                    if constexpr (MAXP) {
                        if (e < 2)
                            mx0 = fmaxf(mx0, x + pc[pt]);
                        else
                            mx1 = fmaxf(mx1, x + pc[pt]);
                        continue;
                    }
                    const float v = ex2(x + (pc[pt] - (e < 2 ? qa : qb)));
                    // Split too: rounding the weights alone to TF32 (±2^-12 each) moved modes by
                    // ~1e-4 bandwidths (H100, k = 16: 1.6e-4 against the float64 oracle).
                    w[c][e] = tf32(v);
                    wl[c][e] = tf32(v - __uint_as_float(w[c][e]));
                }
            }
            // Sums: acc (16 × KF) += W (16 × 32) · P (32 × KF). The weight fragment is the C layout of
            // s read as an A fragment, with points ordered 2t, 2t + 1 ↦ columns t, t + 4 in each group
            // of 8 (the order of a sum is free): so no shuffle is needed.
            if constexpr (!MAXP) {
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    const int prow0 = (j0 + 8 * c + 2 * t) * LD, prow1 = prow0 + LD;
#pragma unroll
                    for (int nn = 0; nn < KF / 8; ++nn) {
                        const int col = nn * 8 + g;
                        const std::uint32_t bh0 = ph[prow0 + col], bh1 = ph[prow1 + col];
                        mma(acc[nn], wl[c][0], wl[c][2], wl[c][1], wl[c][3], bh0, bh1);
                        mma(acc[nn], w[c][0], w[c][2], w[c][1], w[c][3], pl[prow0 + col], pl[prow1 + col]);
                        mma(acc[nn], w[c][0], w[c][2], w[c][1], w[c][3], bh0, bh1);
                    }
                }
            }
        }
    }

    if constexpr (MAXP) {  // the quad's maxima, then one atomic max per mode
        for (int off = 1; off < 4; off *= 2) {
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
        }
        if (t == 0) {
            if (r0 < bm && mx0 > -INFINITY) atomicMax(p.log2_shift + m0 + r0, ms_ordered_from_float(mx0));
            if (r0 + 8 < bm && mx1 > -INFINITY) atomicMax(p.log2_shift + m0 + r0 + 8, ms_ordered_from_float(mx1));
        }
    } else {
        // S0_d and S1_d relative to the mode (the quad's columns are disjoint: no reduction needed).
        const int stride = 2 * k;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = r0 + 8 * half;
            if (row >= bm) continue;
            const long long q = m0 + row;
            float* out = p.acc + q * stride;
#pragma unroll
            for (int nn = 0; nn < KF / 8; ++nn) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int col = nn * 8 + 2 * t + e;
                    const float v = acc[nn][2 * half + e];
                    // Columns [0, KP): Σ e w x' (into S1); [KP, 2KP): Σ e w, the per-dimension S0,
                    // which also gives S1_d = Σ e w x'_d − y'_d Σ e w_d.
                    if (col < KP) {
                        if (col < k) atomicAdd(out + k + col, v);
                    } else if (col - KP < k) {
                        const int d = col - KP;
                        const float yd = p.queries[q * k + d] - centre[d];
                        atomicAdd(out + d, v);
                        atomicAdd(out + k + d, -yd * v);
                    }
                }
            }
        }
    }
}

template <int KF>
GemmKernel entry()
{
    return {reinterpret_cast<const void*>(&gemm_kernel_t<KF>), GemmShape<KF>::warps * 32, GemmShape<KF>::bm,
            GemmShape<KF>::nt, smem_bytes<KF>()};
}

template <int KF>
const void* max_entry()
{
    return reinterpret_cast<const void*>(&gemm_kernel_t<KF, true>);
}

}  // namespace

const void* gemm_log2_max_kernel(int k, bool truncated)
{
    (void)truncated;  // the kernels test the cutoff at run time (GemmParams::cut_log2)
    const int f = 2 * k;
    if (f <= 16) return max_entry<16>();
    if (f <= 32) return max_entry<32>();
    if (f <= 64) return max_entry<64>();
    if (f <= 128) return max_entry<128>();
    if (f <= 256) return max_entry<256>();
    return nullptr;
}

GemmKernel gemm_kernel(int k, bool per_point, bool truncated, const GemmTarget& target)
{
    if (!per_point) {
        if (target.wgmma) {
            if (const GemmKernel w = gemm_wgmma_kernel(k, truncated); w.fn && w.smem <= target.smem)
                return w;  // k = 33..64
            if (const GemmKernel w = gemm_wgmma_wide_kernel(k, truncated); w.fn && w.smem <= target.smem)
                return w;  // k = 129..512 (H100: 1.2-2.8x the mma.sync kernels)
        }
        if (const GemmKernel f = gemm_f16_kernel(k, truncated); f.fn && f.smem <= target.smem) return f;  // k ≤ 256
        return gemm_wide_kernel(k, truncated, target.smem);  // k ≤ 1,024, tiled over the dimensions
    }
    const int f = 2 * k;
    const GemmKernel g = f <= 16    ? entry<16>()
                         : f <= 32  ? entry<32>()
                         : f <= 64  ? entry<64>()
                         : f <= 128 ? entry<128>()
                         : f <= 256 ? entry<256>()
                                    : GemmKernel{};
    return g.smem <= target.smem ? g : GemmKernel{};
}

}  // namespace meanshift::cuda
