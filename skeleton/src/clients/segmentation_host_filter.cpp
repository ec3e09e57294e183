// The image ascent on the host (segmentation_host_filter.hpp). Per step, a mode at (x, y, c)
// visits the rows of its window and, in each, the run of pixels within the disc of radius
// cutoff · hs: contiguous floats of the colour planes, which the compiler vectorises (one
// lane per pixel; exp by a polynomial, no library call). The disc holds π/4 of the square
// window and the run needs no gather: the generic SIMD kernel's blocks read the union of 16-32
// modes' square windows through a cell grid.
#include "skeleton/src/clients/segmentation_host_filter.hpp"
#include "skeleton/src/clients/segmentation_filter.hpp"
#include "skeleton/src/core/stopwatch.hpp"

#include "skeleton/src/core/parallel.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define MS_IMAGE_X86 1
#define MS_TARGET(isa) __attribute__((target(isa)))
#else
#define MS_IMAGE_X86 0
#define MS_TARGET(isa)
#endif
#if defined(__GNUC__) || defined(__clang__)
#define MS_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define MS_ALWAYS_INLINE inline
#endif

// Vectors wider than the translation unit's baseline are passed between always-inline functions
// of one target only: no ABI crosses a call.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace meanshift::detail {
namespace {

// Vectors of L float32 / int32 lanes (GCC and Clang vector extensions): the same code compiles
// to SSE, AVX2 or AVX-512 under each function's target attribute.
template <int L>
struct Lanes {
    typedef float F __attribute__((vector_size(4 * L)));
    typedef std::int32_t I __attribute__((vector_size(4 * L)));
    typedef std::uint32_t U __attribute__((vector_size(4 * L)));
};

template <int L>
MS_ALWAYS_INLINE typename Lanes<L>::F load(const float* p)
{
    typename Lanes<L>::F v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// exp(−d2 / 2) for 0 ≤ d2 ≤ 100: 2^t with t = −d2·log2(e)/2 split as n + f, n an integer,
// |f| ≤ ½, 2^f by its Taylor series to f⁵ (relative error < 3e-6), 2^n through the exponent bits.
// Larger d2 give garbage (no trap: unsigned wrap-around), which the callers mask.
template <int L>
MS_ALWAYS_INLINE typename Lanes<L>::F exp_neg_half(typename Lanes<L>::F d2)
{
    using F = typename Lanes<L>::F;
    using I = typename Lanes<L>::I;
    using U = typename Lanes<L>::U;
    const F t = d2 * -0.72134752f;  // −log2(e) / 2
    const I n = __builtin_convertvector(t - 0.5f, I);  // t ≤ 0: truncation towards zero rounds to nearest
    const F f = t - __builtin_convertvector(n, F);
    F p = f * 1.3333558e-3f + 9.6181291e-3f;  // ln(2)^5 / 120, …
    p = p * f + 5.5504109e-2f;
    p = p * f + 2.4022651e-1f;
    p = p * f + 6.9314718e-1f;
    p = p * f + 1.0f;
    const U bits = ((U)n + 127u) << 23;
    return p * (F)bits;  // same-size vector cast: the bits as floats
}

struct Params {
    const float* planes;  // C planes of H·W floats (+ padding): colour / hr
    std::size_t stride = 0;  // floats from one plane to the next
    int C = 0, H = 0, W = 0;
    float hs = 0, inv_hs2 = 0;  // pixels; 1 / hs²
    float reach = 0;  // cutoff · hs, pixels
    float cutoff2 = 0;  // in bandwidths²
    double tol2 = 0;
    int max_it = 0;
    bool fixed = false;
};

// Rows a window may span: reach (cutoff · hs) is below 1000 pixels (filter_image_host's check).
constexpr int kMaxRows = 2 * 1000 + 3;

struct PixelOutcome {
    int iterations = 0;
    bool converged = false;
    bool no_support = false;
};

// One row's run of `len` pixels: adds Σ w, Σ w·dx (in bandwidths), Σ w·(c − y_c) per lane to ry,
// ax, ac. dxs0: the lanes' first dx / hs. Lanes past the run lie outside the disc, so the cutoff
// drops them, unless the image's right edge cut the run (kMasked): there they read the next
// row's pixels and are masked by their index.
template <int C, int L, bool kMasked>
MS_ALWAYS_INLINE void run_sums(const float* const* c, int len, typename Lanes<L>::F dxs0, float step, float dy2,
                               const float* yc, float cutoff2, typename Lanes<L>::F& ry, typename Lanes<L>::F& ax,
                               typename Lanes<L>::F* ac)
{
    using F = typename Lanes<L>::F;
    using I = typename Lanes<L>::I;
    I lane_i;
    for (int l = 0; l < L; ++l) lane_i[l] = l;
    F dx = dxs0;
    for (int j = 0; j < len; j += L, dx += step) {
        F d2 = dx * dx + dy2;
        F e[C];
        for (int ch = 0; ch < C; ++ch) {
            e[ch] = load<L>(c[ch] + j) - yc[ch];
            d2 += e[ch] * e[ch];
        }
        I keep = d2 <= cutoff2;
        if constexpr (kMasked) keep &= lane_i < (len - j);
        const F w = keep ? exp_neg_half<L>(d2) : F{};
        ry += w;
        ax += w * dx;
        for (int ch = 0; ch < C; ++ch) ac[ch] += w * e[ch];
    }
}

// One pixel's ascent; `mode` receives (x, y, c / hr ...). Returns the pairs visited.
template <int C, int L>
MS_ALWAYS_INLINE double ascend(const Params& P, int x0, int y0, float* mode, PixelOutcome& out)
{
    float yx = static_cast<float>(x0), yy = static_cast<float>(y0), yc[C];
    for (int ch = 0; ch < C; ++ch) yc[ch] = P.planes[ch * P.stride + static_cast<std::size_t>(y0) * P.W + x0];
    const float r2 = P.reach * P.reach;
    double pairs = 0;
    for (int it = 0; it < P.max_it; ++it) {
        const int v0 = std::max(0, static_cast<int>(std::ceil(yy - P.reach)));
        const int v1 = std::min(P.H - 1, static_cast<int>(std::floor(yy + P.reach)));
        using F = typename Lanes<L>::F;
        F lane;
        for (int l = 0; l < L; ++l) lane[l] = static_cast<float>(l);
        // Σ w, Σ w·(x − y_x), Σ w·(y − y_y), Σ w·(c − y_c) per lane over the whole window.
        F a0 = F{}, ax = F{}, ay = F{}, ac[C];
        for (int ch = 0; ch < C; ++ch) ac[ch] = F{};
        // The rows' runs first (their bounds' sqrt/ceil/floor chains stay out of the sums' loop).
        int first[kMaxRows], count[kMaxRows], start[kMaxRows];
        float dys[kMaxRows];
        int rows = 0;
        bool clipped[kMaxRows];
        for (int v = v0; v <= v1; ++v) {
            const float dy = static_cast<float>(v) - yy;
            const float rest = r2 - dy * dy;
            if (rest < 0) continue;
            const float half = std::sqrt(rest);
            const int u0 = std::max(0, static_cast<int>(std::ceil(yx - half)));
            const int right = static_cast<int>(std::floor(yx + half));
            const int u1 = std::min(P.W - 1, right);
            if (u1 < u0) continue;
            first[rows] = v * P.W + u0;
            start[rows] = u0;
            count[rows] = u1 - u0 + 1;
            dys[rows] = dy;
            clipped[rows] = right > u1;
            ++rows;
        }
        const float inv_hs = 1.0f / P.hs, step = static_cast<float>(L) * inv_hs;
        for (int q = 0; q < rows; ++q) {
            const float dy = dys[q];
            const int len = count[q];
            pairs += len;
            const float dys_ = dy * inv_hs;
            const std::size_t row = static_cast<std::size_t>(first[q]);
            const float* c[C];
            for (int ch = 0; ch < C; ++ch) c[ch] = P.planes + ch * P.stride + row;
            const F dxs0 = (lane + (static_cast<float>(start[q]) - yx)) * inv_hs;
            F ry = F{};
            if (clipped[q])
                run_sums<C, L, true>(c, len, dxs0, step, dys_ * dys_, yc, P.cutoff2, ry, ax, ac);
            else
                run_sums<C, L, false>(c, len, dxs0, step, dys_ * dys_, yc, P.cutoff2, ry, ax, ac);
            a0 += ry;
            ay += ry * dy;
        }
        double s0 = 0, sx = 0, sy = 0, sc[C];
        for (int ch = 0; ch < C; ++ch) sc[ch] = 0;
        for (int l = 0; l < L; ++l) {
            s0 += a0[l];
            sx += ax[l] * P.hs;
            sy += ay[l];
            for (int ch = 0; ch < C; ++ch) sc[ch] += ac[ch][l];
        }
        if (!(s0 > 0)) {  // no pixel within reach: the mode stays (finish_mode's rule)
            out.no_support = true;
            ++out.iterations;
            if (!P.fixed) break;
            continue;
        }
        const double mx = sx / s0, my = sy / s0;
        double shift2 = (mx * mx + my * my) * P.inv_hs2;
        yx = static_cast<float>(yx + mx);
        yy = static_cast<float>(yy + my);
        for (int ch = 0; ch < C; ++ch) {
            const double m = sc[ch] / s0;
            shift2 += m * m;
            yc[ch] = static_cast<float>(yc[ch] + m);
        }
        ++out.iterations;
        if (!P.fixed && shift2 <= P.tol2) {
            out.converged = true;
            break;
        }
    }
    if (P.fixed) out.converged = !out.no_support;
    mode[0] = yx;
    mode[1] = yy;
    for (int ch = 0; ch < C; ++ch) mode[2 + ch] = yc[ch];
    return pairs;
}

// Row v of the image: modes (H·W × (2 + C), colours still / hr) and outcomes. The threads share
// rows in run_rows(); the row itself is compiled once per instruction set (an OpenMP region's
// outlined body would not inherit a function's target attribute).
template <int C, int L>
MS_ALWAYS_INLINE double row_impl(const Params& P, int v, float* modes, PixelOutcome* outcome)
{
    double pairs = 0;
    for (int u = 0; u < P.W; ++u) {
        const std::size_t i = static_cast<std::size_t>(v) * P.W + u;
        pairs += ascend<C, L>(P, u, v, modes + i * (2 + C), outcome[i]);
    }
    return pairs;
}

using RowFn = double (*)(const Params&, int, float*, PixelOutcome*);

template <int C>
double row_generic(const Params& P, int v, float* modes, PixelOutcome* outcome)
{
    return row_impl<C, 4>(P, v, modes, outcome);
}

#if MS_IMAGE_X86
template <int C>
MS_TARGET("avx2,fma")
double row_avx2(const Params& P, int v, float* modes, PixelOutcome* outcome)
{
    return row_impl<C, 8>(P, v, modes, outcome);
}
template <int C>
MS_TARGET("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma,prefer-vector-width=512")
double row_avx512(const Params& P, int v, float* modes, PixelOutcome* outcome)
{
    return row_impl<C, 16>(P, v, modes, outcome);
}
#endif

// Rows [r0, r1), dynamically shared among the host threads.
double run_rows(RowFn row, const Params& P, int r0, int r1, float* modes, PixelOutcome* outcome)
{
    double pairs = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 1) num_threads(host_threads()) reduction(+ : pairs)
#endif
    for (int v = r0; v < r1; ++v) pairs += row(P, v, modes, outcome);
    return pairs;
}

template <int C>
RowFn pick(const std::string& isa, int& lanes)
{
#if MS_IMAGE_X86
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx512 && (isa == "auto" || isa == "amx" || isa == "avx512")) {
        lanes = 16;
        return &row_avx512<C>;
    }
    if (avx2 && isa != "generic") {
        lanes = 8;
        return &row_avx2<C>;
    }
#else
    (void)isa;
#endif
    lanes = 4;
    return &row_generic<C>;
}

