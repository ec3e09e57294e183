#pragma once
// The GEMM form of one step for a block of modes (gemm_step.hpp) with Eigen's float32 products.
// Included by exactly one unit per instruction set, which first defines `Eigen` to a unit-specific
// namespace name (see there). The forms of S and R: gemm_step_common.hpp. The AMX unit has its own
// block function (gemm_amx_step.hpp).

#include "gemm_step_common.hpp"

#include <algorithm>
#include <vector>

namespace meanshift::openmp_detail {
namespace {

/// The per-thread buffers, carved from one scratch area in this order.
struct Buffers {
    float *centre, *a, *hq, *qn, *b, *hp, *lw, *bw, *s, *r;
    double *acc, *den;
    std::int64_t* row;  ///< the point index of each tile row
};

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
    b.s = reinterpret_cast<float*>(take(mb * nb * sizeof(float)));
    b.r = reinterpret_cast<float*>(take(mb * bc * sizeof(float)));
    b.acc = reinterpret_cast<double*>(take(mb * bc * sizeof(double)));
    b.den = reinterpret_cast<double*>(take(mb * sizeof(double)));
    if (out) *out = b;
    return off;
}

std::size_t scratch_bytes(const GemmData& D)
{
    return carve(D, nullptr, nullptr) + kAlign;
}

void run_block(const GemmData& D, const double* positions, int m, const std::int64_t* ranges, int nranges, double* out,
               unsigned char* supported, void* scratch)
{
    const int k = D.k, ac = a_cols(D), bc = b_cols(D), nb = D.rows_per_tile;
    const bool per_point = D.per_point;
    auto* base = static_cast<unsigned char*>(scratch);
    base += (kAlign - reinterpret_cast<std::uintptr_t>(base) % kAlign) % kAlign;
    Buffers buf;
    carve(D, base, &buf);  // the caller zero-fills scratch once, so S's pad columns stay finite

    centre_modes(D, positions, m, buf.centre, buf.a, buf.hq, buf.qn);
    MapD acc(buf.acc, m, bc);
    acc.setZero();
    for (int j = 0; j < m; ++j) buf.den[j] = 0;

    // Rounding bound of u = −½D² in the expansion, relative to ½|x'|²_w + max_d w · ½|q'|² (each ≥ the
    // magnitudes the dot products cancel): ~(2k + 8) float32 roundings, doubled for safety.
    const LogWeights log_weights(D, static_cast<float>((2 * k + 8) * 0x1p-23));
    FlushDenormals ftz;  // weights below 2^-126 are exactly 0, as in the SIMD kernels

    // Per mode, the largest log2-weight seen so far: the weights are exp2(v − top); sums already
    // made are rescaled when top grows. y' = c + S1/S0 does not depend on the scale.
    std::vector<float> top(static_cast<std::size_t>(m), -__builtin_huge_valf());
    // Weighs mode j against the tile's S row: v = log2 weight, the running maximum, then
    // e = exp2(v − top) in place.
    auto weigh = [&](int j, int rows) {
        float* s = buf.s + static_cast<Index>(j) * nb;
        const double* y = positions + static_cast<Index>(j) * k;
        vf esum = splat(0.0f), vtop = splat(kNoWeight);
        for (int i = 0; i < rows; i += W) {
            const vf v = log_weights(s, buf.hq[j], buf.qn[j], y, buf.hp, buf.lw, buf.bw, buf.row, i, rows);
            vtop = vmax(vtop, v);
            storeu(s + i, v);
        }
        float t = kNoWeight;
        for (int l = 0; l < W; ++l) t = std::max(t, vtop[l]);
        float& tj = top[static_cast<std::size_t>(j)];
        if (t > tj) {
            if (t == kNoWeight) t = -__builtin_huge_valf();  // nothing in this tile, nothing before
            if (tj > -__builtin_huge_valf()) {
                const double f = std::exp2(static_cast<double>(tj) - t);
                acc.row(j) *= f;
                buf.den[j] *= f;
            }
            tj = t;
        }
        const vf shift = splat(tj);
        const bool none = !(tj > -__builtin_huge_valf());
        for (int i = 0; i < rows; i += W) {
            // exp2 of ≤ −150 is 0 (kNoWeight lanes included, whatever the shift)
            const vf e = none ? splat(0.0f) : exp2_poly(vmax(loadu(s + i) - shift, splat(-150.0f)));
            esum += e;
            storeu(s + i, e);
        }
        if (!per_point) {
            double sum = 0;
            for (int l = 0; l < W; ++l) sum += static_cast<double>(esum[l]);
            buf.den[j] += sum;
        }
    };
    // One tile of `rows` gathered points in B, hp, lw: products, weights, sums. S has row stride
    // nb (a multiple of W), so the weight loop runs whole vectors.
    auto tile = [&](int rows) {
        const MapF A(buf.a, m, ac), B(buf.b, rows, bc);
        Eigen::Map<RowMat, Eigen::Aligned64, Eigen::OuterStride<>> S(buf.s, m, rows, Eigen::OuterStride<>(nb));
        S.noalias() = A * B.leftCols(ac).transpose();
        for (int j = 0; j < m; ++j) weigh(j, rows);
        MapF R(buf.r, m, bc);
        R.noalias() = S * B;
        acc += R.cast<double>();
    };

    // Gather the rows of the ranges into tiles of nb rows, relative to the centre.
    int rows = 0;
    auto add_row = [&](Index i) {
        buf.row[rows] = i;
        point_row(D, buf.centre, i, buf.b + static_cast<Index>(rows) * bc, buf.hp[rows], buf.lw[rows], buf.bw[rows]);
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

    finish_modes(D, positions, m, buf.centre, buf.acc, buf.den, top.data(), out, supported);
}

}  // namespace
}  // namespace meanshift::openmp_detail
