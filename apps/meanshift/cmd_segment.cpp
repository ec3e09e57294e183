// meanshift segment IMAGE --spatial-bandwidth HS --range-bandwidth HR -o OUT.png
//     [--labels-image L.png] [--filtered-output F.png] [--labels IDS.npy] [--all-outputs] [--json]
// Mean-shift segmentation (Comaniciu & Meer 2002, the EDISON pipeline; meanshift/segmentation.hpp):
// every pixel is a point (x, y, L*, a*, b*) with the diagonal bandwidth (hs, hs, hr, hr, hr); its
// mode gives the filtered image; neighbouring pixels with close modes and adjacent regions with
// close colours are fused; regions under --min-region pixels are pruned into their neighbours.
#include "cli_options.hpp"
#include "cmd_segment_raster.hpp"
#include "colour.hpp"
#include "commands.hpp"
#include "image_codecs.hpp"
#include "io_image.hpp"
#include "io_matrix.hpp"
#include "memory.hpp"
#include "output_files.hpp"
#include "progress.hpp"
#include "stage_report.hpp"

#include <meanshift/meanshift.hpp>
#include <meanshift/registry.hpp>
#include <meanshift/segmentation.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace mscli {
namespace {

struct SegmentArgs {
    std::string input;
    std::string output;
    std::string labels_output;
    std::string filtered_output;
    std::string labels_image;
    bool all_outputs = false;  // --all-outputs: the label and filtered images named after -o as well
    bool json = false;  // --json: the run's stages as one JSON object on the last line
    double spatial = 3.0;
    double range = 6.0;
    long long min_region = 40;
    bool exact = false;  // --exact, unless the shared run options provide it
    // --cutoff, likewise: the library's filtering default, 4 bandwidths (SegmentOptions).
    double cutoff = meanshift::SegmentOptions::filtering_defaults().cutoff;
    bool own_cutoff = false;
    double fusion = 1.0;
    bool adaptive = false;  // --adaptive: per-pixel range bandwidths (SegmentOptions::AdaptiveRange)
    long long adaptive_k = 0;
    long long adaptive_window = 0;
    long long max_pixels = 0;
    std::string max_image_pixels = "auto";  // auto: the memory estimate decides (MemoryOption)
    MemoryOption memory;
    RunOptions run;
    ConvergenceOptions conv;
    ProfileOptions profile;
};

// The largest --adaptive-window whose (2r+1)^2 pixels an int counts, and that count.
constexpr long long kMaxAdaptiveWindow = 23169;
constexpr long long kMaxAdaptiveWindowPixels = (2 * kMaxAdaptiveWindow + 1) * (2 * kMaxAdaptiveWindow + 1);

bool ends_with_png(const std::string& s)
{
    if (s.size() < 4) return false;
    std::string ext = s.substr(s.size() - 4);
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return ext == ".png";
}

// Distinct colours for neighbouring label numbers: hues step by the golden ratio.
void false_colour(int label, std::uint8_t rgb[3])
{
    const double h = std::fmod(label * 0.6180339887498949, 1.0) * 6.0;
    const double s = label % 2 == 0 ? 0.75 : 0.55;
    const double v = label % 3 == 0 ? 0.95 : (label % 3 == 1 ? 0.8 : 0.65);
    const int i = static_cast<int>(h) % 6;
    const double f = h - std::floor(h);
    const double p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
    double r = v, g = t, b = p;
    switch (i) {
    case 1:
        r = q;
        g = v;
        b = p;
        break;
    case 2:
        r = p;
        g = v;
        b = t;
        break;
    case 3:
        r = p;
        g = q;
        b = v;
        break;
    case 4:
        r = t;
        g = p;
        b = v;
        break;
    case 5:
        r = v;
        g = p;
        b = q;
        break;
    default: break;
    }
    rgb[0] = static_cast<std::uint8_t>(std::lround(r * 255));
    rgb[1] = static_cast<std::uint8_t>(std::lround(g * 255));
    rgb[2] = static_cast<std::uint8_t>(std::lround(b * 255));
}

// The false-colour label image: neighbouring label numbers get distinct hues.
RgbImage label_image(const meanshift::Segmentation& seg, int w, int h)
{
    RgbImage out;
    out.width = w;
    out.height = h;
    out.pixels.resize(out.count() * 3);
    std::vector<std::uint8_t> colours(seg.sizes.size() * 3);
    for (std::size_t l = 0; l < seg.sizes.size(); ++l) false_colour(static_cast<int>(l), &colours[l * 3]);
    for (std::size_t i = 0; i < out.count(); ++i)
        std::memcpy(&out.pixels[i * 3], &colours[static_cast<std::size_t>(seg.labels[i]) * 3], 3);
    return out;
}

// Runs body(begin, end) over `count` items in up to `threads` slices (0 = the hardware's), one of
// them on this thread.
void for_slices(std::size_t count, int threads, const std::function<void(std::size_t, std::size_t, std::size_t)>& body)
{
    const std::size_t cores =
        threads > 0 ? static_cast<std::size_t>(threads) : std::max(1u, std::thread::hardware_concurrency());
    const std::size_t parts = std::max<std::size_t>(1, std::min(cores, count >> 17));
    std::vector<std::thread> pool;
    for (std::size_t p = 1; p < parts; ++p) pool.emplace_back(body, p, count * p / parts, count * (p + 1) / parts);
    body(0, 0, count / parts);
    for (std::thread& t : pool) t.join();
}

// Each segment painted with the mean colour of its pixels (averaged in linear light). The sums run
// on threads in fixed point (int64: exact, the same for any thread count).
RgbImage mean_colour_image(const meanshift::Segmentation& seg, const RgbImage& img, int threads)
{
    const std::size_t c = seg.sizes.size(), n = img.count();
    // Linear values in [0, 1] as multiples of 2^-b, b chosen so that n of them fit in 62 bits.
    int bits = 62;
    while (bits > 0 && (static_cast<double>(n) + 1) * std::ldexp(1.0, bits) >= std::ldexp(1.0, 62)) --bits;
    const double scale = std::ldexp(1.0, bits);
    std::int64_t table[256];
    for (int v = 0; v < 256; ++v)
        table[v] = static_cast<std::int64_t>(srgb_to_linear(static_cast<std::uint8_t>(v)) * scale);
    const std::size_t cores =
        threads > 0 ? static_cast<std::size_t>(threads) : std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::vector<std::int64_t>> sums(cores);
    for_slices(n, threads, [&](std::size_t part, std::size_t begin, std::size_t end) {
        std::vector<std::int64_t>& sum = sums[part];
        sum.assign(c * 3, 0);
        for (std::size_t i = begin; i < end; ++i) {
            std::int64_t* s = &sum[static_cast<std::size_t>(seg.labels[i]) * 3];
            for (int ch = 0; ch < 3; ++ch) s[ch] += table[img.pixels[i * 3 + ch]];
        }
    });
    std::vector<std::uint8_t> mean(c * 3);
    for (std::size_t l = 0; l < c; ++l)
        for (int ch = 0; ch < 3; ++ch) {
            std::int64_t total = 0;
            for (const auto& sum : sums)
                if (!sum.empty()) total += sum[l * 3 + ch];
            mean[l * 3 + ch] = linear_to_srgb(static_cast<double>(total) / scale / static_cast<double>(seg.sizes[l]));
        }
    RgbImage out;
    out.width = img.width;
    out.height = img.height;
    out.pixels.resize(n * 3);
    for_slices(n, threads, [&](std::size_t, std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i)
            std::memcpy(&out.pixels[i * 3], &mean[static_cast<std::size_t>(seg.labels[i]) * 3], 3);
    });
    return out;
}

