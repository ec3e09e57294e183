#pragma once
// The GEMM form of one step for a block of modes (gemm_step.hpp) with its two products on Intel AMX
// tiles (gemm_amx.hpp: bf16, three-limb split, float32 accuracy); gemm_step_amx.cpp includes it.
// The forms of S and R: gemm_step_common.hpp.
//
// A software pipeline over tiles of points, so that the tile unit and the vector units work at the
// same time: per tile, the products (S = A·Bᵀ, R = E·B) are tile work, the gathering and splitting
// of the points (Packer) and the weights E = exp2(S …) (Weigher) are vector work, and the vector
// work runs in small steps between the tile products (gemm_amx.hpp block()). Stage t:
//   1. R of tile t − 1 on the tiles   ∥  the points of tile t + 1 gathered and split (Packer);
//      then R(t − 1) added into the float64 sums (combine);
//   2. S of tile t + 1 on the tiles   ∥  the weights of tile t (Weigher).
// Buffers: R's point operand of tiles t − 1, t, t + 1 (three), S of tiles t, t + 1 (two), one of
// everything else; a buffer that the other unit may still read is rewritten only after it in
// program order, which the CPU's memory ordering keeps correct.
//
// Weights: a mode's weights in one tile share one shift sh (e = exp2(v − sh), v = its log2 weight),
// chosen before the tile as the largest v of its earlier tiles; a step that meets v > sh + 64
// restarts the mode's row of the tile with sh = v, so 0 < e ≤ 2^64 never overflows and no weight
// underflows that float64 would keep relative to the mode's largest. combine() rescales the float64
// sums of tiles with different shifts (as flash attention's running maximum).

#include "gemm_amx.hpp"
#include "gemm_step_common.hpp"

#include <algorithm>