// Whether the image kernel takes these options (else the banded or generic path runs): the openmp
// backend with its default topology and pair form, the truncated kernel, a shared diagonal
// bandwidth (hs, hs, hr, …, hr), sizes that float32 keeps exact. Sets hs and hr.
bool host_filter_applies(int height, int width, int C, const Options& o, const std::string& backend_name, double& hs,
                         double& hr)
{
    const int k = 2 + C;
    if (backend_name != "openmp" || C < 1 || C > 4 || height < 1 || width < 1) return false;
    const Topology& t = o.topology;
    if (t.ppus != 0 || t.pus_per_ppu != 0 || t.f_vppu != 0 || t.f_load != 0) return false;
    if (o.backend_options.pair_form != PairForm::Auto) return false;
    if (o.exact || !(o.cutoff > 0) || !std::isfinite(o.cutoff) || !o.bandwidth.shared()) return false;
    if (o.search != NeighbourSearch::Auto && o.search != NeighbourSearch::Lattice) return false;
    if (o.max_iterations < 1 || !std::isfinite(o.tolerance) || o.tolerance < 0) return false;
    if (o.fixed_iterations && *o.fixed_iterations < 1) return false;
    if (!(std::isfinite(o.merge_eps) && o.merge_eps >= 0 && o.bin_size > 0 && std::isfinite(o.bin_size) &&
          !std::isnan(o.data_bin_size) && o.min_bin_count >= 1))
        return false;
    if (static_cast<int>(o.bandwidth.parameters().size()) != k) return false;
    // The diagonal (hs, hs, hr, …, hr): one spatial and one range bandwidth.
    std::vector<double> row(static_cast<std::size_t>(k), 0.0), var(static_cast<std::size_t>(k));
    o.bandwidth.covariance_diagonal(0, row.data(), k, var.data());
    for (double v : var)
        if (!(v > 0) || !std::isfinite(v)) return false;
    if (var[0] != var[1]) return false;
    for (int d = 3; d < k; ++d)
        if (var[std::size_t(d)] != var[2]) return false;
    hs = std::sqrt(var[0]), hr = std::sqrt(var[2]);
    const double reach = o.cutoff * hs;
    // Float32 pixel coordinates and colours / hr must stay exact enough: leave huge ones to the
    // generic path (and its checks).
    if (!(reach < 1000) || !(hs >= 1e-3) || height > (1 << 24) || width > (1 << 24)) return false;
    const std::string isa = o.backend_options.openmp.isa;
    if (isa != "auto" && isa != "amx" && isa != "avx512" && isa != "avx2" && isa != "generic") return false;
    return true;
}