// The outputs asked for, checked against each other and the input before any work: -o always;
// the label image and the filtered image only when named (or with --all-outputs, named after -o).
struct SegmentOutputs {
    std::string labels_png, filtered_png;  // empty: not written
    std::size_t segmented_slot = 0, labels_png_slot = 0, ids_slot = 0, filtered_slot = 0;  // in OutputFiles
};

SegmentOutputs plan_outputs(const SegmentArgs& a, OutputFiles& files)
{
    SegmentOutputs o;
    const std::string base = a.output.substr(0, a.output.size() - 4);
    const std::string labels_png = !a.labels_image.empty() ? a.labels_image : a.all_outputs ? base + "-labels.png" : "";
    const std::string filtered_png = !a.filtered_output.empty() ? a.filtered_output
                                     : a.all_outputs            ? base + "-filtered.png"
                                                                : "";
    files.add_input(a.input, "the input image");
    const std::size_t segmented_slot = files.add_output(a.output, "-o");
    const std::size_t labels_png_slot =
        labels_png.empty()
            ? 0
            : files.add_output(labels_png, !a.labels_image.empty() ? std::string("--labels-image")
                                                                   : "the label image named after -o " + a.output);
    const std::size_t ids_slot = a.labels_output.empty() ? 0 : files.add_output(a.labels_output, "--labels");
    const std::size_t filtered_slot =
        filtered_png.empty() ? 0
                             : files.add_output(filtered_png, !a.filtered_output.empty()
                                                                  ? std::string("--filtered-output")
                                                                  : "the filtered image named after -o " + a.output);
    o.labels_png = labels_png;
    o.filtered_png = filtered_png;
    o.segmented_slot = segmented_slot;
    o.labels_png_slot = labels_png_slot;
    o.ids_slot = ids_slot;
    o.filtered_slot = filtered_slot;
    return o;
}