namespace meanshift::openmp_detail {
namespace {

/// AMX padding: A and S's point operand to 32 columns (whole K-steps), R's to 16 (whole tile columns).
inline int amx_kpad(const GemmData& D)
{
    return amx::pad32(a_cols(D));
}
inline int amx_cpad(const GemmData& D)
{
    return amx::pad16(b_cols(D));
}
inline std::size_t amx_mpad(const GemmData& D)
{
    return static_cast<std::size_t>(amx::pad16(D.modes_per_block));
}

/// Sum and maximum of the 16 lanes (GCC 12's own _mm512_reduce_* warn of their undefined halves).
inline float lane_sum(__m512 x)
{
    const __m256 h = _mm256_add_ps(_mm512_mask_extractf32x8_ps(_mm256_setzero_ps(), 0xFF, x, 0),
                                   _mm512_mask_extractf32x8_ps(_mm256_setzero_ps(), 0xFF, x, 1));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
}
inline float lane_max(__m512 x)
{
    const __m256 h = _mm256_max_ps(_mm512_mask_extractf32x8_ps(_mm256_setzero_ps(), 0xFF, x, 0),
                                   _mm512_mask_extractf32x8_ps(_mm256_setzero_ps(), 0xFF, x, 1));
    __m128 q = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_max_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_max_ss(q, _mm_movehdup_ps(q)));
}

/// A tile's per-point data: ½|x'|²_w, log2 e · c_i, max_d w_id, the point's index, and
/// bias = lw − log2 e · hp (kNoWeight for pad points: their weights are 0 without a lane test).
struct PointTile {
    float *hp, *lw, *bw, *bias;
    std::int64_t* row;
    std::uint16_t* pr;  ///< R's point operand (three limbs)
};

/// The per-thread buffers, carved from one scratch area in this order.
struct Buffers {
    float *centre, *a, *hq, *qn, *hql, *brow, *s[2], *r, *top, *ref, *sh;
    std::uint16_t *qa, *ps, *el, *stage;
    PointTile tile[3];
    double *acc, *den, *esum;
};

std::size_t carve(const GemmData& D, unsigned char* base, Buffers* out)
{
    const std::size_t mb = static_cast<std::size_t>(D.modes_per_block), nb = static_cast<std::size_t>(D.rows_per_tile);
    const std::size_t k = static_cast<std::size_t>(D.k), ac = static_cast<std::size_t>(a_cols(D)),
                      bc = static_cast<std::size_t>(b_cols(D));
    const std::size_t mp = amx_mpad(D), kp = static_cast<std::size_t>(amx_kpad(D)),
                      cp = static_cast<std::size_t>(amx_cpad(D));
    std::size_t off = 0;
    auto take = [&](std::size_t bytes) {
        unsigned char* p = base ? base + off : nullptr;
        off += round_up(bytes);
        return p;
    };
    auto floats = [&](std::size_t count) { return reinterpret_cast<float*>(take(count * sizeof(float))); };
    auto halves = [&](std::size_t count) { return reinterpret_cast<std::uint16_t*>(take(count * 2)); };
    Buffers b;
    b.centre = floats(k);
    b.a = floats(mb * ac);
    b.hq = floats(mb);
    b.qn = floats(mb);
    b.hql = floats(mb);
    b.brow = floats(kp);
    // S and R whole tiles: written 16 modes (and R 16 columns) at a time
    b.s[0] = floats(mp * nb);
    b.s[1] = floats(mp * nb);
    b.r = floats(mp * cp);
    b.top = floats(mb);
    b.ref = floats(mb);
    b.sh = floats(mb);
    b.qa = halves(3 * mp * kp);
    b.ps = halves(3 * nb * kp);
    b.el = halves(2 * mp * nb);  // E: two limbs (split2_store)
    b.stage = halves(3 * 16 * kp);
    for (PointTile& t : b.tile) {
        t.hp = floats(nb);
        t.lw = floats(nb);
        t.bw = floats(nb);
        t.bias = floats(nb);
        t.row = reinterpret_cast<std::int64_t*>(take(nb * sizeof(std::int64_t)));
        t.pr = halves(3 * nb * cp);
    }
    b.acc = reinterpret_cast<double*>(take(mb * bc * sizeof(double)));
    b.den = reinterpret_cast<double*>(take(mb * sizeof(double)));
    b.esum = reinterpret_cast<double*>(take(mb * sizeof(double)));
    if (out) *out = b;
    return off;
}

std::size_t scratch_bytes(const GemmData& D)
{
    return carve(D, nullptr, nullptr) + kAlign;
}

/// The block's rows, in order: all n (nranges < 0) or those of the ranges.
class RowCursor {
public:
    RowCursor(const std::int64_t* ranges, int nranges)
        : ranges_(ranges), nranges_(nranges), i_(nranges > 0 ? ranges[0] : 0)
    {
    }
    /// The next row; call only while rows remain.
    Index next()
    {
        if (nranges_ >= 0)
            while (i_ >= ranges_[2 * r_ + 1]) i_ = ranges_[2 * ++r_];
        return i_++;
    }

private:
    const std::int64_t* ranges_;
    int nranges_, r_ = 0;
    Index i_;
};

/// Vector work, step by step: gathers a tile's points relative to the block's centre, splits them
/// into limbs and lays them out for both products (gemm_amx.hpp split_row, scatter). One step:
/// kPointsPerStep points gathered and split, or one (K-step, limb) of a group of 16 scattered.
class Packer {
public:
    Packer(const GemmData& D, const Buffers& buf, RowCursor& rows)
        : D_(D),
          buf_(buf),
          rows_(rows),
          kpad_(amx_kpad(D)),
          ksteps_(kpad_ / 32),
          cg_(amx_cpad(D) / 16),
          limb_s_(static_cast<std::size_t>(D.rows_per_tile) * static_cast<std::size_t>(kpad_)),
          limb_r_(static_cast<std::size_t>(D.rows_per_tile) * static_cast<std::size_t>(amx_cpad(D)))
    {
    }

