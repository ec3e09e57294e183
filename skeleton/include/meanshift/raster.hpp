#pragma once
/// @file raster.hpp
/// Georeferenced rasters through GDAL for the segmentation client (docs/raster.md): read any
/// raster GDAL opens (GeoTIFF, JPEG2000, ENVI, netCDF, …) with 1 to N bands of uint8, uint16,
/// int16 or float32, with its nodata values and masks; segment it in the data's own units; write
/// the labels (and the filtered image) as tiled, compressed GeoTIFFs that keep the geotransform
/// and the projection.
///
/// A separate library, meanshift_raster (CMake target meanshift::raster, built when
/// MEANSHIFT_GDAL finds GDAL): libmeanshift itself never depends on GDAL.
///
/// Layout: a raster of H rows, W columns and B bands is H·W × B float32 values, row-major and
/// band-interleaved by pixel: band b of pixel (x, y) at (y·W + x)·B + b — the H·W × C layout of
/// segment_image() with C = B. Values are in the file's units (digital numbers, reflectance × 10^4,
/// …), converted exactly to float32 (every uint8, uint16 and int16 value is exact in float32).
///
/// @code
///   meanshift::Raster r = meanshift::read_raster("S2_tile.tif", {4, 3, 2, 8});
///   meanshift::RasterSegmentOptions ro;
///   ro.segment.spatial_bandwidth = 5;     // pixels
///   ro.segment.range_bandwidth = 150;     // the bands' units (here reflectance × 10^4)
///   meanshift::RasterSegmentation s = meanshift::segment_raster(r, ro);
///   meanshift::write_label_raster("labels.tif", s.labels, r.height, r.width, r.georef);
/// @endcode

#include <meanshift/segmentation.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace meanshift {

/// The pixel types read and written (GDAL's GDT_Byte, GDT_UInt16, GDT_Int16, GDT_Float32).
enum class RasterType { UInt8, UInt16, Int16, Float32 };

/// "uint8", "uint16", "int16", "float32".
const char* raster_type_name(RasterType t) noexcept;

/// Where the pixels lie on the Earth (or any plane): GDAL's affine geotransform
/// (x = gt[0] + col·gt[1] + row·gt[2], y = gt[3] + col·gt[4] + row·gt[5], pixel corners) and the
/// coordinate reference system as WKT ("" = none).
struct Georeference {
    bool has_geotransform = false;
    std::array<double, 6> geotransform{0, 1, 0, 0, 0, 1};
    std::string projection;
};

/// A raster held in memory (see the file's comment for the layout).
struct Raster {
    int height = 0, width = 0, bands = 0;
    /// H·W·B values, band-interleaved by pixel, in the file's units. Pixels that are not valid hold
    /// whatever the file stored there (usually the nodata value).
    std::vector<float> values;
    /// H·W flags, 1 = valid. A pixel is invalid when any selected band is masked there (its
    /// nodata value, an alpha or per-dataset mask band, NaN in float32). Empty = all valid.
    std::vector<std::uint8_t> valid;
    /// The narrowest type of the selected bands' file types that holds all of them (the type the
    /// filtered raster is written in).
    RasterType type = RasterType::UInt8;
    /// The selected bands' 1-based numbers in the file, in the order of `values`.
    std::vector<int> band_numbers;
    /// Per selected band: the file's nodata value, if it has one.
    std::vector<std::optional<double>> nodata;
    Georeference georef;
    /// Pixels flagged valid (H·W when `valid` is empty).
    std::int64_t valid_pixels() const noexcept;
};

/// What a raster file holds, without reading its pixels.
struct RasterInfo {
    int height = 0, width = 0, bands = 0;
    std::vector<RasterType> types;  ///< per band of the file
    Georeference georef;
    std::string driver;  ///< GDAL's short driver name, e.g. "GTiff"
};

/// Opens `path` read-only and describes it. Throws InvalidArgument naming the path when GDAL cannot
/// open it, and naming the band and its type when a band's type is not one of RasterType (e.g.
/// complex or 32-bit integer data).
RasterInfo probe_raster(const std::string& path);

/// Reads the bands `bands` (1-based numbers of the file, in the order wanted, repeats allowed;
/// empty = every band in order) of `path`, with the validity mask. Throws InvalidArgument naming
/// the path when GDAL cannot open it, a band number is outside [1, band count], or a selected
/// band's type is not one of RasterType; Error when GDAL fails while reading.
Raster read_raster(const std::string& path, const std::vector<int>& bands = {});

