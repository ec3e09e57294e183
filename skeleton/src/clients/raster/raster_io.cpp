// Raster input and output through GDAL (include/meanshift/raster.hpp): band selection, the
// validity mask from nodata values and mask bands, tiled compressed GeoTIFF output.
#include <meanshift/errors.hpp>
#include <meanshift/raster.hpp>

#include <gdal_priv.h>
#include <cpl_conv.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>

namespace meanshift {
namespace {

void register_drivers()
{
    static std::once_flag once;
    std::call_once(once, [] { GDALAllRegister(); });
}

struct DatasetCloser {
    void operator()(GDALDataset* d) const { GDALClose(GDALDataset::ToHandle(d)); }
};
using Dataset = std::unique_ptr<GDALDataset, DatasetCloser>;

// GDAL's last error message, for ours ("" when it left none).
std::string gdal_message()
{
    const char* m = CPLGetLastErrorMsg();
    return m != nullptr && *m != '\0' ? std::string(": ") + m : std::string();
}

Dataset open_read(const std::string& path)
{
    register_drivers();
    CPLErrorReset();
    // Quiet: GDAL's own handler would print to stderr; its message goes into ours instead.
    CPLPushErrorHandler(CPLQuietErrorHandler);
    Dataset d(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
    const std::string why = gdal_message();
    CPLPopErrorHandler();
    if (!d) throw InvalidArgument(path + ": GDAL cannot open it as a raster" + why);
    if (d->GetRasterCount() < 1 || d->GetRasterXSize() < 1 || d->GetRasterYSize() < 1)
        throw InvalidArgument(path + ": the raster has no bands or no pixels");
    return d;
}

std::optional<RasterType> type_of(GDALDataType t)
{
    switch (t) {
    case GDT_Byte: return RasterType::UInt8;
    case GDT_UInt16: return RasterType::UInt16;
    case GDT_Int16: return RasterType::Int16;
    case GDT_Float32: return RasterType::Float32;
    default: return std::nullopt;
    }
}

GDALDataType gdal_type(RasterType t)
{
    switch (t) {
    case RasterType::UInt8: return GDT_Byte;
    case RasterType::UInt16: return GDT_UInt16;
    case RasterType::Int16: return GDT_Int16;
    default: return GDT_Float32;
    }
}

// The narrowest of the four types that holds both (uint16 and int16 together: float32).
RasterType widen(RasterType a, RasterType b)
{
    if (a == b) return a;
    if (a == RasterType::Float32 || b == RasterType::Float32) return RasterType::Float32;
    if (a == RasterType::UInt8) return b;
    if (b == RasterType::UInt8) return a;
    return RasterType::Float32;
}

Georeference georef_of(GDALDataset& d)
{
    Georeference g;
    g.has_geotransform = d.GetGeoTransform(g.geotransform.data()) == CE_None;
    if (!g.has_geotransform) g.geotransform = {0, 1, 0, 0, 0, 1};
    const char* wkt = d.GetProjectionRef();
    g.projection = wkt != nullptr ? wkt : "";
    return g;
}

RasterType checked_type(GDALRasterBand& b, const std::string& path, int number)
{
    const auto t = type_of(b.GetRasterDataType());
    if (!t)
        throw InvalidArgument(path + ": band " + std::to_string(number) + " is " +
                              GDALGetDataTypeName(b.GetRasterDataType()) +
                              "; supported band types: uint8, uint16, int16, float32");
    return *t;
}

// A tiled (256 x 256), DEFLATE-compressed GeoTIFF at PATH.partial (renamed by finish_tiff()),
// georeferenced: the layout GIS tools read by window.
Dataset create_tiff(const std::string& path, int width, int height, int bands, GDALDataType type,
                    const Georeference& georef)
{
    register_drivers();
    GDALDriver* drv = GetGDALDriverManager()->GetDriverByName("GTiff");
    if (drv == nullptr) throw Error(path + ": GDAL has no GTiff driver");
    char** opts = nullptr;
    opts = CSLSetNameValue(opts, "TILED", "YES");
    opts = CSLSetNameValue(opts, "BLOCKXSIZE", "256");
    opts = CSLSetNameValue(opts, "BLOCKYSIZE", "256");
    opts = CSLSetNameValue(opts, "COMPRESS", "DEFLATE");
    opts = CSLSetNameValue(opts, "PREDICTOR", type == GDT_Float32 ? "3" : "2");
    opts = CSLSetNameValue(opts, "BIGTIFF", "IF_SAFER");
    if (bands > 1) opts = CSLSetNameValue(opts, "INTERLEAVE", "PIXEL");
    const std::string partial = path + ".partial";
    CPLErrorReset();
    CPLPushErrorHandler(CPLQuietErrorHandler);
    Dataset d(drv->Create(partial.c_str(), width, height, bands, type, opts));
    CSLDestroy(opts);
    const std::string why = gdal_message();
    CPLPopErrorHandler();
    if (!d) throw Error(path + ": GDAL cannot create it" + why);
    bool ok = true;
    if (georef.has_geotransform) ok = d->SetGeoTransform(const_cast<double*>(georef.geotransform.data())) == CE_None;
    if (ok && !georef.projection.empty()) ok = d->SetProjection(georef.projection.c_str()) == CE_None;
    if (!ok) {
        d.reset();
        std::remove(partial.c_str());
        throw Error(path + ": GDAL cannot set its georeferencing" + gdal_message());
    }
    return d;
}

// Closes the file (the last blocks are written here) and renames PATH.partial to PATH; on any
// failure removes the partial file and throws: no incomplete output is left behind.
void finish_tiff(Dataset& d, bool ok, const std::string& path)
{
    const std::string partial = path + ".partial";
    std::string why = gdal_message();
    if (ok) {
        d->FlushCache();
        ok = CPLGetLastErrorType() < CE_Failure;
    }
    d.reset();
    if (ok && CPLGetLastErrorType() >= CE_Failure) ok = false;
    if (why.empty()) why = gdal_message();
    if (!ok || std::rename(partial.c_str(), path.c_str()) != 0) {
        std::remove(partial.c_str());
        throw Error(path + ": writing the raster failed" + why);
    }
}

}  // namespace

const char* raster_type_name(RasterType t) noexcept
{
    switch (t) {
    case RasterType::UInt8: return "uint8";
    case RasterType::UInt16: return "uint16";
    case RasterType::Int16: return "int16";
    default: return "float32";
    }
}

std::int64_t Raster::valid_pixels() const noexcept
{
    if (valid.empty()) return static_cast<std::int64_t>(height) * width;
    return static_cast<std::int64_t>(std::count(valid.begin(), valid.end(), std::uint8_t{1}));
}

std::vector<int> parse_band_list(const std::string& text)
{
    std::vector<int> out;
    std::size_t pos = 0;
    if (text.empty()) throw InvalidArgument("band list: empty (expected e.g. 1,2,3,4)");
    while (pos <= text.size()) {
        const std::size_t comma = std::min(text.find(',', pos), text.size());
        const std::string item = text.substr(pos, comma - pos);
        std::size_t used = 0;
        long v = 0;
        try {
            v = std::stol(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (item.empty() || used != item.size() || v < 1 || v > std::numeric_limits<int>::max())
            throw InvalidArgument("band list '" + text + "': '" + item + "' is not a band number >= 1");
        out.push_back(static_cast<int>(v));
        pos = comma + 1;
    }
    return out;
}

RasterInfo probe_raster(const std::string& path)
{
    Dataset d = open_read(path);
    RasterInfo info;
    info.width = d->GetRasterXSize();
    info.height = d->GetRasterYSize();
    info.bands = d->GetRasterCount();
    for (int b = 1; b <= info.bands; ++b) info.types.push_back(checked_type(*d->GetRasterBand(b), path, b));
    info.georef = georef_of(*d);
    info.driver = d->GetDriver() != nullptr ? d->GetDriver()->GetDescription() : "";
    return info;
}

Raster read_raster(const std::string& path, const std::vector<int>& bands)
{
    Dataset d = open_read(path);
    Raster r;
    r.width = d->GetRasterXSize();
    r.height = d->GetRasterYSize();
    const int count = d->GetRasterCount();
    r.band_numbers = bands;
    if (r.band_numbers.empty())
        for (int b = 1; b <= count; ++b) r.band_numbers.push_back(b);
    for (int b : r.band_numbers)
        if (b < 1 || b > count)
            throw InvalidArgument(path + ": band " + std::to_string(b) + " does not exist (the raster has " +
                                  std::to_string(count) + (count == 1 ? " band)" : " bands)"));
    r.bands = static_cast<int>(r.band_numbers.size());
    for (std::size_t i = 0; i < r.band_numbers.size(); ++i) {
        const RasterType t = checked_type(*d->GetRasterBand(r.band_numbers[i]), path, r.band_numbers[i]);
        r.type = i == 0 ? t : widen(r.type, t);
    }
    r.georef = georef_of(*d);

    const std::size_t n = static_cast<std::size_t>(r.height) * static_cast<std::size_t>(r.width);
    r.values.assign(n * static_cast<std::size_t>(r.bands), 0.0f);
    std::vector<std::uint8_t> mask(n);
    bool any_invalid = false;
    const int B = r.bands;
    for (int i = 0; i < B; ++i) {
        GDALRasterBand* band = d->GetRasterBand(r.band_numbers[static_cast<std::size_t>(i)]);
        int has = 0;
        const double nd = band->GetNoDataValue(&has);
        r.nodata.push_back(has != 0 ? std::optional<double>(nd) : std::nullopt);
        // Band-interleaved by pixel: GDAL writes band i of pixel q at q·B + i (pixel spacing B floats).
        CPLErrorReset();
        if (band->RasterIO(GF_Read, 0, 0, r.width, r.height, r.values.data() + i, r.width, r.height, GDT_Float32,
                           static_cast<GSpacing>(sizeof(float)) * B, static_cast<GSpacing>(sizeof(float)) * B * r.width,
                           nullptr) != CE_None)
            throw Error(path + ": reading band " + std::to_string(r.band_numbers[std::size_t(i)]) + " failed" +
                        gdal_message());
        // The band's mask: GDAL derives it from the nodata value, an alpha band or a mask band
        // (GMF_ALL_VALID when there is none: then it is not read at all).
        if (band->GetMaskFlags() & GMF_ALL_VALID) {
            if (r.type != RasterType::Float32) continue;
        } else {
            if (band->GetMaskBand()->RasterIO(GF_Read, 0, 0, r.width, r.height, mask.data(), r.width, r.height,
                                              GDT_Byte, 0, 0, nullptr) != CE_None)
                throw Error(path + ": reading the mask of band " + std::to_string(r.band_numbers[std::size_t(i)]) +
                            " failed" + gdal_message());
            if (!any_invalid && std::find(mask.begin(), mask.end(), std::uint8_t{0}) != mask.end()) {
                any_invalid = true;
                r.valid.assign(n, 1);
            }
            if (any_invalid)
                for (std::size_t q = 0; q < n; ++q)
                    if (mask[q] == 0) r.valid[q] = 0;
        }
        // NaN is never a value to segment, mask or not.
        for (std::size_t q = 0; q < n; ++q)
            if (!std::isfinite(r.values[q * std::size_t(B) + std::size_t(i)])) {
                if (!any_invalid) {
                    any_invalid = true;
                    r.valid.assign(n, 1);
                }
                r.valid[q] = 0;
            }
    }
    return r;
}

void write_raster(const std::string& path, const float* values, int height, int width, int bands, RasterType type,
                  const Georeference& georef, std::optional<double> nodata)
{
    if (height < 1 || width < 1 || bands < 1)
        throw InvalidArgument(path + ": cannot write a raster of " + std::to_string(width) + " x " +
                              std::to_string(height) + " pixels and " + std::to_string(bands) + " bands");
    Dataset d = create_tiff(path, width, height, bands, gdal_type(type), georef);
    bool ok = true;
    // Integer types: round to nearest and clamp (GDAL's own conversion truncates toward zero).
    const std::size_t n = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
    std::vector<float> band_values(n);
    double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
    if (type == RasterType::UInt8) lo = 0, hi = 255;
    if (type == RasterType::UInt16) lo = 0, hi = 65535;
    if (type == RasterType::Int16) lo = -32768, hi = 32767;
    for (int b = 0; ok && b < bands; ++b) {
        for (std::size_t q = 0; q < n; ++q) {
            const float v = values[q * std::size_t(bands) + std::size_t(b)];
            band_values[q] =
                type == RasterType::Float32 ? v : static_cast<float>(std::clamp(std::nearbyint(double(v)), lo, hi));
        }
        GDALRasterBand* band = d->GetRasterBand(b + 1);
        if (nodata) ok = band->SetNoDataValue(*nodata) == CE_None;
        ok = ok && band->RasterIO(GF_Write, 0, 0, width, height, band_values.data(), width, height, GDT_Float32, 0, 0,
                                  nullptr) == CE_None;
    }
    finish_tiff(d, ok, path);
}

void write_label_raster(const std::string& path, const std::vector<int>& labels, int height, int width,
                        const Georeference& georef)
{
    const std::size_t n = static_cast<std::size_t>(std::max(height, 0)) * static_cast<std::size_t>(std::max(width, 0));
    if (labels.size() != n || n == 0)
        throw InvalidArgument(path + ": " + std::to_string(labels.size()) + " labels for a raster of " +
                              std::to_string(width) + " x " + std::to_string(height) + " pixels");
    Dataset d = create_tiff(path, width, height, 1, GDT_UInt32, georef);
    bool ok = true;
    std::vector<std::uint32_t> out(n);
    for (std::size_t q = 0; q < n; ++q) out[q] = static_cast<std::uint32_t>(labels[q] + 1);
    GDALRasterBand* band = d->GetRasterBand(1);
    ok = ok && band->SetNoDataValue(0) == CE_None;
    ok = ok &&
         band->RasterIO(GF_Write, 0, 0, width, height, out.data(), width, height, GDT_UInt32, 0, 0, nullptr) == CE_None;
    finish_tiff(d, ok, path);
}

}  // namespace meanshift
