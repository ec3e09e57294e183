// Segments as GIS polygons through OGR (include/meanshift/raster.hpp, write_segment_vectors()):
// GDALPolygonize over the label raster, then each polygon's pixel count and per-band statistics.
#include <meanshift/errors.hpp>
#include <meanshift/raster.hpp>

#include <gdal_alg.h>
#include <gdal_priv.h>
#include <ogrsf_frmts.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <string>

namespace meanshift {
namespace {

struct DatasetCloser {
    void operator()(GDALDataset* d) const { GDALClose(GDALDataset::ToHandle(d)); }
};
using Dataset = std::unique_ptr<GDALDataset, DatasetCloser>;

std::string gdal_message()
{
    const char* m = CPLGetLastErrorMsg();
    return m != nullptr && *m != '\0' ? std::string(": ") + m : std::string();
}

bool ends_with(std::string s, const std::string& suffix)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void write_segment_vectors(const std::string& path, const RasterSegmentation& s, const Raster& raster)
{
    const int H = raster.height, W = raster.width, B = raster.bands;
    const std::size_t n = static_cast<std::size_t>(std::max(H, 0)) * static_cast<std::size_t>(std::max(W, 0));
    if (n == 0 || s.labels.size() != n)
        throw InvalidArgument(path + ": " + std::to_string(s.labels.size()) + " labels for a raster of " +
                              std::to_string(W) + " x " + std::to_string(H) + " pixels");
    const bool shapefile = ends_with(path, ".shp");
    if (!shapefile && !ends_with(path, ".gpkg"))
        throw InvalidArgument(path + ": the vector output must be a GeoPackage (.gpkg) or a Shapefile (.shp)");
    GDALAllRegister();
    GDALDriver* mem = GetGDALDriverManager()->GetDriverByName("MEM");
    GDALDriver* drv = GetGDALDriverManager()->GetDriverByName(shapefile ? "ESRI Shapefile" : "GPKG");
    if (mem == nullptr || drv == nullptr) throw Error(path + ": GDAL lacks the MEM or the output driver");

    // The labels as s + 1 (0 = nodata) in a georeferenced in-memory raster, masked where nodata.
    Dataset labels(mem->Create("", W, H, 2, GDT_UInt32, nullptr));
    if (!labels) throw Error(path + ": cannot create the in-memory label raster" + gdal_message());
    if (raster.georef.has_geotransform) labels->SetGeoTransform(const_cast<double*>(raster.georef.geotransform.data()));
    std::vector<std::uint32_t> v(n);
    for (std::size_t q = 0; q < n; ++q) v[q] = static_cast<std::uint32_t>(s.labels[q] + 1);
    bool ok =
        labels->GetRasterBand(1)->RasterIO(GF_Write, 0, 0, W, H, v.data(), W, H, GDT_UInt32, 0, 0, nullptr) == CE_None;
    for (std::size_t q = 0; q < n; ++q) v[q] = s.labels[q] >= 0 ? 1u : 0u;
    ok = ok &&
         labels->GetRasterBand(2)->RasterIO(GF_Write, 0, 0, W, H, v.data(), W, H, GDT_UInt32, 0, 0, nullptr) == CE_None;
    if (!ok) throw Error(path + ": cannot fill the in-memory label raster" + gdal_message());

    // A GeoPackage is one file: written as PATH.partial, renamed once complete. A Shapefile is
    // several files named after PATH: written in place, removed on failure.
    const std::string target = shapefile ? path : path + ".partial";
    CPLErrorReset();
    CPLPushErrorHandler(CPLQuietErrorHandler);
    Dataset out(drv->Create(target.c_str(), 0, 0, 0, GDT_Unknown, nullptr));
    const std::string why = gdal_message();
    CPLPopErrorHandler();
    if (!out) throw Error(path + ": OGR cannot create it" + why);
    auto fail = [&](const std::string& what) {
        const std::string msg = path + ": " + what + gdal_message();
        out.reset();
        drv->Delete(target.c_str());
        std::remove(target.c_str());
        throw Error(msg);
    };
    std::unique_ptr<OGRSpatialReference> srs;
    if (!raster.georef.projection.empty()) {
        srs = std::make_unique<OGRSpatialReference>();
        if (srs->importFromWkt(raster.georef.projection.c_str()) != OGRERR_NONE)
            srs.reset();
        else
            srs->SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);
    }
    OGRLayer* layer = out->CreateLayer("segments", srs.get(), wkbPolygon, nullptr);
    if (layer == nullptr) fail("cannot create the layer 'segments'");
    // Fields: label (s + 1, as in the label raster), pixels, then mean_b<k> and std_b<k> per band
    // (k = the band's number in the input file).
    OGRFieldDefn label_field("label", OFTInteger);
    OGRFieldDefn pixels_field("pixels", OFTInteger64);
    if (layer->CreateField(&label_field) != OGRERR_NONE || layer->CreateField(&pixels_field) != OGRERR_NONE)
        fail("cannot create the fields");
    for (int b = 0; b < B; ++b) {
        const int number =
            b < static_cast<int>(raster.band_numbers.size()) ? raster.band_numbers[std::size_t(b)] : b + 1;
        OGRFieldDefn mean_field(("mean_b" + std::to_string(number)).c_str(), OFTReal);
        OGRFieldDefn std_field(("std_b" + std::to_string(number)).c_str(), OFTReal);
        if (layer->CreateField(&mean_field) != OGRERR_NONE || layer->CreateField(&std_field) != OGRERR_NONE)
            fail("cannot create the band fields");
    }
    if (out->StartTransaction() != OGRERR_NONE && !shapefile) fail("cannot start a transaction");
    // 4-connected polygons, as the segments are (regions are unions of 4-neighbouring pixels).
    if (GDALPolygonize(labels->GetRasterBand(1), labels->GetRasterBand(2), OGRLayer::ToHandle(layer), 0, nullptr,
                       nullptr, nullptr) != CE_None)
        fail("polygonizing the labels failed");
    layer->ResetReading();
    std::vector<GIntBig> ids;
    for (auto& f : *layer) ids.push_back(f->GetFID());
    const int field_label = layer->GetLayerDefn()->GetFieldIndex("label");
    for (GIntBig id : ids) {
        std::unique_ptr<OGRFeature> f(layer->GetFeature(id));
        if (!f) fail("cannot read back a polygon");
        const int l = f->GetFieldAsInteger(field_label) - 1;
        if (l < 0 || l >= s.segments()) fail("a polygon's label is out of range");
        f->SetField("pixels", static_cast<GIntBig>(s.sizes[std::size_t(l)]));
        for (int b = 0; b < B; ++b) {
            f->SetField(2 + 2 * b, s.means[std::size_t(l) * std::size_t(B) + std::size_t(b)]);
            f->SetField(3 + 2 * b, s.stddevs[std::size_t(l) * std::size_t(B) + std::size_t(b)]);
        }
        if (layer->SetFeature(f.get()) != OGRERR_NONE) fail("cannot write a polygon's fields");
    }
    if (out->CommitTransaction() != OGRERR_NONE && !shapefile) fail("cannot commit the polygons");
    out.reset();
    if (CPLGetLastErrorType() >= CE_Failure && !shapefile) {
        drv->Delete(target.c_str());
        throw Error(path + ": writing the polygons failed" + gdal_message());
    }
    if (!shapefile && std::rename(target.c_str(), path.c_str()) != 0) {
        std::remove(target.c_str());
        throw Error(path + ": cannot rename " + target + " to it");
    }
}

}  // namespace meanshift
