// Step (a) of the segmentation, banded: the driver's ascent (driver.cpp, Alg. 4) with the pixels
// as seeds, over one band of rows at a time. A mode moves by at most its window radius c·hs per
// step (the new position is a weighted mean of points within the cutoff), so after t steps it has
// only read rows within (t + 1)·c·hs of its pixel: a band prepared with that many rows either side
// gives its pixels the ascents of the whole image. The generic driver keeps ~300 bytes per pixel
// alive at once (prepared points float64 + float32, the kernel layout, modes float64 three times
// over, orderings, per-mode statuses); here they exist for one band only.
#include "skeleton/src/clients/segmentation_filter.hpp"
#include "skeleton/src/core/stopwatch.hpp"

#include "skeleton/src/core/parallel.hpp"
#include "skeleton/src/clients/segmentation_host_filter.hpp"
#include "skeleton/src/core/prepare.hpp"

#include "backends/gpu/rebindable.hpp"

#include <meanshift/errors.hpp>
#include <meanshift/registry.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <future>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace meanshift::detail {
namespace {

// The options cluster() would accept and the banded ascent reproduces; anything else goes the
// generic way (which also says what is wrong).
bool applies(const Options& o)
{
    const bool finite_cut = o.cutoff > 0 && std::isfinite(o.cutoff);
    // (The banded ascent binds Gaussian data: other kernel profiles and blurring go through cluster().)
    return !o.exact && finite_cut && o.bandwidth.shared() && o.kernel == KernelProfile::Gaussian && !o.blurring &&
           (o.search == NeighbourSearch::Auto || o.search == NeighbourSearch::Lattice) && o.max_iterations >= 1 &&
           std::isfinite(o.tolerance) && o.tolerance >= 0 && (!o.fixed_iterations || *o.fixed_iterations >= 1) &&
           std::isfinite(o.merge_eps) && o.merge_eps >= 0 && o.bin_size > 0 && std::isfinite(o.bin_size) &&
           !std::isnan(o.data_bin_size) && o.min_bin_count >= 1;
}

// One band of rows and its halo, prepared for the backend: the rows in prepared units (D), the
// band's own pixels as seeds in the driver's order (Ys).
struct Band {
    Index y0 = 0, y1 = 0, d0 = 0, d1 = 0;
    std::shared_ptr<PreparedData> D = std::make_shared<PreparedData>();
    MatrixD Ys;
    const std::vector<Index>* order = nullptr;
    std::string description;
    double seconds_validate = 0, seconds_search = 0, seconds_order = 0;
};

// The banded ascent of one image: what every band reads (the image, one process's prepared units,
// the band geometry, the stopping rule) and the per-band scratch kept from band to band.
struct BandFilter {
    BandFilter(const float* pixels_, Index H_, Index W_, int C_, const Options& o_)
        : pixels(pixels_), H(H_), W(W_), n(H_ * W_), C(C_), k(2 + C_), o(o_)
    {
    }
    const float* pixels;
    Index H, W, n;
    int C, k;
    const Options& o;
    std::vector<double> centre, scale;  // prepared units of the whole image
    Index band_rows = 0, halo = 0;
    int max_it = 0;
    bool fixed = false;
    double tol2 = 0, cutoff2 = 0;
    // The driver's order of the seeds: a band's Morton order (a block of consecutive modes is a
    // compact tile, which the GPU kernels' blocks rely on; the host binding re-sorts by cell). The
    // same for every full band: computed once (a serial pass of ~60 ms per 4 MP band).
    std::vector<Index> order_full, order_last;
    std::vector<int> iterations;
    std::vector<ModeStatus> last;
    std::vector<unsigned char> flags;  // per pixel of the band: 1 no support, 2 converged

