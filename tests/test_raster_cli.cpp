// `meanshift segment IN.tif -o LABELS.tif` (docs/raster.md) as a user runs it: a 4-band uint16
// GeoTIFF with nodata in, georeferenced tiled label and filtered rasters out; bad input refused
// before any output.
#include "raster_fixtures.hpp"

#include <doctest/doctest.h>

#include <meanshift/raster.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sys/wait.h>
#include <string>
#include <vector>

using namespace rasterfix;
namespace fs = std::filesystem;

#if defined(MEANSHIFT_CLI_EXE)
namespace {

// Runs the tool with `args` in `dir`, stdout and stderr to dir/out.txt; returns the exit status.
int meanshift_cli(const TempDir& dir, const std::string& args)
{
    const std::string cmd = "cd '" + dir.path.string() + "' && '" MEANSHIFT_CLI_EXE "' " + args + " > out.txt 2>&1";
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::vector<std::uint32_t> read_u32(const std::string& path, int h, int w, double* gt)
{
    GDALDataset* d = GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY);
    REQUIRE(d != nullptr);
    REQUIRE(d->GetRasterXSize() == w);
    REQUIRE(d->GetRasterYSize() == h);
    std::vector<std::uint32_t> v(std::size_t(h) * w);
    REQUIRE(d->GetRasterBand(1)->RasterIO(GF_Read, 0, 0, w, h, v.data(), w, h, GDT_UInt32, 0, 0, nullptr) == CE_None);
    REQUIRE(d->GetGeoTransform(gt) == CE_None);
    GDALClose(GDALDataset::ToHandle(d));
    return v;
}

}  // namespace

TEST_CASE("raster cli: segment a 4-band uint16 GeoTIFF into georeferenced label and filtered GeoTIFFs")
{
    TempDir dir;
    const int h = 24, w = 28;
    const double nodata = 0;
    write_test_raster(dir.file("in.tif"), two_surfaces(h, w, true), h, w, 4, GDT_UInt16, &nodata);
    REQUIRE(meanshift_cli(dir, "segment in.tif -o labels.tif --filtered-output filtered.tif --bands 1,2,3,4 "
                               "--hr 100 --min-region 5 --backend serial --vector seg.gpkg") == 0);
    double gt[6];
    const std::vector<std::uint32_t> l = read_u32(dir.file("labels.tif"), h, w, gt);
    for (int i = 0; i < 6; ++i) CHECK(gt[i] == kGeoTransform[i]);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const std::uint32_t want = y >= h - 6 && x >= w - 6 ? 0u : x < w / 2 ? 1u : 2u;
            CHECK(l[std::size_t(y * w + x)] == want);
        }
    const meanshift::Raster f = meanshift::read_raster(dir.file("filtered.tif"));
    CHECK(f.type == meanshift::RasterType::UInt16);
    CHECK(f.bands == 4);
    CHECK(f.values == meanshift::read_raster(dir.file("in.tif")).values);  // flat surfaces are their modes
    CHECK(f.valid_pixels() == h * w - 36);
    GDALDataset* v = GDALDataset::Open(dir.file("seg.gpkg").c_str(), GDAL_OF_VECTOR | GDAL_OF_READONLY);
    REQUIRE(v != nullptr);
    CHECK(v->GetLayerByName("segments")->GetFeatureCount() == 2);
    GDALClose(GDALDataset::ToHandle(v));
}

TEST_CASE("raster cli: bad input is refused with one error line and no output file")
{
    TempDir dir;
    write_test_raster(dir.file("in.tif"), two_surfaces(8, 8, false), 8, 8, 4, GDT_UInt16);
    struct Case {
        const char* args;
        const char* message;
    };
    for (const Case& c : {Case{"segment missing.tif -o l.tif", "GDAL cannot open"},
                          Case{"segment in.tif -o l.tif --bands 1,5", "band 5 does not exist"},
                          Case{"segment in.tif -o l.tif --bands 0", "is not a band number"},
                          Case{"segment in.tif -o l.tif --ram 0.001", "more than --ram"},
                          Case{"segment in.tif -o l.tif --filtered-output f.png", "must be a GeoTIFF"},
                          Case{"segment in.tif -o l.tif --labels-image x.png", "photo outputs"},
                          Case{"segment in.tif -o l.tif --vector v.kml", "GeoPackage"},
                          Case{"segment in.tif -o l.tif --vector no/dir/v.gpkg", "OGR cannot create"}}) {
        INFO(c.args);
        CHECK(meanshift_cli(dir, c.args) != 0);
        std::ifstream out(dir.file("out.txt"));
        const std::string text((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
        CHECK(text.find(c.message) != std::string::npos);
        CHECK(text.rfind("meanshift: error: ", 0) == 0);
        CHECK(!fs::exists(dir.file("l.tif")));
        CHECK(!fs::exists(dir.file("l.tif.partial")));
    }
}
#endif
