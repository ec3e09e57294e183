// Step (a) of the segmentation, banded: the driver's ascent (driver.cpp, Alg. 4) with the pixels
// as seeds, over one band of rows at a time. A mode moves by at most its window radius c·hs per
// step (the new position is a weighted mean of points within the cutoff), so after t steps it has
// only read rows within (t + 1)·c·hs of its pixel: a band prepared with that many rows either side
// gives its pixels the ascents of the whole image. The generic driver keeps ~300 bytes per pixel
// alive at once (prepared points float64 + float32, the kernel layout, modes float64 three times
// over, orderings, per-mode statuses); here they exist for one band only.
#include "segmentation_filter.hpp"
#include "stopwatch.hpp"

#include "parallel.hpp"
#include "segmentation_host_filter.hpp"
#include "prepare.hpp"

#include <meanshift/errors.hpp>
#include <meanshift/registry.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
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
    return !o.exact && finite_cut && o.bandwidth.shared() &&
           (o.search == NeighbourSearch::Auto || o.search == NeighbourSearch::Lattice) && o.max_iterations >= 1 &&
           std::isfinite(o.tolerance) && o.tolerance >= 0 && (!o.fixed_iterations || *o.fixed_iterations >= 1) &&
           std::isfinite(o.merge_eps) && o.merge_eps >= 0 && o.bin_size > 0 && std::isfinite(o.bin_size) &&
           !std::isnan(o.data_bin_size) && o.min_bin_count >= 1;
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
    const auto ku = static_cast<std::size_t>(k);
    if (static_cast<int>(o.bandwidth.parameters().size()) != k) return false;
    const HostThreads threads_scope(o.backend_options.threads);

    // Prepared units as prepare() makes them for the whole image: centre = the middle of each
    // column's range, scale = 1 / h_d; the same double arithmetic on the same float inputs, so each
    // band's prepared points are bit for bit those of the whole image.
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
    std::vector<double> centre(ku), scale(ku), row(ku), var(ku);
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

    auto backend = make_backend(o.backend, o.backend_options);
    if (!backend->supports_cutoff()) return false;
    const std::string name = backend->name();
    // Host backends run in small bands; the GPU backends in large ones (their launches need many
    // modes to fill the device).
    const bool host = name == "openmp" || name == "serial";
    const Index one_band = host ? kFilterOneBandPixels : kDeviceOneBandPixels;
    const Index band_size = host ? kFilterBandPixels : kDeviceBandPixels;
    const int max_it = o.fixed_iterations ? *o.fixed_iterations : o.max_iterations;
    const double reach = o.cutoff * std::sqrt(var[1]);  // the window radius c·hs in pixels
    const double halo_d = std::ceil(static_cast<double>(max_it) * reach * (1 + 1e-6)) + 2;
    const Index halo = halo_d < static_cast<double>(H) ? static_cast<Index>(halo_d) : H;
    Index band_rows = H;
    if (halo < H && (band_pixels > 0 || n > one_band)) {
        band_rows = band_pixels > 0 ? (band_pixels + W - 1) / W : std::max((band_size + W - 1) / W, halo);
        band_rows = std::clamp<Index>(band_rows, 1, H);
    }

    // Options::max_memory, before anything per pixel is allocated: the result (modes, iterations,
    // flags), what segment_image() adds (labels, filtered image) and the largest band (prepared rows:
    // float64 + float32 + grid offset + kernel layout; modes: float64 in the binding three times, the
    // buffer they are set from and read into, counters, orderings).
    {
        const double rows = static_cast<double>(std::min(H, band_rows + 2 * halo)) * static_cast<double>(W);
        const double band = static_cast<double>(std::min(H, band_rows)) * static_cast<double>(W);
        check_filter_memory(o, W, H,
                            static_cast<double>(n) * (4.0 * k + 8.25 + 4.0 * C) + rows * (12.0 * k + 8) +
                                band * (40.0 * k + 40));
    }

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

    const bool fixed = o.fixed_iterations.has_value();
    const double tol2 = o.tolerance * o.tolerance;
    const double cutoff2 = o.cutoff * o.cutoff;
    std::string search;
    int bands = 0;
    // Kept from band to band (same sizes but for the last band: no new pages to fault in): the
    // prepared rows, the modes in and out, the per-mode counters. The binding is released first,
    // so D has no other owner when it is refilled.
    auto D = std::make_shared<PreparedData>();
    MatrixD Ys;
    std::vector<int> iterations;
    std::vector<ModeStatus> last;
    for (Index y0 = 0; y0 < H; y0 += band_rows) {
        const Index y1 = std::min(H, y0 + band_rows);
        const Index d0 = std::max<Index>(0, y0 - halo), d1 = std::min(H, y1 + halo);
        const Index nd = (d1 - d0) * W, m = (y1 - y0) * W, first = (y0 - d0) * W;
        ++bands;

        // The band's rows in prepared units, float64 and float32 (prepare()'s one pass).
        auto t = Clock::now();
        D->model = KernelModel::Shared;
        D->points.resize(nd, k);
        D->points_f.resize(nd, k);
        {
            double* out = D->points.data();
            float* out_f = D->points_f.data();
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
        D->cutoff2 = cutoff2;
        r.timing.seconds_validate += since(t);
        t = Clock::now();
        std::string description;
        const PixelLattice lattice{d1 - d0, W, 0, 1};
        build_search(*D, o.search, description, &lattice);
        r.timing.seconds_search += since(t);
        if (search.empty()) {
            // "pixel lattice W x (band rows), window radius …": name the whole image instead.
            const std::size_t comma = description.find(',');
            search = "pixel lattice " + std::to_string(W) + " x " + std::to_string(H) +
                     (comma == std::string::npos ? std::string() : description.substr(comma));
        }

        t = Clock::now();
        if (bands == 1) r.topology = backend->resolve_topology(o.topology, *D);
        std::unique_ptr<Binding> binding = backend->bind(D, r.topology);
        r.timing.seconds_bind += since(t);
        t = Clock::now();
        // The driver's order of the seeds: the band's Morton order (a block of consecutive modes is
        // a compact tile, which the GPU kernels' blocks rely on; the host binding re-sorts by cell).
        const std::vector<Index> order = lattice_order(y1 - y0, W);
        {
            Ys.resize(m, k);
            const double* P = D->points.data();
            MS_PARALLEL_FOR(m * k)
            for (Index j = 0; j < m; ++j)
                std::copy_n(P + (first + order[static_cast<std::size_t>(j)]) * k, k, Ys.data() + j * k);
            r.timing.seconds_order += since(t);
            t = Clock::now();
            binding->set_modes(Ys.data(), m, nullptr);
            r.timing.seconds_bind += since(t);
        }

        t = Clock::now();
        iterations.assign(static_cast<std::size_t>(m), 0);
        last.assign(static_cast<std::size_t>(m), ModeStatus::Active);
        StepReport report;
        int it = 0;
        while (binding->active_count() > 0 && it < max_it) {
            const Index a = binding->active_count();
            binding->step(tol2, !fixed, report);
            if (report.kernel_seconds > 0) r.timing.seconds_kernels += report.kernel_seconds;
            for (std::size_t j = 0; j < report.mode.size(); ++j) {
                const std::size_t q = static_cast<std::size_t>(report.mode[j]);
                ++iterations[q];
                last[q] = report.status[j];
            }
            r.timing.pair_interactions +=
                report.pairs >= 0 ? report.pairs : static_cast<double>(a) * static_cast<double>(nd);
            ++it;
            if (o.progress && !o.progress(it, binding->active_count() + (n - y1 * W), n))
                throw Error("cancelled by the progress callback");
        }
        r.timing.iterations = std::max(r.timing.iterations, it);
        binding->read_modes(Ys.data());
        binding.reset();
        r.timing.seconds_iterate += since(t);

        // Back to data units and the pixels' order (from_prepared()'s arithmetic).
        t = Clock::now();
        {
            const double* c = centre.data();
            const double* sc = scale.data();
            float* out = r.modes.data();
            const Index base = y0 * W;
            MS_PARALLEL_FOR(m * k)
            for (Index j = 0; j < m; ++j) {
                const Index p = base + order[static_cast<std::size_t>(j)];
                for (int d = 0; d < k; ++d) out[p * k + d] = static_cast<float>(Ys(j, d) / sc[d] + c[d]);
            }
        }
        for (Index j = 0; j < m; ++j) {  // serial: std::vector<bool> packs bits
            const std::size_t sj = static_cast<std::size_t>(j);
            const std::size_t p = static_cast<std::size_t>(y0 * W + order[sj]);
            r.iterations[p] = iterations[sj];
            const bool none = last[sj] == ModeStatus::NoSupport;
            r.no_support[p] = none;
            r.converged[p] = fixed ? !none : last[sj] == ModeStatus::Converged;
            if (none) ++r.modes_without_support;
        }
        r.timing.seconds_group += since(t);
    }
    if (bands > 1)
        search += "; in " + std::to_string(bands) + " bands of " + std::to_string(band_rows) + " rows, each with " +
                  std::to_string(halo) + " rows either side";
    r.search = search;
    r.timing.seconds_prepare = r.timing.seconds_validate + r.timing.seconds_search + r.timing.seconds_bind +
                               r.timing.seconds_order;
    r.timing.seconds_total = since(t_start);
    r.timing.peak_memory_bytes = peak_memory_bytes();
    return true;
}

}  // namespace meanshift::detail
