// The raster path of `meanshift segment` (cmd_segment_raster.hpp, docs/raster.md): GDAL input of
// any format and N bands, segmentation in the bands' units, labels and filtered values written as
// tiled, compressed GeoTIFFs with the input's georeferencing.
#include "cmd_segment_raster.hpp"
#include "text.hpp"

#include <meanshift/errors.hpp>
#if defined(MEANSHIFT_CLI_RASTER)
#include <meanshift/raster.hpp>
#endif

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

namespace mscli {
namespace {

// The raster options of each segment subcommand built in this process (one in the tool; the
// option fuzz target builds several), keyed by its SegmentArgs.
std::map<const void*, std::unique_ptr<RasterSegmentArgs>>& registry()
{
    static std::map<const void*, std::unique_ptr<RasterSegmentArgs>> r;
    return r;
}

// Peak bytes per pixel of the raster path beyond segment_image()'s own (kSegmentBytesPerPixel at
// three channels): per band the values read, the features, the filtered output and the
// segmentation's filtered matrix (4 bytes each), plus the mask, labels and output labels.
constexpr double kRasterBytesPerPixelPerBand = 16;
constexpr double kRasterBytesPerPixel = 16;

}  // namespace

RasterSegmentArgs& add_segment_raster_options(CLI::App& segment, const void* owner)
{
    auto& slot = registry()[owner];
    slot = std::make_unique<RasterSegmentArgs>();
    segment.add_option("--bands", slot->bands,
                       "GeoTIFF output (-o OUT.tif): the input raster's bands to segment, 1-based, e.g. 1,2,3,4 "
                       "(default: every band); hr is in the bands' units");
    segment
        .add_option("--ram", slot->ram_mb,
                    "GeoTIFF output: memory budget in MB (10^6 bytes) for the run (default: --max-memory's); refused "
                    "before any output when the raster needs more")
        ->check(CLI::PositiveNumber);
    segment.add_option("--vector", slot->vector,
                       "GeoTIFF output: also write the segments as polygons (OUT.gpkg GeoPackage, or OUT.shp) with "
                       "their pixel count and per-band mean and standard deviation");
    return *slot;
}

const RasterSegmentArgs& segment_raster_args(const void* owner)
{
    static const RasterSegmentArgs none;
    const auto it = registry().find(owner);
    return it == registry().end() ? none : *it->second;
}

bool is_geotiff_path(const std::string& path)
{
    std::string lower(path);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    auto ends = [&](const std::string& s) {
        return lower.size() > s.size() && lower.compare(lower.size() - s.size(), s.size(), s) == 0;
    };
    return ends(".tif") || ends(".tiff");
}

void run_segment_raster(const RasterRun& run, const RasterSegmentArgs& raster, Mode mode)
{
    if (!run.photo_only.empty())
        throw meanshift::InvalidArgument(run.photo_only + " is for photo outputs (.png); with a GeoTIFF -o the "
                                                          "labels are the output raster");
    if (!run.filtered_output.empty() && !is_geotiff_path(run.filtered_output))
        throw meanshift::InvalidArgument(run.filtered_output +
                                         ": with a GeoTIFF -o, --filtered-output must be a GeoTIFF (.tif) too");
    if (!raster.vector.empty()) {
        std::string lower(raster.vector);
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        const bool gpkg = lower.size() > 5 && lower.compare(lower.size() - 5, 5, ".gpkg") == 0;
        const bool shp = lower.size() > 4 && lower.compare(lower.size() - 4, 4, ".shp") == 0;
        if (!gpkg && !shp)
            throw meanshift::InvalidArgument(raster.vector +
                                             ": --vector must be a GeoPackage (.gpkg) or a Shapefile (.shp)");
    }
#if !defined(MEANSHIFT_CLI_RASTER)
    (void)raster;
    (void)mode;
    throw meanshift::InvalidArgument(run.output +
                                     ": GeoTIFF output needs GDAL, which this build lacks (apt-get install "
                                     "libgdal-dev, reconfigure with -DMEANSHIFT_GDAL=ON)");
#else
    const std::vector<int> bands = raster.bands.empty() ? std::vector<int>{} : meanshift::parse_band_list(raster.bands);
    if (mode == Mode::CheckOnly) return;
    const auto t0 = std::chrono::steady_clock::now();
    // Everything is checked before the pixels are read: the file, its bands and types, the budget.
    const meanshift::RasterInfo info = meanshift::probe_raster(run.input);
    const int nbands = bands.empty() ? info.bands : static_cast<int>(bands.size());
    for (int b : bands)
        if (b > info.bands)
            throw meanshift::InvalidArgument(run.input + ": band " + std::to_string(b) +
                                             " does not exist (the raster has " + std::to_string(info.bands) +
                                             (info.bands == 1 ? " band)" : " bands)"));
    const double pixels = static_cast<double>(info.width) * static_cast<double>(info.height);
    const double need = pixels * (kSegmentBytesPerPixel + kRasterBytesPerPixel + kRasterBytesPerPixelPerBand * nbands);
    const std::string how = sci(kSegmentBytesPerPixel + kRasterBytesPerPixel) + " + " +
                            sci(kRasterBytesPerPixelPerBand) + " x bands bytes per pixel, in one piece";
    const std::string what = run.input + " (" + std::to_string(info.width) + " x " + std::to_string(info.height) +
                             " pixels, " + std::to_string(nbands) + " bands)";
    if (raster.ram_mb > 0) {
        const double budget = raster.ram_mb * 1e6;
        if (need > budget)
            throw meanshift::InvalidArgument(what + " needs about " + sci(need / 1e6) + " MB (" + how +
                                             "), more than --ram " + sci(raster.ram_mb) +
                                             " MB; tiled processing is not available yet (docs/raster.md)");
    } else {
        run.memory.check(need, what, how, "tiled processing is not available yet (docs/raster.md)");
    }

    meanshift::Raster r = meanshift::read_raster(run.input, bands);
    meanshift::RasterSegmentOptions ro;
    ro.segment = run.options;
    ro.segment.meanshift.max_memory =
        raster.ram_mb > 0 ? static_cast<std::size_t>(raster.ram_mb * 1e6) : run.memory.library_budget();
    const meanshift::RasterSegmentation s = meanshift::segment_raster(r, ro);
    meanshift::write_label_raster(run.output, s.labels, r.height, r.width, r.georef);
    if (!run.filtered_output.empty()) {
        // The filtered raster in the input's type, nodata where the input was invalid.
        std::optional<double> nodata;
        for (const auto& v : r.nodata)
            if (v) nodata = *v;
        std::vector<float> filtered = s.filtered;
        if (nodata && !r.valid.empty())
            for (std::size_t q = 0; q < r.valid.size(); ++q)
                if (r.valid[q] == 0)
                    for (int b = 0; b < r.bands; ++b)
                        filtered[q * std::size_t(r.bands) + std::size_t(b)] = static_cast<float>(*nodata);
        try {
            meanshift::write_raster(run.filtered_output, filtered.data(), r.height, r.width, r.bands, r.type, r.georef,
                                    nodata);
        } catch (...) {
            std::remove(run.output.c_str());  // no partial set of outputs either
            throw;
        }
    }
    if (!raster.vector.empty()) {
        try {
            meanshift::write_segment_vectors(raster.vector, s, r);
        } catch (...) {
            std::remove(run.output.c_str());
            if (!run.filtered_output.empty()) std::remove(run.filtered_output.c_str());
            throw;
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("raster      %s, %d x %d, %d bands (%s), %lld valid pixels\n", escape_for_terminal(run.input).c_str(),
                r.width, r.height, r.bands, meanshift::raster_type_name(r.type),
                static_cast<long long>(r.valid_pixels()));
    std::printf("segments    %d (hs %g px, hr %g in the bands' units, backend %s)\n", s.segments(),
                run.options.spatial_bandwidth, run.options.range_bandwidth, s.segmentation.ascent.backend.c_str());
    std::printf("wrote       %s%s%s%s%s in %.3f s\n", escape_for_terminal(run.output).c_str(),
                run.filtered_output.empty() ? "" : ", ", escape_for_terminal(run.filtered_output).c_str(),
                raster.vector.empty() ? "" : ", ", escape_for_terminal(raster.vector).c_str(), seconds);
    if (run.json)
        std::printf("{\"segments\": %d, \"valid_pixels\": %lld, \"seconds\": %.6f, \"peak_memory_bytes\": %zu}\n",
                    s.segments(), static_cast<long long>(r.valid_pixels()), seconds,
                    s.segmentation.timing.peak_memory_bytes);
#endif
}

}  // namespace mscli
