#pragma once
// Intel AMX products for the GEMM form of the step (gemm_amx_step.hpp includes this; compiled with
// -mamx-tile -mamx-bf16 -mavx512bf16 besides the AVX-512 flags).
//
// TDPBF16PS multiplies bf16 tiles (16 × 32 by 32 × 16) into a float32 16 × 16 tile: 8192 products
// per instruction, ~16 times the float32 FMA rate of AVX-512, but bf16 keeps only 8 significant
// bits. Every float32 operand is therefore split into three bf16 limbs, x = x1 + x2 + x3 with
// x1 = bf16(x), x2 = bf16(x − x1), x3 = bf16(x − x1 − x2) (24 bits, as float32), and a product keeps
// the six terms of limb order ≤ 2: x1y1 + x1y2 + x2y1 + x1y3 + x2y2 + x3y1 (the dropped terms are
// ≤ 2^-24 relative). Each bf16 × bf16 product is exact in float32; the tile sums in float32. The
// weights E (e > 0) take two rounded limbs (split2_store, 2^-17 relative; Σ e sums the limbs) and R
// the five terms with E's limb 0 or 1.
//
// Layouts (elements are bf16 bit patterns in std::uint16_t; one tile row = 64 bytes):
//   A operand (rows = M, K contiguous): 16 rows at a given stride, e.g. the modes' limbs (mpad × kpad,
//     row-major) and the weights' limbs (stored tile by tile);
//   B operand (K × N): "VNNI" pairs, tile row r holds (K = 2r, 2r+1) of 16 columns interleaved;
//     packed once per point tile (split_row, scatter), so every product reads whole tiles.
// All limb blocks are padded with zeros to whole tiles (K to 32, M and N to 16).

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace meanshift::openmp_detail {
namespace {

namespace amx {

/// Limb terms of a split product: term t multiplies limb a[t] of the left operand by limb b[t] of
/// the right. Ordered so that consecutive terms share a limb (block() then loads only the other
/// operand's tiles: 14 tile loads for S's 24 products per K-step instead of 24, 12 for R's 20) and
/// the large terms come last (the small ones are summed before they meet the large).
/// S = A · Bᵀ, both operands in three limbs: the six terms of limb order ≤ 2.
struct TermsS {
    static constexpr int n = 6;
    static constexpr int a[n] = {2, 1, 1, 0, 0, 0};
    static constexpr int b[n] = {0, 0, 1, 1, 2, 0};
};
/// R = E · B with E in two limbs (split2_store): the five terms of limb order ≤ 2 with E's limb 0 or 1.
struct TermsR {
    static constexpr int n = 5;
    static constexpr int a[n] = {0, 0, 1, 1, 0};
    static constexpr int b[n] = {2, 1, 1, 0, 0};
};

inline int pad16(int v)
{
    return (v + 15) / 16 * 16;
}
inline int pad32(int v)
{
    return (v + 31) / 32 * 32;
}

/// The 64-byte tile configuration (palette 1): every tile 16 rows × 64 bytes.
inline void configure_tiles()
{
    struct alignas(64) Config {
        std::uint8_t palette, start_row, reserved[14];
        std::uint16_t colsb[16];
        std::uint8_t rows[16];
    } c;
    std::memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; ++t) {
        c.colsb[t] = 64;
        c.rows[t] = 16;
    }
    _tile_loadconfig(&c);
}

/// Releases the tile state (so the OS need not save 8 KB of tile registers on a context switch).
inline void release_tiles()
{
    _tile_release();
}

/// 16 float32 → the three bf16 limbs (round to nearest even), as 16 packed bf16 each.
__attribute__((always_inline)) inline void split3_packed(__m512 x, __m256i& h1, __m256i& h2, __m256i& h3)
{
    h1 = (__m256i)_mm512_cvtneps_pbh(x);
    const __m512 r1 = _mm512_sub_ps(x, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h1), 16)));
    h2 = (__m256i)_mm512_cvtneps_pbh(r1);
    const __m512 r2 = _mm512_sub_ps(r1, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h2), 16)));
    h3 = (__m256i)_mm512_cvtneps_pbh(r2);
}