// The library's options from the command line.
meanshift::SegmentOptions segment_options(const SegmentArgs& a)
{
    meanshift::SegmentOptions so;
    so.spatial_bandwidth = a.spatial;
    so.range_bandwidth = a.range;
    so.min_region = a.min_region;
    so.fusion_distance = a.fusion;
    so.adaptive.enabled = a.adaptive;
    so.adaptive.k = static_cast<int>(a.adaptive_k);
    so.adaptive.window = static_cast<int>(a.adaptive_window);
    a.run.apply(so.meanshift);
    a.conv.apply(so.meanshift);
    a.profile.apply(so.meanshift);
    if (a.exact) so.meanshift.exact = true;
    if (a.own_cutoff) so.meanshift.cutoff = a.cutoff;
    return so;
}

// The input as the segmentation takes it: CIELAB pixels of the (downscaled) image, and the image
// itself for painting.
struct Loaded {
    int full_width = 0, full_height = 0, w = 0, h = 0;
    RgbImage img;
    // CIELAB pixels, not zero-filled first: a serial fill of 1.2 GB at 100 MP; the converting
    // threads touch their own slices' pages first.
    std::unique_ptr<float[]> lab;
};

// Reading, decoding, downscaling and converting a photograph (the stages "read" to "colour"):
// its header's size checked against --max-image-pixels and the memory budget before decoding.
Loaded load_photo(const SegmentArgs& a, StageReport& report)
{
    Loaded L;
    // Before decoding: the header's size against --max-image-pixels and against the memory budget.
    const long long pixel_limit = a.max_image_pixels == "auto" ? 0 : std::stoll(a.max_image_pixels);
    auto t_stage = std::chrono::steady_clock::now();
    std::string file = read_file(a.input);
    report.add("read", seconds_since(t_stage));
    const double file_bytes = static_cast<double>(file.size());
    t_stage = std::chrono::steady_clock::now();
    RgbImage original = decode_rgb(file, a.input, pixel_limit, [&](int width, int height) {
        int sw = 0, sh = 0;
        fitted_size(width, height, a.max_pixels, sw, sh);
        const double full = static_cast<double>(width) * height, segmented = static_cast<double>(sw) * sh;
        const double need = segment_memory(full, segmented, file_bytes);
        std::string how = sci(kDecodeBytesPerPixel) + " bytes per pixel decoded";
        how += segmented < full ? ", " + sci(kSegmentBytesPerPixel) + " per pixel of the " + std::to_string(sw) +
                                      " x " + std::to_string(sh) + " segmented (--max-pixels)"
                                : ", " + sci(kSegmentBytesPerPixel) + " per pixel segmented";
        // The largest image that fits: at full size, or how far --max-pixels would have to shrink it.
        std::string name;
        const double budget = a.memory.budget(name);
        const double fit = (budget - file_bytes - full * kDecodeBytesPerPixel) / kSegmentBytesPerPixel;
        const std::string hint =
            fit >= 1 ? "downscale it first with --max-pixels " + std::to_string(static_cast<long long>(fit))
                     : "it cannot be decoded within that budget";
        a.memory.check(need,
                       a.input + ": the image is " + std::to_string(width) + " x " + std::to_string(height) +
                           " pixels; segmenting it",
                       how, hint);
    });
    report.add("decode", seconds_since(t_stage));
    std::string().swap(file);  // the compressed bytes are not needed any more
    L.full_width = original.width, L.full_height = original.height;
    fitted_size(L.full_width, L.full_height, a.max_pixels, L.w, L.h);
    RgbImage& img = L.img;
    if (L.w != L.full_width || L.h != L.full_height) {
        t_stage = std::chrono::steady_clock::now();
        img = downscale_area(original, L.w, L.h);
        original = RgbImage{};
        report.add("downscale", seconds_since(t_stage));
    } else {
        img = std::move(original);
    }

    // Pixels in CIELAB; the library adds x, y (pixels of the segmented image).
    t_stage = std::chrono::steady_clock::now();
    L.lab.reset(new float[img.count() * 3]);
    srgb_to_lab_pixels(img.pixels.data(), img.count(), L.lab.get(), a.run.threads);
    report.add("colour", seconds_since(t_stage));

    return L;
}