// The colours back to data units (r.modes) and the pixels' outcomes into the result's per-mode
// vectors.
void store_outcomes(const std::vector<PixelOutcome>& outcome, double hr, Index n, int C, Result& r)
{
    const int k = 2 + C;
    float* modes = r.modes.data();
    {
        const float fhr = static_cast<float>(hr);
        MS_PARALLEL_FOR(n * k)
        for (Index i = 0; i < n; ++i)
            for (int ch = 0; ch < C; ++ch) modes[i * k + 2 + ch] *= fhr;
    }
    int most = 0;
    for (Index i = 0; i < n; ++i) {  // serial: std::vector<bool> packs bits
        const PixelOutcome& q = outcome[static_cast<std::size_t>(i)];
        const std::size_t si = static_cast<std::size_t>(i);
        r.iterations[si] = q.iterations;
        most = std::max(most, q.iterations);
        r.converged[si] = q.converged;
        r.no_support[si] = q.no_support;
        if (q.no_support) ++r.modes_without_support;
    }
    r.timing.iterations = most;
}

}  // namespace

bool filter_image_host(const float* pixels, int height, int width, int channels, const Options& o,
                       const std::string& backend_name, Index band_rows, Result& r)
{
    const auto t_start = Clock::now();
    const int C = channels, k = 2 + C;
    double hs = 0, hr = 0;
    if (!host_filter_applies(height, width, C, o, backend_name, hs, hr)) return false;
    const double reach = o.cutoff * hs;
    const std::string isa = o.backend_options.openmp.isa;

    const Index H = height, W = width, n = H * W;
    // The result (modes float32, iterations, flags), what segment_image() adds (labels, filtered
    // image) and the colour planes and outcomes of this path.
    check_filter_memory(o, W, H, static_cast<double>(n) * (4.0 * k + 8.25 + 4.0 * C + 4.0 * C + 8.0));
    const HostThreads threads_scope(o.backend_options.threads);

    r = Result{};
    r.backend = "openmp";
    r.cutoff = o.cutoff;
    r.seeding = "all points";
    r.seed_count = n;
    r.centres.resize(0, k);
    r.modes.resize(n, k);
    r.iterations.assign(static_cast<std::size_t>(n), 0);
    r.converged.assign(static_cast<std::size_t>(n), false);
    r.no_support.assign(static_cast<std::size_t>(n), false);

    // The colour planes in bandwidths (one pass, in parallel).
    // Each plane padded by one vector (zeros): a run's last vector may read past the image.
    const std::size_t stride = static_cast<std::size_t>(n) + 16;
    std::vector<float> planes(stride * static_cast<std::size_t>(C), 0.0f);
    {
        const float inv_hr = static_cast<float>(1.0 / hr);
        float* pl = planes.data();
        MS_PARALLEL_FOR(n * C)
        for (Index i = 0; i < n; ++i)
            for (int ch = 0; ch < C; ++ch)
                pl[static_cast<std::size_t>(ch) * stride + static_cast<std::size_t>(i)] =
                    pixels[static_cast<std::size_t>(i) * C + ch] * inv_hr;
    }
    r.timing.seconds_validate = since(t_start);

    Params P;
    P.planes = planes.data();
    P.stride = stride;
    P.C = C, P.H = height, P.W = width;
    P.hs = static_cast<float>(hs);
    P.inv_hs2 = static_cast<float>(1.0 / (hs * hs));
    P.reach = static_cast<float>(reach);
    P.cutoff2 = static_cast<float>(o.cutoff * o.cutoff);
    P.tol2 = o.tolerance * o.tolerance;
    P.fixed = o.fixed_iterations.has_value();
    P.max_it = P.fixed ? *o.fixed_iterations : o.max_iterations;

    int lanes = 4;
    RowFn run = nullptr;
    switch (C) {
    case 1: run = pick<1>(isa, lanes); break;
    case 2: run = pick<2>(isa, lanes); break;
    case 3: run = pick<3>(isa, lanes); break;
    default: run = pick<4>(isa, lanes); break;
    }
    r.topology.ppus = host_threads();
    r.topology.pus_per_ppu = lanes;
    r.topology.f_vppu = 1;
    r.topology.f_load = 1;

    // Rows in bands: progress (and cancellation) between them; the default band is sized so that
    // the callback comes a few times a second on a small machine.
    const Index rows = band_rows > 0 ? std::min<Index>(band_rows, H) : std::clamp<Index>((Index{1} << 18) / W, 1, H);
    std::vector<PixelOutcome> outcome(static_cast<std::size_t>(n));
    float* modes = r.modes.data();
    const auto t_iter = Clock::now();
    int bands = 0;
    for (Index y0 = 0; y0 < H; y0 += rows) {
        const Index y1 = std::min(H, y0 + rows);
        ++bands;
        r.timing.pair_interactions +=
            run_rows(run, P, static_cast<int>(y0), static_cast<int>(y1), modes, outcome.data());
        if (o.progress) {
            // Each pixel ascends to its end before the next band: the report is per band, with the
            // most iterations a pixel of it made (at least 1) and the pixels of the bands still to come.
            int most = 1;
            for (Index q = y0 * W; q < y1 * W; ++q)
                most = std::max(most, outcome[static_cast<std::size_t>(q)].iterations);
            if (!o.progress(most, n - y1 * W, n)) throw Error("cancelled by the progress callback");
        }
    }
    r.timing.seconds_iterate = since(t_iter);
    r.timing.seconds_kernels = r.timing.seconds_iterate;

    // Colours back to data units; the outcomes into the result's per-mode vectors.
    const auto t_out = Clock::now();
    store_outcomes(outcome, hr, n, C, r);
    r.timing.seconds_group = since(t_out);

    const double disc = 3.14159265358979 * reach * reach;
    r.search = "pixel lattice " + std::to_string(W) + " x " + std::to_string(H) + ", window radius " +
               std::to_string(static_cast<long long>(std::floor(reach))) + " px (disc of ~" +
               std::to_string(static_cast<long long>(disc)) + " pixels), image kernel, " + std::to_string(lanes) +
               " lanes";
    if (bands > 1 && band_rows > 0)
        r.search += "; in " + std::to_string(bands) + " bands of " + std::to_string(rows) + " rows";
    r.timing.seconds_prepare = r.timing.seconds_validate;
    r.timing.seconds_total = since(t_start);
    r.timing.peak_memory_bytes = peak_memory_bytes();
    return true;
}

}  // namespace meanshift::detail