/// 32 float32 (x0: the first 16) → two bf16 limbs rounded to nearest, x ≈ x1 + x2 with
/// |x − x1 − x2| ≤ 2^-17 |x| (x1 keeps 8 significant bits, x2 the next 8 of the remainder), stored as
/// 32 packed bf16 at out and out + limb. For the weights E: R then takes 5 limb terms instead of 6,
/// E's limbs are 2/3 the bytes, and the split is fewer instructions than the exact three-limb one.
/// Returns (x1 + x2) of x0 plus that of x1 (lane-wise): Σ e must sum the weights R weighs by, so the
/// split's error only perturbs the weights (a relative δ moves a mode by ≤ δ times its points'
/// spread around it, docs/backend-openmp.md) and never scales the mean (one dominant weight: 0).
__attribute__((always_inline)) inline __m512 split2_store(__m512 x0, __m512 x1, std::uint16_t* out, std::size_t limb)
{
    auto widen = [](__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); };
    const __m512i h = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);  // words 0-15: x0, 16-31: x1
    const __m512 f0 = widen(_mm512_castsi512_si256(h)), f1 = widen(_mm512_extracti64x4_epi64(h, 1));
    const __m512i g = (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(x1, f1), _mm512_sub_ps(x0, f0));
    _mm512_storeu_si512(out, h);
    _mm512_storeu_si512(out + limb, g);
    return _mm512_add_ps(_mm512_add_ps(f0, f1),
                         _mm512_add_ps(widen(_mm512_castsi512_si256(g)), widen(_mm512_extracti64x4_epi64(g, 1))));
}

inline __mmask16 lane_mask(int valid)
{
    return valid >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (valid > 0 ? valid : 0)) - 1u);
}

/// A operand of S: rows [0, mpad) of the m × cols float32 matrix a (row stride cols) as three limb
/// matrices mpad × kpad (kpad = pad32(cols)) `limb` elements apart, zero beyond m and cols.
inline void pack_rows(const float* a, int m, int cols, int mpad, int kpad, std::uint16_t* out, std::size_t limb)
{
    for (int j = 0; j < mpad; ++j) {
        for (int d = 0; d < kpad; d += 16) {
            const __mmask16 mask = j < m ? lane_mask(cols - d) : __mmask16(0);
            const __m512 x = _mm512_maskz_loadu_ps(mask, a + static_cast<std::size_t>(j) * cols + d);
            __m256i h[3];
            split3_packed(x, h[0], h[1], h[2]);
            for (int l = 0; l < 3; ++l)
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + l * limb + static_cast<std::size_t>(j) * kpad + d),
                                    h[l]);
        }
    }
}