// The input's pixels, whatever its kind: every input path of `meanshift segment` dispatches here.
Loaded load_input(const SegmentArgs& a, StageReport& report)
{
    return load_photo(a, report);
}

// The segmented image, and the label and filtered images and label ids where asked, painted and
// encoded into `files` (the stages "paint", "encode" and "write"; published later).
void encode_outputs(const SegmentArgs& a, const meanshift::Segmentation& seg, const Loaded& loaded,
                    const SegmentOutputs& out, OutputFiles& files, StageReport& report)
{
    const RgbImage& img = loaded.img;
    const int w = loaded.w, h = loaded.h;
    const std::string &labels_png = out.labels_png, &filtered_png = out.filtered_png;
    auto t_stage = std::chrono::steady_clock::now();
    const RgbImage segmented = mean_colour_image(seg, img, a.run.threads);
    const RgbImage labels = labels_png.empty() ? RgbImage{} : label_image(seg, w, h);
    RgbImage filtered;
    if (!filtered_png.empty()) {
        filtered.width = w;
        filtered.height = h;
        filtered.pixels.resize(img.pixels.size());
        lab_to_srgb_pixels(seg.filtered.data(), img.count(), filtered.pixels.data(), a.run.threads);
    }
    report.add("paint", seconds_since(t_stage));

    // Encoding: the optional images on other threads beside the segmented one.
    t_stage = std::chrono::steady_clock::now();
    std::future<std::string> labels_bytes, filtered_bytes;
    if (!labels_png.empty())
        labels_bytes =
            std::async(std::launch::async, [&] { return png_bytes(labels, PngContent::Flat, a.run.threads); });
    if (!filtered_png.empty())
        filtered_bytes =
            std::async(std::launch::async, [&] { return png_bytes(filtered, PngContent::Photo, a.run.threads); });
    files.set(out.segmented_slot, png_bytes(segmented, PngContent::Flat, a.run.threads));
    if (labels_bytes.valid()) files.set(out.labels_png_slot, labels_bytes.get());
    if (filtered_bytes.valid()) files.set(out.filtered_slot, filtered_bytes.get());
    if (!a.labels_output.empty())
        files.set(out.ids_slot, int_matrix_bytes(format_of(a.labels_output), seg.labels, h, w));
    report.add("encode", seconds_since(t_stage));
    t_stage = std::chrono::steady_clock::now();
    files.prepare();  // published after the summary is out (see cmd_cluster.cpp)
    report.add("write", seconds_since(t_stage));
}