    void prepare(Band& b, Index y0);
    void iterate(Binding& binding, const Band& b, Result& r);
    void store(const Band& b, Result& r);
};

// The band's rows in prepared units (prepare()'s arithmetic), its search and its seeds in order.
void BandFilter::prepare(Band& b, Index y0)
{
    b.y0 = y0;
    b.y1 = std::min(H, y0 + band_rows);
    b.d0 = std::max<Index>(0, b.y0 - halo);
    b.d1 = std::min(H, b.y1 + halo);
    const Index nd = (b.d1 - b.d0) * W, m = (b.y1 - b.y0) * W, first = (b.y0 - b.d0) * W, d0 = b.d0;
    PreparedData& D = *b.D;
    // The band's rows in prepared units, float64 and float32 (prepare()'s one pass).
    auto t = Clock::now();
    D.model = KernelModel::Shared;
    D.points.resize(nd, k);
    D.points_f.resize(nd, k);
    {
        double* out = D.points.data();
        float* out_f = D.points_f.data();
        const double* c = centre.data();
        const double* sc = scale.data();
        MS_PARALLEL_FOR(nd * k)
        for (Index q = 0; q < nd; ++q) {
            const Index y = d0 + q / W, x = q % W;
            const float* p = pixels + static_cast<std::size_t>(y * W + x) * C;
            double* o_row = out + q * k;
            float* of_row = out_f + q * k;
            o_row[0] = (static_cast<double>(static_cast<float>(x)) - c[0]) * sc[0];
            o_row[1] = (static_cast<double>(static_cast<float>(y)) - c[1]) * sc[1];
            for (int ch = 0; ch < C; ++ch) o_row[2 + ch] = (static_cast<double>(p[ch]) - c[2 + ch]) * sc[2 + ch];
            for (int d = 0; d < k; ++d) of_row[d] = static_cast<float>(o_row[d]);
        }
    }
    D.cutoff2 = cutoff2;
    b.seconds_validate = since(t);
    t = Clock::now();
    const PixelLattice lattice{b.d1 - b.d0, W, 0, 1};
    build_search(D, o.search, b.description, &lattice);
    b.seconds_search = since(t);
    t = Clock::now();
    if (b.y1 - b.y0 == std::min(band_rows, H)) {
        b.order = &order_full;
    } else {
        order_last = lattice_order(b.y1 - b.y0, W);  // only the last band is shorter
        b.order = &order_last;
    }
    const std::vector<Index>& order = *b.order;
    b.Ys.resize(m, k);
    const double* P = D.points.data();
    double* Y = b.Ys.data();
    MS_PARALLEL_FOR(m * k)
    for (Index j = 0; j < m; ++j) std::copy_n(P + (first + order[static_cast<std::size_t>(j)]) * k, k, Y + j * k);
    b.seconds_order = since(t);
}

// The bound band's modes stepped until none is active or max_it steps: per mode its steps and its
// last status (iterations, last); the timing and progress in r.
void BandFilter::iterate(Binding& binding, const Band& b, Result& r)
{
    const Index y1 = b.y1, nd = (b.d1 - b.d0) * W, m = (b.y1 - b.y0) * W;
    iterations.resize(static_cast<std::size_t>(m));
    last.resize(static_cast<std::size_t>(m));
    {
        int* iter = iterations.data();
        ModeStatus* st = last.data();
        MS_PARALLEL_FOR(m * 2)
        for (Index j = 0; j < m; ++j) iter[j] = 0, st[j] = ModeStatus::Active;
    }
    StepReport report;
    int it = 0;
    while (binding.active_count() > 0 && it < max_it) {
        const Index a = binding.active_count();
        binding.step(tol2, !fixed, report);
        if (report.kernel_seconds > 0) r.timing.seconds_kernels += report.kernel_seconds;
        // Each mode is reported at most once per step: its counters are its own.
        const Index reported = static_cast<Index>(report.mode.size());
        const Index* rm = report.mode.data();
        const ModeStatus* rs = report.status.data();
        int* iter = iterations.data();
        ModeStatus* st = last.data();
        MS_PARALLEL_FOR(reported * 4)
        for (Index j = 0; j < reported; ++j) {
            const std::size_t q = static_cast<std::size_t>(rm[j]);
            ++iter[q];
            st[q] = rs[j];
        }
        r.timing.pair_interactions +=
            report.pairs >= 0 ? report.pairs : static_cast<double>(a) * static_cast<double>(nd);
        ++it;
        if (o.progress && !o.progress(it, binding.active_count() + (n - y1 * W), n))
            throw Error("cancelled by the progress callback");
    }
    r.timing.iterations = std::max(r.timing.iterations, it);
}

// Back to data units and the pixels' order (from_prepared()'s arithmetic): the band's modes,
// steps and flags into r.
void BandFilter::store(const Band& b, Result& r)
{
    const Index y0 = b.y0, m = (b.y1 - b.y0) * W;
    const std::vector<Index>& order = *b.order;
    const double* c = centre.data();
    const double* sc = scale.data();
    const double* Y = b.Ys.data();
    float* out = r.modes.data();
    int* out_it = r.iterations.data();
    const Index base = y0 * W;
    flags.resize(static_cast<std::size_t>(m));
    unsigned char* fl = flags.data();
    Index without = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(+ : without) num_threads(host_threads()) if (m * k >= kParallelMinValues)
#endif
    for (Index j = 0; j < m; ++j) {
        const Index local = order[static_cast<std::size_t>(j)], p = base + local;
        for (int d = 0; d < k; ++d) out[p * k + d] = static_cast<float>(Y[j * k + d] / sc[d] + c[d]);
        out_it[p] = iterations[static_cast<std::size_t>(j)];
        const bool none = last[static_cast<std::size_t>(j)] == ModeStatus::NoSupport;
        const bool converged = fixed ? !none : last[static_cast<std::size_t>(j)] == ModeStatus::Converged;
        fl[local] = static_cast<unsigned char>((none ? 1 : 0) | (converged ? 2 : 0));
        without += none ? 1 : 0;
    }
    r.modes_without_support += without;
    // std::vector<bool> packs bits into words: threads write whole blocks of 4096 pixels
    // (aligned in the image, so no word is shared between two threads).
    constexpr Index kBlock = 4096;
    const Index b0 = base / kBlock, b1 = (base + m - 1) / kBlock;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(host_threads()) if (m >= kParallelMinValues)
#endif
    for (Index blk = b0; blk <= b1; ++blk) {
        const Index p0 = std::max(base, blk * kBlock), p1 = std::min(base + m, (blk + 1) * kBlock);
        for (Index p = p0; p < p1; ++p) {
            const unsigned char f = fl[p - base];
            r.no_support[static_cast<std::size_t>(p)] = (f & 1) != 0;
            r.converged[static_cast<std::size_t>(p)] = (f & 2) != 0;
        }
    }
}

// Prepared units as prepare() makes them for the whole image: centre = the middle of each column's
// range, scale = 1 / h_d; the same double arithmetic on the same float inputs, so each band's
// prepared points are bit for bit those of the whole image. `var`: the bandwidth's variances.
// False where prepare() would refuse the data (beyond float32): cluster() then says so.
bool image_units(const float* pixels, Index H, Index W, int C, const Options& o, std::vector<double>& centre,
                 std::vector<double>& scale, std::vector<double>& var)
{
    const int k = 2 + C;
    const Index n = H * W;
    const auto ku = static_cast<std::size_t>(k);
    std::vector<float> lo(ku), hi(ku);
    lo[0] = 0, hi[0] = static_cast<float>(W - 1);
    lo[1] = 0, hi[1] = static_cast<float>(H - 1);
    for (int ch = 0; ch < C; ++ch) lo[2 + ch] = hi[2 + ch] = pixels[ch];
    {
        std::vector<float> l(lo.begin() + 2, lo.end()), h(hi.begin() + 2, hi.end());
#if defined(_OPENMP)
#pragma omp parallel num_threads(host_threads()) if (n * C >= kParallelMinValues)
#endif
        {
            std::vector<float> tl(l), th(h);
#if defined(_OPENMP)
#pragma omp for schedule(static) nowait
#endif
            for (Index i = 0; i < n; ++i)
                for (int ch = 0; ch < C; ++ch) {
                    const float v = pixels[static_cast<std::size_t>(i) * C + ch];
                    tl[std::size_t(ch)] = std::min(tl[std::size_t(ch)], v);
                    th[std::size_t(ch)] = std::max(th[std::size_t(ch)], v);
                }
#if defined(_OPENMP)
#pragma omp critical(meanshift_segment_range)
#endif
            for (int ch = 0; ch < C; ++ch) {
                l[std::size_t(ch)] = std::min(l[std::size_t(ch)], tl[std::size_t(ch)]);
                h[std::size_t(ch)] = std::max(h[std::size_t(ch)], th[std::size_t(ch)]);
            }
        }
        std::copy(l.begin(), l.end(), lo.begin() + 2);
        std::copy(h.begin(), h.end(), hi.begin() + 2);
    }
    centre.assign(ku, 0);
    scale.assign(ku, 0);
    var.assign(ku, 0);
    std::vector<double> row(ku);
    for (std::size_t d = 0; d < ku; ++d) {
        centre[d] = 0.5 * (double(lo[d]) + double(hi[d]));
        row[d] = d == 0 ? 0.0 : d == 1 ? 0.0 : double(pixels[d - 2]);
    }
    o.bandwidth.covariance_diagonal(0, row.data(), k, var.data());
    for (std::size_t d = 0; d < ku; ++d) {
        scale[d] = 1.0 / std::sqrt(var[d]);
        // prepare() refuses coordinates beyond float32: leave such data to it (and its message).
        const double extent = std::max(std::fabs(double(lo[d]) - centre[d]), std::fabs(double(hi[d]) - centre[d]));
        if (!(extent * scale[d] < 0.5 * static_cast<double>(std::numeric_limits<float>::max()))) return false;
    }
    return true;
}

// Rows per band (H: one band) and the halo read either side: the farthest a mode can walk in
// max_it steps, plus its window. Host backends run in small bands; the GPU backends in large ones
// (their launches need many modes to fill the device).
void plan_bands(BandFilter& f, bool host, double hs2, Index band_pixels)
{
    const Index H = f.H, W = f.W, n = f.n;
    const Options& o = f.o;
    const int max_it = f.max_it;
    const Index one_band = host ? kFilterOneBandPixels : kDeviceOneBandPixels;
    const Index band_size = host ? kFilterBandPixels : kDeviceBandPixels;
    const double reach = o.cutoff * std::sqrt(hs2);  // the window radius c·hs in pixels
    const double halo_d = std::ceil(static_cast<double>(max_it) * reach * (1 + 1e-6)) + 2;
    const Index halo = halo_d < static_cast<double>(H) ? static_cast<Index>(halo_d) : H;
    Index band_rows = H;
    if (halo < H && (band_pixels > 0 || n > one_band)) {
        band_rows = band_pixels > 0 ? (band_pixels + W - 1) / W : std::max((band_size + W - 1) / W, halo);
        band_rows = std::clamp<Index>(band_rows, 1, H);
    }
    f.halo = halo;
    f.band_rows = band_rows;
}

// Options::max_memory, before anything per pixel is allocated: the result (modes, iterations,
// flags), what segment_image() adds (labels, filtered image) and the largest band (prepared rows:
// float64 + float32 + grid offset + kernel layout; modes: float64 in the binding three times, the
// buffer they are set from and read into, counters, orderings); with several bands, a second
// band's prepared rows and seeds (prepared while the first iterates).
void check_band_memory(const BandFilter& f)
{
    const Index H = f.H, W = f.W, n = f.n, band_rows = f.band_rows, halo = f.halo;
    const int C = f.C, k = f.k;
    const Options& o = f.o;
    const double rows = static_cast<double>(std::min(H, band_rows + 2 * halo)) * static_cast<double>(W);
    const double band = static_cast<double>(std::min(H, band_rows)) * static_cast<double>(W);
    const double slots = band_rows < H ? 2.0 : 1.0;
    check_filter_memory(o, W, H,
                        static_cast<double>(n) * (4.0 * k + 8.25 + 4.0 * C) + slots * rows * (12.0 * k + 8) +
                            band * (40.0 * k + 41) + (slots - 1) * band * 8.0 * k);
}

// Two bands in flight: while the backend iterates band i on this thread, band i + 1 is prepared
// (prepared rows, search, seeds in order) on another, into the other slot. Each slot is kept from
// band to band (same sizes but for the last band: no new pages to fault in); a slot is refilled
// only once the binding holds the other slot's data (rebound or bound afresh), so D has no other
// owner then. Returns the number of bands; `search` names the search.
int filter_bands(BandFilter& f, Backend& backend, Result& r, std::string& search)
{
    const Index H = f.H, W = f.W;
    const Options& o = f.o;
    int bands = 0;
    Band slot[2];
    // One binding refilled band after band where the backend can (gpu::Rebindable: the CUDA
    // binding keeps its device buffers), else bound afresh per band.
    std::unique_ptr<Binding> binding;
    std::future<void> next;  // the next band's preparation; declared after what it uses
    f.prepare(slot[0], 0);
    for (int i = 0;; ++i) {
        Band& b = slot[i % 2];
        if (next.valid()) {
            // Only the wait counts on this thread's clock: the rest ran beside the previous band.
            const auto t = Clock::now();
            next.get();
            r.timing.seconds_validate += since(t);
        } else {
            r.timing.seconds_validate += b.seconds_validate;
            r.timing.seconds_search += b.seconds_search;
            r.timing.seconds_order += b.seconds_order;
        }
        const Index y0 = b.y0, y1 = b.y1, m = (y1 - y0) * W;
        ++bands;
        if (search.empty()) {
            // "pixel lattice W x (band rows), window radius …": name the whole image instead.
            const std::size_t comma = b.description.find(',');
            search = "pixel lattice " + std::to_string(W) + " x " + std::to_string(H) +
                     (comma == std::string::npos ? std::string() : b.description.substr(comma));
        }

        auto t = Clock::now();
        if (bands == 1) r.topology = backend.resolve_topology(o.topology, *b.D);
        auto* refill = dynamic_cast<gpu::Rebindable*>(binding.get());
        const bool rebound = refill && refill->rebind(b.D);
        if (!rebound) {
            binding.reset();  // its device memory is free before the next allocation
            binding = backend.bind(b.D, r.topology);
        }
        binding->set_modes(b.Ys.data(), m, nullptr);
        r.timing.seconds_bind += since(t);
        // The next band is prepared into the other slot now that the binding has let go of its data.
        if (y1 < H) {
            Band& following = slot[(i + 1) % 2];
            const int threads = o.backend_options.threads;
            next = std::async(std::launch::async, [&f, &following, y1, threads] {
                const HostThreads scope(threads);
                f.prepare(following, y1);
            });
        }

        t = Clock::now();
        f.iterate(*binding, b, r);
        binding->read_modes(b.Ys.data());
        if (y1 >= H) binding.reset();  // the last band: the device memory goes now
        r.timing.seconds_iterate += since(t);

        t = Clock::now();
        f.store(b, r);
        r.timing.seconds_group += since(t);
        if (y1 >= H) break;
    }
    return bands;
}

}  // namespace