/// Transposes 16 rows of 16 dwords in place: four butterfly stages, each swapping one bit of the
/// row index with the same bit of the column index (two vpermt2d per pair of rows).
template <int S>
__attribute__((always_inline)) inline void transpose_stage(__m512i r[16])
{
    // lo picks (row p, col q) for q without bit S from p, with it from p + S (col q − S);
    // hi picks (row p + S): without bit S from p (col q + S), with it from p + S.
    const __m512i ilo = _mm512_set_epi32(
        (15 & S) ? 16 + 15 - S : 15, (14 & S) ? 16 + 14 - S : 14, (13 & S) ? 16 + 13 - S : 13,
        (12 & S) ? 16 + 12 - S : 12, (11 & S) ? 16 + 11 - S : 11, (10 & S) ? 16 + 10 - S : 10, (9 & S) ? 16 + 9 - S : 9,
        (8 & S) ? 16 + 8 - S : 8, (7 & S) ? 16 + 7 - S : 7, (6 & S) ? 16 + 6 - S : 6, (5 & S) ? 16 + 5 - S : 5,
        (4 & S) ? 16 + 4 - S : 4, (3 & S) ? 16 + 3 - S : 3, (2 & S) ? 16 + 2 - S : 2, (1 & S) ? 16 + 1 - S : 1, 0);
    const __m512i ihi =
        _mm512_set_epi32((15 & S) ? 31 : 15 + S, (14 & S) ? 30 : 14 + S, (13 & S) ? 29 : 13 + S, (12 & S) ? 28 : 12 + S,
                         (11 & S) ? 27 : 11 + S, (10 & S) ? 26 : 10 + S, (9 & S) ? 25 : 9 + S, (8 & S) ? 24 : 8 + S,
                         (7 & S) ? 23 : 7 + S, (6 & S) ? 22 : 6 + S, (5 & S) ? 21 : 5 + S, (4 & S) ? 20 : 4 + S,
                         (3 & S) ? 19 : 3 + S, (2 & S) ? 18 : 2 + S, (1 & S) ? 17 : 1 + S, S);
#pragma GCC unroll 16
    for (int p = 0; p < 16; ++p) {
        if (p & S) continue;
        const __m512i a = r[p], c = r[p + S];
        r[p] = _mm512_permutex2var_epi32(a, ilo, c);
        r[p + S] = _mm512_permutex2var_epi32(a, ihi, c);
    }
}

__attribute__((always_inline)) inline void transpose16(__m512i r[16])
{
    transpose_stage<1>(r);
    transpose_stage<2>(r);
    transpose_stage<4>(r);
    transpose_stage<8>(r);
}

/// The point tile as both products' B operands, split once. A tile of rows × cols float32 (cols =
/// a_cols = b_cols) becomes three limbs of
///   S = A · Bᵀ (K = the columns, N = the points), `limb_s` elements apart, each [pad16(rows)/16 point
///     groups][kpad/32 K-steps][16 × 32]: tile row r = columns (2r, 2r+1) of the group's 16 points;
///   R = E · B (K = the points, N = the columns), `limb_r` elements apart, each [pad32(rows)/32
///     K-steps][pad16(cols)/16 column groups][16 × 32]: tile row r = points (2r, 2r+1), per column.
/// Zero beyond rows and cols. limb_s ≥ pad16(rows) · kpad, limb_r ≥ pad32(rows) · pad16(cols).
/// It is done in small steps (the pipeline of gemm_amx_step.hpp runs them between tile products): a
/// group of 16 points is first split row by row into `stage` (split_row: [kpad/32 K-steps][3 limbs]
/// [16 points][32 columns]), then each (K-step, limb) of it is scattered to both layouts (scatter).

/// Point p (0-15) of a group: the float32 row x (cols valid floats; nullptr: a pad point, zeros) as
/// three limbs into stage.
inline void split_row(const float* x, int cols, int kpad, std::uint16_t* stage, int p)
{
    for (int s = 0; s < kpad / 32; ++s) {
        const int valid = x ? cols - 32 * s : 0;
        __m256i l0[3], l1[3];
        split3_packed(_mm512_maskz_loadu_ps(lane_mask(valid), x ? x + 32 * s : x), l0[0], l0[1], l0[2]);
        split3_packed(_mm512_maskz_loadu_ps(lane_mask(valid - 16), x ? x + 32 * s + 16 : x), l1[0], l1[1], l1[2]);
        for (int l = 0; l < 3; ++l) {
            std::uint16_t* row = stage + ((static_cast<std::size_t>(s) * 3 + l) * 16 + p) * 32;
            _mm256_store_si256(reinterpret_cast<__m256i*>(row), l0[l]);
            _mm256_store_si256(reinterpret_cast<__m256i*>(row + 16), l1[l]);
        }
    }
}