/// Parses a band list "1,2,3,4" into {1, 2, 3, 4}. Throws InvalidArgument naming the text for an
/// empty list, an empty item, or an item that is not an integer >= 1.
std::vector<int> parse_band_list(const std::string& text);

/// Writes an H × W × B raster (`values` H·W·B, the layout of Raster::values) as a tiled (256 × 256),
/// DEFLATE-compressed GeoTIFF of `type` with `georef`; values are rounded and clamped into the
/// integer types. `nodata`, when given, is set on every band. The file appears only once complete:
/// it is written to PATH.partial and renamed. Throws InvalidArgument for sizes <= 0; Error naming the path when GDAL cannot create or write it.
void write_raster(const std::string& path, const float* values, int height, int width, int bands, RasterType type,
                  const Georeference& georef, std::optional<double> nodata = std::nullopt);

/// Writes H·W segment labels (`labels` in [-1, S); -1 = nodata) as a one-band tiled, compressed
/// uint32 GeoTIFF with `georef`: segment s is written as s + 1 and nodata as 0, which the file
/// declares as its nodata value (the convention of OTB's LSMS label images). Throws as write_raster().
void write_label_raster(const std::string& path, const std::vector<int>& labels, int height, int width,
                        const Georeference& georef);

/// Options of segment_raster(): those of segment_image() plus the raster's own.
struct RasterSegmentOptions {
    /// hs in pixels, hr in the bands' units after `band_scales`, the region steps, the ascent.
    SegmentOptions segment;
    /// Per band: the band's values are divided by this before the segmentation, so that one range
    /// bandwidth hr serves bands of different units or dynamics (e.g. 10^4 for reflectance stored as
    /// integers, to give hr in reflectance). Empty = 1 for every band; else one positive finite
    /// value per band.
    std::vector<double> band_scales;
};

/// The segmentation of a raster: labels in [0, S) for valid pixels, -1 for invalid ones.
struct RasterSegmentation {
    /// H·W labels, row-major; -1 where the raster's pixel is not valid. Segments are numbered
    /// largest first, over valid pixels only.
    std::vector<int> labels;
    /// H·W·B filtered values in the bands' units (band_scales undone); invalid pixels keep
    /// their input values.
    std::vector<float> filtered;
    std::vector<std::int64_t> sizes;  ///< S valid-pixel counts, decreasing
    /// S × B: per segment and band, the mean and the standard deviation (population) of the input
    /// values of its pixels, in the bands' units.
    std::vector<double> means, stddevs;
    /// What segment_image() reported (its labels include the invalid pixels' own regions).
    Segmentation segmentation;
    int segments() const noexcept { return static_cast<int>(sizes.size()); }
};

/// Segments a raster in memory: segment_image() over its B bands (divided by band_scales), the
/// invalid pixels kept out. They are given a value so far from every valid value (more than
/// cutoff · hr in each band) that no valid pixel's kernel reaches them; they then form regions of
/// their own, which become label -1. A valid region smaller than min_region whose only neighbours
/// are invalid pixels may be merged into them and become -1 too (docs/raster.md).
/// Throws InvalidArgument for an empty raster, a values size other than H·W·B, band_scales of the
/// wrong size or with a value <= 0 or not finite, a raster without a valid pixel; otherwise what
/// segment_image() throws.
RasterSegmentation segment_raster(const Raster& raster, const RasterSegmentOptions& options);

/// Writes the segments of `s` (segment_raster() over `raster`) as GIS polygons through OGR: a
/// GeoPackage for PATH.gpkg (written to PATH.gpkg.partial, renamed once complete), a Shapefile for
/// PATH.shp; one layer "segments" in the raster's projection, one 4-connected polygon per segment
/// (a segment whose pixels touch only diagonally gives several), with the fields label (s + 1, as in
/// write_label_raster()), pixels (the segment's pixel count), and mean_b<k>, std_b<k> per band (k =
/// the band's number in the input file; population standard deviation, in the bands' units).
/// Nodata pixels give no polygon. Throws InvalidArgument for a labels size other than H·W or
/// another extension; Error naming the path when OGR fails (nothing is left then).
void write_segment_vectors(const std::string& path, const RasterSegmentation& s, const Raster& raster);

}  // namespace meanshift