// The run's summary on stdout (and with --json its stages as one JSON object on the last line).
void print_summary(const SegmentArgs& a, const meanshift::SegmentOptions& so, const meanshift::Segmentation& seg,
                   const Loaded& loaded, const SegmentOutputs& out, StageReport& report)
{
    const int full_width = loaded.full_width, full_height = loaded.full_height, w = loaded.w, h = loaded.h;
    const meanshift::Index n = static_cast<meanshift::Index>(loaded.img.count());
    const meanshift::Result& r = seg.ascent;
    const std::string &labels_png = out.labels_png, &filtered_png = out.filtered_png;
    const std::size_t c = seg.sizes.size();
    const double wall = report.wall_seconds();
    std::printf("image       %s, %d x %d", escape_for_terminal(a.input).c_str(), full_width, full_height);
    if (w != full_width || h != full_height)
        std::printf(", downscaled to %d x %d (--max-pixels %lld)", w, h, a.max_pixels);
    if (seg.range_bandwidths.empty()) {
        std::printf("\nbandwidths  spatial %g px, range %g (CIELAB)\n", a.spatial, a.range);
    } else {
        std::vector<float> v = seg.range_bandwidths;
        std::sort(v.begin(), v.end());
        const int win = a.adaptive_window > 0 ? static_cast<int>(a.adaptive_window)
                                              : std::max(1, static_cast<int>(std::ceil(a.spatial)));
        const int k =
            a.adaptive_k > 0 ? static_cast<int>(a.adaptive_k) : std::max(1, ((2 * win + 1) * (2 * win + 1) - 1) / 4);
        std::printf("\nbandwidths  spatial %g px, range adaptive per pixel (CIELAB): min %.3g, median %.3g, max %.3g; "
                    "hr %g x d_%d / geometric mean, %dx%d window, clamped to [%g, %g] x hr (%.3f s)\n",
                    a.spatial, v.front(), v[v.size() / 2], v.back(), a.range, k, 2 * win + 1, 2 * win + 1,
                    so.adaptive.min_ratio, so.adaptive.max_ratio, seg.seconds_bandwidths);
    }
    std::printf("backend     %s (%s)\n", r.backend.c_str(), r.topology.to_string().c_str());
    std::printf("search      %s, cutoff %g bandwidths%s\n", r.search.c_str(), r.cutoff,
                std::isinf(r.cutoff) ? " (exact kernel)" : "");
    std::printf("segments    %zu\n", c);
    std::printf("regions     %lld after joining pixels with close modes, %lld after fusion (%d passes), "
                "%zu after pruning those under %lld px\n",
                static_cast<long long>(seg.regions_connected), static_cast<long long>(seg.regions_fused),
                seg.fusion_passes, c, static_cast<long long>(a.min_region));
    meanshift::Index not_converged = 0;
    for (bool done : r.converged) not_converged += done ? 0 : 1;
    std::printf("iterations  %d (modes not converged: %lld, without support: %lld)\n", r.timing.iterations,
                static_cast<long long>(not_converged - r.modes_without_support),
                static_cast<long long>(r.modes_without_support));
    std::printf("time        %.3f s mean shift (%.3f s preparing, %.3f s iterating, %.3f s grouping modes), "
                "%.3f s regions, %.2f s in all\n",
                r.timing.seconds_total, r.timing.seconds_prepare, r.timing.seconds_iterate, r.timing.seconds_group,
                seg.seconds_regions, wall);
    std::printf("pairs/s     %s pair interactions per second\n", sci(r.timing.pairs_per_second()).c_str());
    std::printf("stages      %s\n", report.line().c_str());
    std::printf("codecs      %s\n", image_codecs_summary().c_str());
    std::printf("segmented   %s\n", escape_for_terminal(a.output).c_str());
    if (!labels_png.empty()) std::printf("labels      %s\n", escape_for_terminal(labels_png).c_str());
    if (!a.labels_output.empty()) std::printf("label ids   %s\n", escape_for_terminal(a.labels_output).c_str());
    if (!filtered_png.empty()) std::printf("filtered    %s\n", escape_for_terminal(filtered_png).c_str());
    if (a.json)
        std::printf("%s\n",
                    report
                        .json("segment", {{"width", std::to_string(w)},
                                          {"height", std::to_string(h)},
                                          {"pixels", std::to_string(n)},
                                          {"backend", nlohmann::json(r.backend).dump()},
                                          {"segments", std::to_string(c)},
                                          {"iterations", std::to_string(r.timing.iterations)},
                                          {"seconds_mean_shift", std::to_string(r.timing.seconds_total)},
                                          {"pair_interactions", nlohmann::json(r.timing.pair_interactions).dump()},
                                          {"search", nlohmann::json(r.search).dump()},
                                          {"codecs", nlohmann::json(image_codecs_summary()).dump()},
                                          // The regions' steps ((b) joining and fusion, (c) pruning, outputs).
                                          {"regions_stages", nlohmann::json{{"connect", seg.timing.seconds_connect},
                                                                            {"fusion", seg.timing.seconds_fusion},
                                                                            {"pruning", seg.timing.seconds_pruning},
                                                                            {"output", seg.timing.seconds_output}}
                                                                 .dump()}})
                        .c_str());
}

