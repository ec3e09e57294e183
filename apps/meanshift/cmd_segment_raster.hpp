#pragma once
/// @file cmd_segment_raster.hpp
/// `meanshift segment IN -o LABELS.tif`: the georeferenced-raster path of the segment command
/// (docs/raster.md), through meanshift_raster (GDAL). A GeoTIFF `-o` selects it; PNG outputs keep
/// the photo path. Built with or without GDAL: without it, a GeoTIFF output is refused with a
/// message saying so.

#include "cli_options.hpp"
#include "commands.hpp"
#include "memory.hpp"

#include <meanshift/segmentation.hpp>

#include <string>

namespace mscli {

/// The options only the raster path reads.
struct RasterSegmentArgs {
    std::string bands;  ///< --bands 1,2,3,4 (1-based; "" = every band)
    double ram_mb = 0;  ///< --ram MB: the budget of one run (0 = --max-memory's)
    std::string vector;  ///< --vector OUT.gpkg|OUT.shp: the segments as polygons
};

/// Registers --bands, --ram and --vector on the segment subcommand; `owner` (the command's own arguments)
/// keys their storage, which lives as long as the process.
RasterSegmentArgs& add_segment_raster_options(CLI::App& segment, const void* owner);
/// The storage add_segment_raster_options() registered for `owner`.
const RasterSegmentArgs& segment_raster_args(const void* owner);

/// True when `path` names a GeoTIFF (.tif, .tiff; any case): the raster path's outputs.
bool is_geotiff_path(const std::string& path);

/// What the raster path needs from the segment command's arguments.
struct RasterRun {
    std::string input, output, filtered_output;
    meanshift::SegmentOptions options;
    MemoryOption memory;
    bool json = false;
    /// A photo-only option given (its name), refused on this path.
    std::string photo_only;
};

/// Checks the raster path's arguments, then (Mode::Run) reads, segments and writes. Throws
/// meanshift::InvalidArgument before any output for an unreadable raster, bands or types out of
/// range, a budget too small, a photo-only option; meanshift::Error when writing fails.
void run_segment_raster(const RasterRun& run, const RasterSegmentArgs& raster, Mode mode);

/// The segment command's dispatch: when `-o` names a GeoTIFF, runs the raster path with the
/// command's arguments `a` (its SegmentArgs) and returns true; false otherwise (the photo path).
template <class Args>
bool segment_raster_dispatch(const Args& a, Mode mode)
{
    if (!is_geotiff_path(a.output)) return false;
    RasterRun r;
    r.input = a.input, r.output = a.output, r.filtered_output = a.filtered_output;
    r.memory = a.memory;
    r.json = a.json;
    meanshift::SegmentOptions& so = r.options;
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
    if (!a.labels_image.empty()) r.photo_only = "--labels-image";
    if (!a.labels_output.empty()) r.photo_only = "--labels";
    if (a.all_outputs) r.photo_only = "--all-outputs";
    if (a.max_pixels != 0) r.photo_only = "--max-pixels";
    run_segment_raster(r, segment_raster_args(&a), mode);
    return true;
}

}  // namespace mscli