/// K-step s, limb l of group g (16 rows × 32 columns of stage) to R's layout (points interleaved in
/// pairs, column groups 2s and 2s + 1 of K-step g/2, tile rows 8·(g mod 2) + pair) and, transposed,
/// to S's (columns interleaved in pairs). cg = pad16(cols)/16, ksteps = kpad/32.
inline void scatter(const std::uint16_t* stage, int g, int s, int l, int ksteps, int cg, std::uint16_t* ps,
                    std::size_t limb_s, std::uint16_t* pr, std::size_t limb_r)
{
    // R's tile rows: points (2r, 2r+1) interleaved; words 0-15 of each row from x0, 32-47 from x1
    const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37,
                                        5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
    const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
    const std::uint16_t* in = stage + (static_cast<std::size_t>(s) * 3 + l) * 512;
    __m512i r[16];
#pragma GCC unroll 16
    for (int p = 0; p < 16; ++p) r[p] = _mm512_load_si512(in + 32 * p);
    std::uint16_t* t = pr + l * limb_r + static_cast<std::size_t>(g / 2) * cg * 512 + 256 * (g % 2);
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q) {
        if (2 * s < cg)
            _mm512_storeu_si512(t + static_cast<std::size_t>(2 * s) * 512 + 32 * q,
                                _mm512_permutex2var_epi16(r[2 * q], lo, r[2 * q + 1]));
        if (2 * s + 1 < cg)
            _mm512_storeu_si512(t + static_cast<std::size_t>(2 * s + 1) * 512 + 32 * q,
                                _mm512_permutex2var_epi16(r[2 * q], hi, r[2 * q + 1]));
    }
    transpose16(r);
    std::uint16_t* u = ps + l * limb_s + (static_cast<std::size_t>(g) * ksteps + s) * 512;
#pragma GCC unroll 16
    for (int q = 0; q < 16; ++q) _mm512_storeu_si512(u + 32 * q, r[q]);
}

/// After an odd number of groups R's last K-step has 16 points only: its other 8 tile rows weigh nothing.
inline void clear_r_tail(int groups, int cg, std::uint16_t* pr, std::size_t limb_r)
{
    if (groups % 2 == 0) return;
    for (int l = 0; l < 3; ++l)
        for (int c = 0; c < cg; ++c)
            for (int q = 8; q < 16; ++q)
                _mm512_storeu_si512(pr + l * limb_r + (static_cast<std::size_t>(groups / 2) * cg + c) * 512 + 32 * q,
                                    _mm512_setzero_si512());
}

/// C tiles (MI × NJ of them, 16 × 16 float32 each) = (accumulate ? C : 0) + Σ over K-steps [s0, s1)
/// and the limb terms T of A tiles × B tiles. a(l, i, s), b(l, j, s): addresses of the tiles of limb
/// l, row/column tile i/j (0 or 1 here), K-step s; a_stride: bytes per A row; c0..c3: C tiles (0, 0),
/// (0, 1), (1, 0), (1, 1), c_stride bytes per row. Tiles 0-3 accumulate, 4-5 hold A, 6-7 hold B
/// (tile numbers must be constants). fill() runs after every term's (up to) four tile products: the
/// tile unit works through them while the vector units do fill's work, which overlaps only at this
/// fine grain (measured on Sapphire Rapids: vector work after every 4 products hid behind them,
/// after every 16 or 48 it mostly added to their time).
template <int MI, int NJ, class T, class AFn, class BFn, class Fill>
__attribute__((always_inline)) inline void block(int s0, int s1, bool accumulate, AFn a, int a_stride, BFn b, float* c0,
                                                 float* c1, float* c2, float* c3, int c_stride, Fill& fill)
{
    if (accumulate) {
        _tile_loadd(0, c0, c_stride);
        if (NJ > 1) _tile_loadd(1, c1, c_stride);
        if (MI > 1) _tile_loadd(2, c2, c_stride);
        if (MI > 1 && NJ > 1) _tile_loadd(3, c3, c_stride);
    } else {
        _tile_zero(0);
        if (NJ > 1) _tile_zero(1);
        if (MI > 1) _tile_zero(2);
        if (MI > 1 && NJ > 1) _tile_zero(3);
    }
    for (int s = s0; s < s1; ++s) {
        for (int t = 0; t < T::n; ++t) {
            if (t == 0 || T::a[t] != T::a[t - 1]) {
                _tile_loadd(4, a(T::a[t], 0, s), a_stride);
                if (MI > 1) _tile_loadd(5, a(T::a[t], 1, s), a_stride);
            }
            if (t == 0 || T::b[t] != T::b[t - 1]) {
                _tile_loadd(6, b(T::b[t], 0, s), 64);
                if (NJ > 1) _tile_loadd(7, b(T::b[t], 1, s), 64);
            }
            _tile_dpbf16ps(0, 4, 6);
            if (NJ > 1) _tile_dpbf16ps(1, 4, 7);
            if (MI > 1) _tile_dpbf16ps(2, 5, 6);
            if (MI > 1 && NJ > 1) _tile_dpbf16ps(3, 5, 7);
            fill();
        }
    }
    _tile_stored(0, c0, c_stride);
    if (NJ > 1) _tile_stored(1, c1, c_stride);
    if (MI > 1) _tile_stored(2, c2, c_stride);
    if (MI > 1 && NJ > 1) _tile_stored(3, c3, c_stride);
}