void run_segment(const SegmentArgs& a, Mode mode)
{
    if (segment_raster_dispatch(a, mode)) return;  // GeoTIFF -o: the raster path (docs/raster.md)
    if (!ends_with_png(a.output)) throw meanshift::InvalidArgument(a.output + ": the output must be a .png file");
    if (!a.filtered_output.empty() && !ends_with_png(a.filtered_output))
        throw meanshift::InvalidArgument(a.filtered_output + ": --filtered-output must be a .png file");
    if (!a.labels_image.empty() && !ends_with_png(a.labels_image))
        throw meanshift::InvalidArgument(a.labels_image + ": --labels-image must be a .png file");
    if (!a.labels_output.empty()) format_of(a.labels_output);
    if (mode == Mode::CheckOnly) return;
    StageReport report;
    OutputFiles files;
    const SegmentOutputs out = plan_outputs(a, files);
    meanshift::SegmentOptions so = segment_options(a);

    // A GPU backend's context (CUDA: ~0.1 s per device) is created while the image is read and
    // decoded (meanshift::prepare_backend). The CPU backends have nothing to prepare.
    std::future<std::string> backend_ready;
    if (prepare_backend_early(so.meanshift.backend))
        backend_ready = std::async(std::launch::async, meanshift::prepare_backend, so.meanshift.backend,
                                   so.meanshift.backend_options);

    // Reading, decoding and converting the image (the stages "read" to "colour"). Where "auto"
    // must be resolved without a context to make (a build without CUDA), the image loads on a
    // thread while the main thread probes the backends (OpenCL's ICD loader and PoCL: ~0.1 s):
    // the probe stays on the main thread, whose PoCL/LLVM state AddressSanitizer handles.
    Loaded loaded;
    if (!backend_ready.valid() && so.meanshift.backend == "auto") {
        std::future<Loaded> pending = std::async(std::launch::async, [&] { return load_input(a, report); });
        std::string resolved;
        try {
            resolved = meanshift::resolve_auto_backend();
        } catch (...) {
            pending.wait();  // the loader's references stay valid until it is done
            throw;
        }
        loaded = pending.get();
        so.meanshift.backend = resolved;
    } else {
        loaded = load_input(a, report);
    }
    const int w = loaded.w, h = loaded.h;
    auto t_stage = std::chrono::steady_clock::now();

    if (backend_ready.valid()) {
        try {
            so.meanshift.backend = backend_ready.get();  // "auto" resolved once, not probed again
        } catch (const std::exception&) {
            // segment_image() meets the same error and reports it with the file's name.
        }
        report.add("backend", seconds_since(t_stage));  // waiting for it, if the decoding was faster
    }

    TerminalProgress progress(!a.run.quiet);
    so.meanshift.progress = progress.callback();
    meanshift::Segmentation seg;
    t_stage = std::chrono::steady_clock::now();
    try {
        seg = meanshift::segment_image(loaded.lab.get(), h, w, 3, so);
    } catch (const meanshift::InvalidArgument& e) {  // the library's word on the pixels: name the file
        throw meanshift::InvalidArgument(a.input + ": " + e.what());
    }
    const double seconds_segment = seconds_since(t_stage);
    progress.finish();
    loaded.lab.reset();
    const meanshift::Result& r = seg.ascent;
    if (r.modes_without_support > 0)
        std::fprintf(stderr,
                     "warning: %lld of %lld pixels had no support (no pixel within reach of the kernel; "
                     "they kept their own colour)\n",
                     static_cast<long long>(r.modes_without_support), static_cast<long long>(r.modes.rows()));
    // The library's stages, then the pipeline's own; "segment other" is the rest of segment_image()
    // (building the (x, y, L*, a*, b*) points, the ascent's other preparation, copying the results).
    double named = seg.seconds_bandwidths + seg.seconds_regions;
    for (const auto& [name, seconds] : r.timing.stages()) named += seconds;
    if (seg.seconds_bandwidths > 0) report.add("bandwidths", seg.seconds_bandwidths);
    report.add_library(r.timing);
    report.add("regions", seg.seconds_regions);
    report.add("segment other", std::max(0.0, seconds_segment - named));

    encode_outputs(a, seg, loaded, out, files, report);
    print_summary(a, so, seg, loaded, out, report);
    try {
        flush_stdout();
    } catch (const meanshift::IoError& e) {
        throw meanshift::IoError(std::string(e.what()) + "; no output file was created or changed");
    }
    files.publish();
}

}  // namespace

