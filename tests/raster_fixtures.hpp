#pragma once
// Fixtures of the raster tests: a scratch folder and GeoTIFFs written through GDAL directly.
#include <doctest/doctest.h>

#include <gdal_priv.h>
#include <ogr_spatialref.h>
#include <ogrsf_frmts.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace rasterfix {

namespace fs = std::filesystem;

// A fresh directory under the system's temporary one, removed with its files at scope exit.
struct TempDir {
    fs::path path;
    TempDir()
    {
        path = fs::temp_directory_path() / ("meanshift_raster_" + std::to_string(::getpid()) + "_" +
                                            std::to_string(reinterpret_cast<std::uintptr_t>(this)));
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

inline const double kGeoTransform[6] = {500000.0, 10.0, 0.0, 4600000.0, 0.0, -10.0};

inline std::string utm33n()
{
    OGRSpatialReference srs;
    srs.importFromEPSG(32633);
    char* wkt = nullptr;
    srs.exportToWkt(&wkt);
    std::string s = wkt;
    CPLFree(wkt);
    return s;
}

// Writes an H × W × B GeoTIFF of `type` through GDAL directly (`v` band-interleaved by pixel), UTM
// 33N at 10 m, with `nodata` on every band when given.
inline void write_test_raster(const std::string& path, const std::vector<double>& v, int h, int w, int b,
                              GDALDataType type, const double* nodata = nullptr)
{
    GDALAllRegister();
    GDALDriver* drv = GetGDALDriverManager()->GetDriverByName("GTiff");
    REQUIRE(drv != nullptr);
    GDALDataset* d = drv->Create(path.c_str(), w, h, b, type, nullptr);
    REQUIRE(d != nullptr);
    d->SetGeoTransform(const_cast<double*>(kGeoTransform));
    d->SetProjection(utm33n().c_str());
    std::vector<double> band(static_cast<std::size_t>(h) * w);
    for (int k = 0; k < b; ++k) {
        for (std::size_t q = 0; q < band.size(); ++q) band[q] = v[q * b + k];
        if (nodata) d->GetRasterBand(k + 1)->SetNoDataValue(*nodata);
        REQUIRE(d->GetRasterBand(k + 1)->RasterIO(GF_Write, 0, 0, w, h, band.data(), w, h, GDT_Float64, 0, 0,
                                                  nullptr) == CE_None);
    }
    GDALClose(GDALDataset::ToHandle(d));
}

// A 4-band uint16 "reflectance" image of H × W: left half one surface, right half another, and in
// the bottom-right corner a 6 × 6 block of nodata (0).
inline std::vector<double> two_surfaces(int h, int w, bool with_nodata)
{
    const double left[4] = {1200, 900, 700, 3100}, right[4] = {400, 650, 2400, 1800};
    std::vector<double> v(static_cast<std::size_t>(h) * w * 4);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int k = 0; k < 4; ++k) {
                const bool hole = with_nodata && y >= h - 6 && x >= w - 6;
                v[(std::size_t(y) * w + x) * 4 + k] = hole ? 0.0 : (x < w / 2 ? left[k] : right[k]);
            }
    return v;
}

}  // namespace rasterfix