    void start(const PointTile& tile, int rows)
    {
        tile_ = tile;
        rows_in_tile_ = rows;
        groups_ = amx::pad16(rows) / 16;
        g_ = 0;
        phase_ = 0;
        // the Weigher reads whole K-steps of 32 points: the points beyond the groups weigh nothing too
        for (int t = 16 * groups_; t < amx::pad32(rows); ++t) tile.bias[t] = kNoWeight;
    }
    bool done() const { return g_ >= groups_; }
    long steps() const { return static_cast<long>(groups_) * (kGatherSteps + 3 * ksteps_); }

    __attribute__((noinline)) void step()
    {
        if (phase_ < kGatherSteps) {
            for (int p = 0; p < kPointsPerStep; ++p) gather(kPointsPerStep * phase_ + p);
        } else {
            const int q = phase_ - kGatherSteps;
            amx::scatter(buf_.stage, g_, q / 3, q % 3, ksteps_, cg_, buf_.ps, limb_s_, tile_.pr, limb_r_);
        }
        if (++phase_ == kGatherSteps + 3 * ksteps_) {
            phase_ = 0;
            if (++g_ == groups_) amx::clear_r_tail(groups_, cg_, tile_.pr, limb_r_);
        }
    }

private:
    static constexpr int kPointsPerStep = 2;  // 1-8 measured the same (probe, k = 64)
    static constexpr int kGatherSteps = 16 / kPointsPerStep;

    /// Point p of the current group: its row relative to the centre (point_row), and bias; a pad point
    /// (beyond the tile's rows) is zeros.
    void gather(int p)
    {
        const int t = 16 * g_ + p;
        if (t >= rows_in_tile_) {
            tile_.hp[t] = tile_.lw[t] = tile_.bw[t] = 0.0f;
            tile_.bias[t] = kNoWeight;
            tile_.row[t] = 0;
            amx::split_row(nullptr, 0, kpad_, buf_.stage, p);
            return;
        }
        const Index i = rows_.next();
        point_row(D_, buf_.centre, i, buf_.brow, tile_.hp[t], tile_.lw[t], tile_.bw[t]);
        tile_.bias[t] = tile_.lw[t] - kLog2e * tile_.hp[t];
        tile_.row[t] = i;
        amx::split_row(buf_.brow, b_cols(D_), kpad_, buf_.stage, p);
    }

    const GemmData& D_;
    const Buffers& buf_;
    RowCursor& rows_;
    const int kpad_, ksteps_, cg_;
    const std::size_t limb_s_, limb_r_;
    PointTile tile_{};
    int rows_in_tile_ = 0, groups_ = 0, g_ = 0, phase_ = 0;
};

/// Vector work, step by step: the weights of a tile's S, mode by mode, as E's two bf16 limbs (R's A
/// operand, stored tile by tile: [mode tile][K-step of 32 points][16 × 32]). One step: kPiece points
/// of one mode. Per mode: the shift sh of the tile (top of file), Σ e (esum).
class Weigher {
public:
    Weigher(const GemmData& D, const Buffers& buf, const double* positions, int m, const LogWeights& log_weights)
        : D_(D),
          buf_(buf),
          positions_(positions),
          m_(m),
          log_weights_(log_weights),
          limb_e_(amx_mpad(D) * static_cast<std::size_t>(D.rows_per_tile)),
          impl_(std::isfinite(D.cutoff2) ? &Weigher::step_as<kGeneral>
                : D.per_point            ? &Weigher::step_as<kPerPoint>
                                         : &Weigher::step_as<kShared>)
    {
    }