void add_segment_command(CLI::App& app, Mode mode)
{
    auto a = std::make_shared<SegmentArgs>();
    // Filtering stops as OpenCV's pyrMeanShiftFiltering does: the library's filtering defaults
    // (SegmentOptions::filtering_defaults: shift under 0.3 bandwidths or 5 iterations). Measured
    // (docs/segmentation.md): 1.6-1.7x faster than --tol 0.1 --max-iter 10 at full size, labels
    // ARI 1.0 vs the exact kernel at the same settings; the segments come from the region steps,
    // which absorb the unconverged last fraction of a pixel.
    const meanshift::Options filtering = meanshift::SegmentOptions::filtering_defaults();
    a->conv.tolerance = filtering.tolerance;
    a->conv.max_iterations = filtering.max_iterations;
    CLI::App* sub =
        app.add_subcommand("segment", "Segment a photograph: mean shift on (x, y, L*, a*, b*) of every pixel");
    sub->add_option("image", a->input, "input image (JPEG, PNG, BMP, TGA, GIF, PNM)")->required();
    sub->add_option("-o,--output", a->output,
                    "segmented image OUT.png (each pixel painted with its segment's mean colour); the only "
                    "output unless --labels-image, --filtered-output, --labels or --all-outputs ask for more")
        ->required();
    sub->add_option("--spatial-bandwidth,--hs", a->spatial,
                    "spatial bandwidth in pixels of the clustered (downscaled) image")
        ->check(positive())
        ->capture_default_str();
    sub->add_option("--range-bandwidth,--hr", a->range, "colour bandwidth in CIELAB units (L* runs 0..100)")
        ->check(positive())
        ->capture_default_str();
    sub->add_option("--max-pixels", a->max_pixels,
                    "downscale (area averaging) to at most this many pixels first; 0 = full size")
        ->check(non_negative())
        ->capture_default_str();
    sub->add_option("--max-image-pixels", a->max_image_pixels,
                    "refuse images whose header declares more pixels than this, before decoding; auto = as many "
                    "as the memory budget (--max-memory) holds at the estimate of " +
                        sci(kDecodeBytesPerPixel) + " bytes per pixel decoded plus " + sci(kSegmentBytesPerPixel) +
                        " per pixel segmented; 0 = no pixel limit (the memory check still applies)")
        ->check([](const std::string& t) -> std::string {
            if (t == "auto") return {};
            std::size_t used = 0;
            long long v = -1;
            try {
                v = std::stoll(t, &used);
            } catch (const std::exception&) {
            }
            if (used != t.size() || v < 0) return "must be an integer >= 0 or auto, got " + clip(t);
            return {};
        })
        ->capture_default_str();
    a->memory.add_to(*sub);
    add_segment_raster_options(*sub, a.get());  // --bands, --ram, --vector
    sub->add_option("--labels", a->labels_output, "also write the label id of every pixel (h x w, .csv or .npy)");
    sub->add_option("--labels-image", a->labels_image,
                    "also write a false-colour label image (one colour per segment) to this .png");
    sub->add_option("--filtered-output", a->filtered_output,
                    "also write the filtered image (each pixel painted with its mode's colour) to this .png");
    sub->add_flag("--all-outputs", a->all_outputs,
                  "also write OUT-labels.png and OUT-filtered.png (unless --labels-image or --filtered-output name "
                  "them): the three images that earlier versions always wrote");
    sub->add_flag(
        "--json", a->json,
        "also print the run's stages (seconds), wall time and peak memory as one JSON object on the last line");
    sub->add_option("--min-region", a->min_region,
                    "regions with fewer pixels are merged into the adjacent region of the closest colour; 0 = none")
        ->check(non_negative())
        ->capture_default_str();
    sub->add_option("--fusion", a->fusion,
                    "adjacent regions whose mean mode colours differ by at most this many range bandwidths "
                    "are fused (EDISON: 0.5, stricter); 0 = no region fusion")
        ->check(non_negative())
        ->capture_default_str();
    sub->add_flag("--adaptive", a->adaptive,
                  "adaptive range bandwidths: pixel i's colour kernel is hr x d_i / G, d_i its k-th smallest colour "
                  "distance within its window, G the geometric mean of the d_i, clamped to [0.25, 4] x hr; the "
                  "spatial bandwidth stays fixed (docs/segmentation.md)");
    sub->add_option("--adaptive-k", a->adaptive_k,
                    "with --adaptive: neighbour rank k; 0 = a quarter of the window's other pixels")
        ->check(non_negative())
        ->check(at_most(kMaxAdaptiveWindowPixels - 1, "k counts pixels of the window"))
        ->capture_default_str();
    // The window's (2r+1)^2 pixels are counted in an int (SegmentOptions::AdaptiveRange): r = 100000
    // overflowed it (audit 26, item 6).
    sub->add_option("--adaptive-window", a->adaptive_window,
                    "with --adaptive: window radius in pixels; 0 = ceil(spatial bandwidth)")
        ->check(non_negative())
        ->check(at_most(kMaxAdaptiveWindow, "a window of (2r+1)^2 pixels must count fewer than 2^31"))
        ->capture_default_str();
    a->run.add_to(*sub);
    a->conv.add_to(*sub);
    a->profile.add_to(*sub);
    // The truncated kernel's switches, unless the shared option groups already carry them.
    CLI::Option* exact = sub->get_option_no_throw("--exact");
    if (exact == nullptr)
        exact = sub->add_flag("--exact", a->exact,
                              "exact Gaussian kernel: no cutoff, brute force (the reference; O(n^2) per iteration)");
    CLI::Option* cutoff = sub->get_option_no_throw("--cutoff");
    if (cutoff == nullptr) {
        a->own_cutoff = true;
        cutoff =
            sub->add_option("--cutoff", a->cutoff,
                            "truncated kernel's radius in bandwidths; a pixel's window has radius cutoff x hs pixels")
                ->check(positive())
                ->capture_default_str();
    }
    exact->excludes(cutoff);  // --exact means no cutoff: the two contradict each other
    sub->callback([a, mode] {
        a->run.validate();
        run_segment(*a, mode);
    });
}

}  // namespace mscli