/// C (mt·16 × nt·16 float32, row stride c_ld floats) = Σ over the terms T and `ksteps` K-steps of A · B, in
/// blocks of 2 × 2 tiles. a(l, i, s) / b(l, j, s) as for block() with absolute tile indices. The
/// K-steps go in chunks of `kchunk`, each over all blocks (C stored and reloaded in between), so a
/// chunk's B tiles stay in L1 while the blocks' A tiles stream (measured on Sapphire Rapids, R at
/// k = 64: 6.4 against 7.9 ns per TDPBF16PS for one pass over all K-steps). fill: see block(); it is
/// called groups<T>(mt, nt, ksteps) times.
template <class T, class AFn, class BFn, class Fill>
inline void product(int mt, int nt, int ksteps, int kchunk, AFn a, int a_stride, BFn b, float* c, int c_ld, Fill& fill)
{
    const int cs = c_ld * static_cast<int>(sizeof(float));
    auto at = [&](int i, int j) { return c + static_cast<std::size_t>(16 * i) * c_ld + 16 * j; };
    for (int s0 = 0; s0 < ksteps; s0 += kchunk) {
        const int s1 = s0 + kchunk < ksteps ? s0 + kchunk : ksteps;
        const bool acc = s0 > 0;
        for (int i = 0; i < mt; i += 2) {
            for (int j = 0; j < nt; j += 2) {
                auto ai = [&](int l, int di, int s) { return a(l, i + di, s); };
                auto bj = [&](int l, int dj, int s) { return b(l, j + dj, s); };
                const bool two_i = i + 1 < mt, two_j = j + 1 < nt;
                if (two_i && two_j)
                    block<2, 2, T>(s0, s1, acc, ai, a_stride, bj, at(i, j), at(i, j + 1), at(i + 1, j),
                                   at(i + 1, j + 1), cs, fill);
                else if (two_i)
                    block<2, 1, T>(s0, s1, acc, ai, a_stride, bj, at(i, j), nullptr, at(i + 1, j), nullptr, cs, fill);
                else if (two_j)
                    block<1, 2, T>(s0, s1, acc, ai, a_stride, bj, at(i, j), at(i, j + 1), nullptr, nullptr, cs, fill);
                else
                    block<1, 1, T>(s0, s1, acc, ai, a_stride, bj, at(i, j), nullptr, nullptr, nullptr, cs, fill);
            }
        }
    }
}

/// How many times product<T>(mt, nt, ksteps, …) calls fill.
template <class T>
inline long groups(int mt, int nt, int ksteps)
{
    return static_cast<long>((mt + 1) / 2) * ((nt + 1) / 2) * ksteps * T::n;
}

}  // namespace amx
}  // namespace
}  // namespace meanshift::openmp_detail