    void start(const float* s, const PointTile& tile, int rows)
    {
        s_ = s;
        tile_ = tile;
        rows_ = rows;
        pieces_ = (amx::pad32(rows) + kPiece - 1) / kPiece;
        j_ = 0;
        begin_row();
    }
    bool done() const { return j_ >= m_; }
    long steps() const { return static_cast<long>(m_) * pieces_; }
    __attribute__((noinline)) void step() { (this->*impl_)(); }

private:
    // Points per step: a whole row of the default tile (probe, k = 64: 0.143 s against 0.151 and 0.158
    // for 128 and 64; the per-step work of the row's maximum and shift then counts once per row).
    static constexpr int kPiece = 256;
    static constexpr float kSlack = 64.0f;  // largest log2 weight above the shift
    static constexpr int kShared = 0, kPerPoint = 1, kGeneral = 2;

    /// One step. The exact kernel's forms fold everything per mode or per point into one FMA and
    /// a subtraction, t = s·log2 e + bias_i − (hq_j·log2 e + base), clamped to u = −½D² ≤ 0; the
    /// truncated kernel takes LogWeights (its direct decisions near the cutoff).
    template <int Mode>
    void step_as()
    {
        const int nb = D_.rows_per_tile, i0 = kPiece * p_;
        const int nv = std::min(kPiece, amx::pad32(rows_) - i0) / W;  // an even count (whole K-steps)
        const float* s = s_ + static_cast<Index>(j_) * nb + i0;
        const float base = sh_ > -__builtin_huge_valf() ? sh_ : 0.0f;  // t = v − base
        vf t[kPiece / W];
        vf tm = splat(kNoWeight);
        for (int q = 0; q < nv; ++q) {
            if constexpr (Mode == kGeneral) {
                const double* y = positions_ + static_cast<Index>(j_) * D_.k;
                t[q] = log_weights_(s - i0, buf_.hq[j_], buf_.qn[j_], y, tile_.hp, tile_.lw, tile_.bw, tile_.row,
                                    i0 + W * q, rows_) -
                       base;
            } else {
                const __m512 fm = _mm512_fmadd_ps(_mm512_loadu_ps(s + W * q), _mm512_set1_ps(kLog2e),
                                                  _mm512_loadu_ps(tile_.bias + i0 + W * q));
                const vf v = (vf)fm - splat(buf_.hql[j_] + base);
                // u ≤ 0: v ≤ lw
                t[q] = vmin(v, Mode == kPerPoint ? loadu(tile_.lw + i0 + W * q) - base : splat(-base));
            }
            tm = vmax(tm, t[q]);
        }
        const float pm = lane_max((__m512)tm) + base;  // the largest log2 weight of the step
        if (pm > kValid) {
            float& top = buf_.top[j_];
            top = std::max(top, pm);
            if (!(sh_ > -__builtin_huge_valf())) {
                sh_ = pm;  // the row's earlier steps had no weight: their zeros stand
                for (int q = 0; q < nv; ++q) t[q] -= splat(pm);
            } else if (pm > sh_ + kSlack) {
                sh_ = pm;  // weights up to 2^(pm − sh) would overflow: the row again, with this shift
                esum_ = splat(0.0f);
                p_ = 0;
                return;
            }
        }
        std::uint16_t* el = buf_.el + static_cast<std::size_t>(j_ / 16) * nb * 16 + 32 * (j_ % 16) + 16 * i0;
        const bool none = !(sh_ > -__builtin_huge_valf());
        vf esum = esum_;
        for (int q = 0; q < nv; q += 2) {
            // exp2 of t ≤ −150 (kNoWeight lanes included) is exactly 0
            const vf e0 = none ? splat(0.0f) : exp2_poly(t[q]);
            const vf e1 = none ? splat(0.0f) : exp2_poly(t[q + 1]);
            esum += (vf)amx::split2_store((__m512)e0, (__m512)e1, el + 16 * W * q, limb_e_);
        }
        esum_ = esum;
        if (++p_ == pieces_) {
            buf_.sh[j_] = sh_;
            buf_.esum[j_] = static_cast<double>(lane_sum((__m512)esum_));
            ++j_;
            begin_row();
        }
    }