void check_filter_memory(const Options& o, Index W, Index H, double need)
{
    if (o.max_memory == std::numeric_limits<std::size_t>::max()) return;
    const std::size_t limit = o.max_memory > 0 ? o.max_memory : available_memory();
    if (limit > 0 && need > static_cast<double>(limit))
        throw OutOfMemory("out of memory: segmenting " + std::to_string(W) + " x " + std::to_string(H) +
                              " pixels needs about " + std::to_string(static_cast<long long>(need / 1e6)) +
                              " MB (estimate), over the " +
                              (o.max_memory > 0 ? "max_memory budget of " : "available physical memory of ") +
                              std::to_string(static_cast<long long>(static_cast<double>(limit) / 1e6)) + " MB",
                          static_cast<std::size_t>(need), limit);
}

Index& filter_band_pixels() noexcept
{
    static Index pixels = 0;
    return pixels;
}

bool filter_image(const float* pixels, int height, int width, int channels, const Options& o, Result& r,
                  Index band_pixels)
{
    const auto t_start = Clock::now();
    if (!applies(o) || height < 1 || width < 1 || channels < 1) return false;
    const int C = channels, k = 2 + C;
    const Index H = height, W = width, n = H * W;
    // The openmp backend: the image kernel of its own (segmentation_host_filter.hpp), which reads
    // each mode's window from the colour planes; no prepared points, search or binding.
    {
        const std::string resolved = o.backend == "auto" ? resolve_auto_backend() : o.backend;
        const Index rows = band_pixels > 0 ? (band_pixels + W - 1) / W : 0;
        if (resolved == "openmp" && o.backend_options.openmp.isa == "auto" &&
            filter_image_host(pixels, height, width, channels, o, resolved, rows, r))
            return true;
    }
    if (static_cast<int>(o.bandwidth.parameters().size()) != k) return false;
    const HostThreads threads_scope(o.backend_options.threads);
    BandFilter f(pixels, H, W, C, o);
    std::vector<double> var;
    if (!image_units(pixels, H, W, C, o, f.centre, f.scale, var)) return false;

    auto backend = make_backend(o.backend, o.backend_options);
    if (!backend->supports_cutoff()) return false;
    const std::string name = backend->name();
    f.max_it = o.fixed_iterations ? *o.fixed_iterations : o.max_iterations;
    plan_bands(f, name == "openmp" || name == "serial", var[1], band_pixels);
    check_band_memory(f);

    r = Result{};
    r.modes.resize(n, k);
    r.iterations.assign(static_cast<std::size_t>(n), 0);
    r.converged.assign(static_cast<std::size_t>(n), false);
    r.no_support.assign(static_cast<std::size_t>(n), false);
    r.centres.resize(0, k);
    r.backend = name;
    r.cutoff = o.cutoff;
    r.seeding = "all points";
    r.seed_count = n;
    r.timing.seconds_validate = since(t_start);
    f.fixed = o.fixed_iterations.has_value();
    f.tol2 = o.tolerance * o.tolerance;
    f.cutoff2 = o.cutoff * o.cutoff;
    f.order_full = lattice_order(std::min(f.band_rows, H), W);
    std::string search;
    const int bands = filter_bands(f, *backend, r, search);
    if (bands > 1)
        search += "; in " + std::to_string(bands) + " bands of " + std::to_string(f.band_rows) + " rows, each with " +
                  std::to_string(f.halo) + " rows either side";
    r.search = search;
    r.timing.seconds_prepare =
        r.timing.seconds_validate + r.timing.seconds_search + r.timing.seconds_bind + r.timing.seconds_order;
    r.timing.seconds_total = since(t_start);
    r.timing.peak_memory_bytes = peak_memory_bytes();
    return true;
}

}  // namespace meanshift::detail