    static constexpr float kValid = -1.0e38f;  // log2 weights above this are real, below kNoWeight's

    void begin_row()
    {
        p_ = 0;
        esum_ = splat(0.0f);
        if (j_ < m_) sh_ = buf_.top[j_];  // the largest v of the earlier tiles (−inf: none yet)
    }

    const GemmData& D_;
    const Buffers& buf_;
    const double* positions_;
    const int m_;
    const LogWeights& log_weights_;
    const std::size_t limb_e_;
    void (Weigher::*impl_)();
    const float* s_ = nullptr;
    PointTile tile_{};
    int rows_ = 0, pieces_ = 0, j_ = 0, p_ = 0;
    float sh_ = 0.0f;
    vf esum_{};
};

/// Runs steps of a piece of vector work from a product's fill() calls, spread evenly: each call
/// earns steps / calls steps (work left at the end of the product is the caller's).
template <class Work>
class Interleave {
public:
    Interleave(Work& work, long calls) : work_(work), rate_(calls > 0 ? static_cast<double>(work.steps()) / calls : 0.0)
    {
    }
    __attribute__((always_inline)) void operator()()
    {
        credit_ += rate_;
        while (credit_ >= 1.0 && !work_.done()) {
            work_.step();
            credit_ -= 1.0;
        }
    }

private:
    Work& work_;
    double rate_, credit_ = 0.0;
};

struct NoWork {
    __attribute__((always_inline)) void operator()() {}
};

void run_block(const GemmData& D, const double* positions, int m, const std::int64_t* ranges, int nranges, double* out,
               unsigned char* supported, void* scratch)
{
    const int ac = a_cols(D), bc = b_cols(D), nb = D.rows_per_tile;
    auto* base = static_cast<unsigned char*>(scratch);
    base += (kAlign - reinterpret_cast<std::uintptr_t>(base) % kAlign) % kAlign;
    Buffers buf;
    carve(D, base, &buf);  // the caller zero-fills scratch once, so pad rows and columns stay finite

    centre_modes(D, positions, m, buf.centre, buf.a, buf.hq, buf.qn);
    for (int j = 0; j < m; ++j) buf.hql[j] = kLog2e * buf.hq[j];
    const int kpad = amx_kpad(D), cpad = amx_cpad(D), mt = amx::pad16(m) / 16, ks = kpad / 32, cg = cpad / 16;
    const std::size_t limb_a = amx_mpad(D) * static_cast<std::size_t>(kpad),
                      limb_s = static_cast<std::size_t>(nb) * static_cast<std::size_t>(kpad),
                      limb_r = static_cast<std::size_t>(nb) * static_cast<std::size_t>(cpad),
                      limb_e = amx_mpad(D) * static_cast<std::size_t>(nb);
    amx::pack_rows(buf.a, m, ac, 16 * mt, kpad, buf.qa, limb_a);
    MapD acc(buf.acc, m, bc);
    acc.setZero();
    for (int j = 0; j < m; ++j) {
        buf.den[j] = 0;
        buf.top[j] = buf.ref[j] = -__builtin_huge_valf();
    }

    Index total = D.n;
    if (nranges >= 0) {
        total = 0;
        for (int r = 0; r < nranges; ++r) total += ranges[2 * r + 1] - ranges[2 * r];
    }
    const int tiles = static_cast<int>((total + nb - 1) / nb);
    auto rows_of = [&](int t) { return static_cast<int>(std::min<Index>(nb, total - static_cast<Index>(t) * nb)); };

    // Rounding bound of u = −½D² relative to ½|x'|²_w + max_d w · ½|q'|²: the tile sums all six limb
    // terms in float32, 6·kpad roundings, and the dropped terms ≤ 3·2^-24.
    const LogWeights log_weights(D, static_cast<float>((6 * kpad + 16) * 0x1p-23));
    FlushDenormals ftz;  // weights below 2^-126 are exactly 0, as in the SIMD kernels
    RowCursor cursor(ranges, nranges);
    Packer packer(D, buf, cursor);
    Weigher weigher(D, buf, positions, m, log_weights);
    NoWork none;

    // S = A · Bᵀ (a_cols = b_cols, so B's rows are S's K as well as R's N): 6 limb terms.
    auto s_product = [&](int t, auto& fill) {
        amx::product<amx::TermsS>(
            mt, amx::pad16(rows_of(t)) / 16, ks, ks,
            [&](int l, int i, int s) { return buf.qa + l * limb_a + static_cast<std::size_t>(16 * i) * kpad + 32 * s; },
            2 * kpad,
            [&](int l, int g, int s) { return buf.ps + l * limb_s + (static_cast<std::size_t>(g) * ks + s) * 512; },
            buf.s[t % 2], nb, fill);
    };
    auto s_calls = [&](int t) { return amx::groups<amx::TermsS>(mt, amx::pad16(rows_of(t)) / 16, ks); };
    // R = E · B, K-steps in chunks of 2 (gemm_amx.hpp product()): E's two limbs, 5 terms.
    auto r_product = [&](int t, auto& fill) {
        const std::uint16_t* pr = buf.tile[t % 3].pr;
        amx::product<amx::TermsR>(
            mt, cg, amx::pad32(rows_of(t)) / 32, 2,
            [&](int l, int i, int s) { return buf.el + l * limb_e + static_cast<std::size_t>(16 * i) * nb + 512 * s; },
            64, [&](int l, int c, int s) { return pr + l * limb_r + (static_cast<std::size_t>(s) * cg + c) * 512; },
            buf.r, cpad, fill);
    };
    auto r_calls = [&](int t) { return amx::groups<amx::TermsR>(mt, cg, amx::pad32(rows_of(t)) / 32); };
    // R of a tile into the float64 sums, each mode's rows rescaled to one shift (ref).
    auto combine = [&]() {
        for (int j = 0; j < m; ++j) {
            const float st = buf.sh[j];
            if (!(st > -__builtin_huge_valf())) continue;  // no weight in this tile
            float& ref = buf.ref[j];
            if (st > ref) {
                if (ref > -__builtin_huge_valf()) {
                    const double f = std::exp2(static_cast<double>(ref) - st);
                    acc.row(j) *= f;
                    buf.den[j] *= f;
                }
                ref = st;
            }
            const Eigen::Map<const Eigen::RowVectorXf> r(buf.r + static_cast<Index>(j) * cpad, bc);
            const double f = st == ref ? 1.0 : std::exp2(static_cast<double>(st) - ref);
            acc.row(j) += f * r.cast<double>();
            buf.den[j] += f * buf.esum[j];
        }
    };

    amx::configure_tiles();
    if (tiles > 0) {
        packer.start(buf.tile[0], rows_of(0));
        while (!packer.done()) packer.step();
        s_product(0, none);
    }
    for (int t = 0; t < tiles; ++t) {
        if (t + 1 < tiles) packer.start(buf.tile[(t + 1) % 3], rows_of(t + 1));
        if (t >= 1) {
            Interleave<Packer> fill(packer, r_calls(t - 1));
            r_product(t - 1, fill);
        }
        while (!packer.done()) packer.step();
        if (t >= 1) combine();
        weigher.start(buf.s[t % 2], buf.tile[t % 3], rows_of(t));
        if (t + 1 < tiles) {
            Interleave<Weigher> fill(weigher, s_calls(t + 1));
            s_product(t + 1, fill);
        }
        while (!weigher.done()) weigher.step();
    }
    if (tiles > 0) {
        r_product(tiles - 1, none);
        combine();
    }
    amx::release_tiles();

    finish_modes(D, positions, m, buf.centre, buf.acc, buf.den, buf.top, out, supported);
}

}  // namespace
}  // namespace meanshift::openmp_detail
