// Rasters through GDAL (include/meanshift/raster.hpp): round trips that keep georeferencing,
// nodata and N bands; segmentation in the bands' units with invalid pixels kept out; errors.
#include "raster_fixtures.hpp"

#include <doctest/doctest.h>

#include <meanshift/errors.hpp>
#include <meanshift/raster.hpp>

#include <gdal_priv.h>
#include <ogrsf_frmts.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

using namespace rasterfix;
namespace fs = std::filesystem;

TEST_CASE("raster: a 4-band uint16 GeoTIFF reads with its georeferencing, nodata mask and band order")
{
    TempDir dir;
    const int h = 20, w = 24;
    const double nodata = 0;
    write_test_raster(dir.file("in.tif"), two_surfaces(h, w, true), h, w, 4, GDT_UInt16, &nodata);

    const meanshift::RasterInfo info = meanshift::probe_raster(dir.file("in.tif"));
    CHECK(info.height == h);
    CHECK(info.width == w);
    CHECK(info.bands == 4);
    CHECK(info.driver == "GTiff");
    REQUIRE(info.types.size() == 4);
    CHECK(info.types[0] == meanshift::RasterType::UInt16);

    const meanshift::Raster r = meanshift::read_raster(dir.file("in.tif"), {4, 1});
    CHECK(r.bands == 2);
    CHECK(r.band_numbers == std::vector<int>{4, 1});
    CHECK(r.type == meanshift::RasterType::UInt16);
    CHECK(r.georef.has_geotransform);
    for (int i = 0; i < 6; ++i) CHECK(r.georef.geotransform[std::size_t(i)] == kGeoTransform[i]);
    OGRSpatialReference srs;
    srs.importFromWkt(r.georef.projection.c_str());
    CHECK(srs.GetAuthorityCode(nullptr) == std::string("32633"));
    REQUIRE(r.nodata.size() == 2);
    CHECK(r.nodata[0] == 0.0);
    // Band 4 first, then band 1, exactly (uint16 is exact in float32).
    CHECK(r.values[0] == 3100.0f);
    CHECK(r.values[1] == 1200.0f);
    const std::size_t right = std::size_t(w - 1);
    CHECK(r.values[right * 2] == 1800.0f);
    CHECK(r.values[right * 2 + 1] == 400.0f);
    REQUIRE(r.valid.size() == std::size_t(h * w));
    CHECK(r.valid_pixels() == h * w - 36);
    CHECK(r.valid[std::size_t((h - 1) * w + (w - 1))] == 0);
    CHECK(r.valid[std::size_t((h - 7) * w + (w - 1))] == 1);
    CHECK(r.valid[std::size_t((h - 1) * w + (w - 7))] == 1);
}

TEST_CASE("raster: a float32 band's NaN is invalid; without nodata every pixel is valid")
{
    TempDir dir;
    std::vector<double> v(5 * 4, 2.5);
    write_test_raster(dir.file("plain.tif"), v, 5, 4, 1, GDT_Float32);
    meanshift::Raster r = meanshift::read_raster(dir.file("plain.tif"));
    CHECK(r.type == meanshift::RasterType::Float32);
    CHECK(r.valid.empty());
    CHECK(r.valid_pixels() == 20);
    CHECK(!r.nodata[0].has_value());
    v[7] = std::nan("");
    write_test_raster(dir.file("nan.tif"), v, 5, 4, 1, GDT_Float32);
    r = meanshift::read_raster(dir.file("nan.tif"));
    REQUIRE(r.valid.size() == 20);
    CHECK(r.valid[7] == 0);
    CHECK(r.valid_pixels() == 19);
}

TEST_CASE("raster: written rasters are tiled, compressed GeoTIFFs keeping georeferencing, nodata and values")
{
    TempDir dir;
    const int h = 300, w = 270, b = 3;
    std::vector<float> v(std::size_t(h) * w * b);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 5000) - 1000.5f;
    meanshift::Georeference g;
    g.has_geotransform = true;
    for (int i = 0; i < 6; ++i) g.geotransform[std::size_t(i)] = kGeoTransform[i];
    g.projection = utm33n();
    meanshift::write_raster(dir.file("f.tif"), v.data(), h, w, b, meanshift::RasterType::Float32, g, -9999.0);
    CHECK(!fs::exists(dir.file("f.tif.partial")));
    const meanshift::Raster r = meanshift::read_raster(dir.file("f.tif"));
    CHECK(r.height == h);
    CHECK(r.width == w);
    CHECK(r.bands == b);
    CHECK(r.values == v);
    CHECK(r.nodata[2] == -9999.0);
    CHECK(r.georef.geotransform == g.geotransform);
    CHECK(!r.georef.projection.empty());

    GDALDataset* d = GDALDataset::Open(dir.file("f.tif").c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY);
    REQUIRE(d != nullptr);
    int bx = 0, by = 0;
    d->GetRasterBand(1)->GetBlockSize(&bx, &by);
    CHECK(bx == 256);
    CHECK(by == 256);
    const char* comp = d->GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE");
    REQUIRE(comp != nullptr);
    CHECK(std::string(comp) == "DEFLATE");
    GDALClose(GDALDataset::ToHandle(d));

    // Integer types: rounded to nearest and clamped.
    const float ints[4] = {-3.0f, 2.5f, 70000.0f, 41.4f};
    meanshift::write_raster(dir.file("u.tif"), ints, 2, 2, 1, meanshift::RasterType::UInt16, g);
    const meanshift::Raster u = meanshift::read_raster(dir.file("u.tif"));
    CHECK(u.type == meanshift::RasterType::UInt16);
    CHECK(u.values == std::vector<float>{0.0f, 2.0f, 65535.0f, 41.0f});

    // Labels: segment s as s + 1, nodata (-1) as 0, declared as the band's nodata value.
    meanshift::write_label_raster(dir.file("l.tif"), {0, -1, 2, 1}, 2, 2, g);
    GDALDataset* ld = GDALDataset::Open(dir.file("l.tif").c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY);
    REQUIRE(ld != nullptr);
    GDALRasterBand* lb = ld->GetRasterBand(1);
    CHECK(lb->GetRasterDataType() == GDT_UInt32);
    std::vector<std::uint32_t> l(4);
    REQUIRE(lb->RasterIO(GF_Read, 0, 0, 2, 2, l.data(), 2, 2, GDT_UInt32, 0, 0, nullptr) == CE_None);
    CHECK(l == std::vector<std::uint32_t>{1, 0, 3, 2});
    int has = 0;
    CHECK(lb->GetNoDataValue(&has) == 0.0);
    CHECK(has == 1);
    double lgt[6];
    REQUIRE(ld->GetGeoTransform(lgt) == CE_None);
    CHECK(lgt[0] == kGeoTransform[0]);
    CHECK(lgt[5] == kGeoTransform[5]);
    GDALClose(GDALDataset::ToHandle(ld));
}

TEST_CASE("raster: segmentation in the bands' units finds the two surfaces; nodata pixels take no part")
{
    TempDir dir;
    const int h = 24, w = 28;
    const double nodata = 0;
    write_test_raster(dir.file("in.tif"), two_surfaces(h, w, true), h, w, 4, GDT_UInt16, &nodata);
    meanshift::Raster r = meanshift::read_raster(dir.file("in.tif"));
    meanshift::RasterSegmentOptions ro;
    ro.segment.meanshift.backend = "serial";
    ro.segment.spatial_bandwidth = 3;
    ro.segment.range_bandwidth = 100;  // uint16 units: the surfaces differ by hundreds
    ro.segment.min_region = 5;
    const meanshift::RasterSegmentation s = meanshift::segment_raster(r, ro);
    REQUIRE(s.segments() == 2);
    // Left half: h·w/2 pixels; right half: h·w/2 minus the 6 × 6 hole.
    CHECK(s.sizes[0] == h * w / 2);
    CHECK(s.sizes[1] == h * w / 2 - 36);
    const double left[4] = {1200, 900, 700, 3100}, right[4] = {400, 650, 2400, 1800};
    for (int k = 0; k < 4; ++k) {
        CHECK(s.means[std::size_t(k)] == doctest::Approx(left[k]));
        CHECK(s.means[std::size_t(4 + k)] == doctest::Approx(right[k]));
        CHECK(s.stddevs[std::size_t(k)] == doctest::Approx(0.0));
    }
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const int l = s.labels[std::size_t(y * w + x)];
            if (y >= h - 6 && x >= w - 6)
                CHECK(l == -1);
            else
                CHECK(l == (x < w / 2 ? 0 : 1));
        }
    // Flat surfaces are their own modes: the filtered raster is the input on valid pixels.
    for (std::size_t q = 0; q < std::size_t(h * w); ++q)
        if (s.labels[q] >= 0)
            for (int k = 0; k < 4; ++k) CHECK(s.filtered[q * 4 + std::size_t(k)] == r.values[q * 4 + std::size_t(k)]);

    // What the file stores under the mask does not matter: bit-identical filtered values and labels.
    meanshift::Raster r2 = r;
    for (std::size_t q = 0; q < r2.valid.size(); ++q)
        if (r2.valid[q] == 0)
            for (int k = 0; k < 4; ++k) r2.values[q * 4 + std::size_t(k)] = 1000.0f + 3.0f * float(k);
    const meanshift::RasterSegmentation s2 = meanshift::segment_raster(r2, ro);
    CHECK(s2.labels == s.labels);
    for (std::size_t q = 0; q < std::size_t(h * w); ++q)
        if (s.labels[q] >= 0)
            for (int k = 0; k < 4; ++k)
                CHECK(s2.filtered[q * 4 + std::size_t(k)] == s.filtered[q * 4 + std::size_t(k)]);
}

TEST_CASE("raster: band scales put hr in the scaled units")
{
    // Two surfaces 0.02 apart in reflectance (200 in the stored units × 10^4): hr 0.05 in
    // reflectance joins them, hr 0.005 separates them.
    meanshift::Raster r;
    r.height = 10, r.width = 12, r.bands = 1;
    for (int y = 0; y < 10; ++y)
        for (int x = 0; x < 12; ++x) r.values.push_back(x < 6 ? 1000.0f : 1200.0f);
    meanshift::RasterSegmentOptions ro;
    ro.segment.meanshift.backend = "serial";
    ro.segment.min_region = 0;
    ro.band_scales = {1e4};
    ro.segment.range_bandwidth = 0.005;
    CHECK(meanshift::segment_raster(r, ro).segments() == 2);
    ro.segment.range_bandwidth = 0.05;
    CHECK(meanshift::segment_raster(r, ro).segments() == 1);
    ro.band_scales = {0.0};
    CHECK_THROWS_AS(meanshift::segment_raster(r, ro), meanshift::InvalidArgument);
    ro.band_scales = {1.0, 1.0};
    CHECK_THROWS_AS(meanshift::segment_raster(r, ro), meanshift::InvalidArgument);
    ro.band_scales = {};
    r.valid.assign(120, 0);
    CHECK_THROWS_WITH_AS(meanshift::segment_raster(r, ro), doctest::Contains("no valid pixel"),
                         meanshift::InvalidArgument);
}

TEST_CASE("raster: bad input is refused with a clear error before any output")
{
    TempDir dir;
    CHECK_THROWS_WITH_AS(meanshift::read_raster(dir.file("missing.tif")), doctest::Contains("GDAL cannot open"),
                         meanshift::InvalidArgument);
    {
        std::FILE* f = std::fopen(dir.file("junk.tif").c_str(), "wb");
        std::fputs("not a raster", f);
        std::fclose(f);
    }
    CHECK_THROWS_AS(meanshift::read_raster(dir.file("junk.tif")), meanshift::InvalidArgument);
    write_test_raster(dir.file("two.tif"), std::vector<double>(2 * 3 * 2, 1.0), 2, 3, 2, GDT_Byte);
    CHECK_THROWS_WITH_AS(meanshift::read_raster(dir.file("two.tif"), {1, 3}),
                         doctest::Contains("band 3 does not exist (the raster has 2 bands)"),
                         meanshift::InvalidArgument);
    write_test_raster(dir.file("i32.tif"), std::vector<double>(6, 1.0), 2, 3, 1, GDT_Int32);
    CHECK_THROWS_WITH_AS(meanshift::read_raster(dir.file("i32.tif")), doctest::Contains("band 1 is Int32"),
                         meanshift::InvalidArgument);
    CHECK_THROWS_WITH_AS(meanshift::probe_raster(dir.file("i32.tif")), doctest::Contains("supported band types"),
                         meanshift::InvalidArgument);

    const std::string nowhere = dir.file("no/such/dir/out.tif");
    CHECK_THROWS_AS(meanshift::write_label_raster(nowhere, {0, 0}, 1, 2, {}), meanshift::Error);
    CHECK(!fs::exists(nowhere + ".partial"));
    CHECK_THROWS_AS(meanshift::write_label_raster(dir.file("l.tif"), {0, 0, 0}, 1, 2, {}), meanshift::InvalidArgument);
    CHECK(!fs::exists(dir.file("l.tif")));
}

TEST_CASE("raster: band lists")
{
    CHECK(meanshift::parse_band_list("1,2,3,4") == std::vector<int>{1, 2, 3, 4});
    CHECK(meanshift::parse_band_list("8") == std::vector<int>{8});
    CHECK(meanshift::parse_band_list("3,3") == std::vector<int>{3, 3});
    for (const char* bad : {"", "0", "1,,2", "1,", "a", "-1", "1.5", "2 "})
        CHECK_THROWS_AS(meanshift::parse_band_list(bad), meanshift::InvalidArgument);
}

TEST_CASE("raster: segments as GeoPackage polygons with pixel counts and per-band mean and std")
{
    TempDir dir;
    const int h = 24, w = 28;
    const double nodata = 0;
    std::vector<double> v = two_surfaces(h, w, true);
    v[(std::size_t(3) * w + 2) * 4 + 1] = 960;  // one pixel of the left surface differs in band 2 by +60
    write_test_raster(dir.file("in.tif"), v, h, w, 4, GDT_UInt16, &nodata);
    const meanshift::Raster r = meanshift::read_raster(dir.file("in.tif"), {2, 1, 3, 4});
    meanshift::RasterSegmentOptions ro;
    ro.segment.meanshift.backend = "serial";
    ro.segment.range_bandwidth = 100;
    ro.segment.min_region = 5;
    const meanshift::RasterSegmentation s = meanshift::segment_raster(r, ro);
    REQUIRE(s.segments() == 2);
    meanshift::write_segment_vectors(dir.file("seg.gpkg"), s, r);
    CHECK(!fs::exists(dir.file("seg.gpkg.partial")));

    GDALDataset* d = GDALDataset::Open(dir.file("seg.gpkg").c_str(), GDAL_OF_VECTOR | GDAL_OF_READONLY);
    REQUIRE(d != nullptr);
    OGRLayer* layer = d->GetLayerByName("segments");
    REQUIRE(layer != nullptr);
    CHECK(layer->GetFeatureCount() == 2);
    REQUIRE(layer->GetSpatialRef() != nullptr);
    CHECK(layer->GetSpatialRef()->GetAuthorityCode(nullptr) == std::string("32633"));
    const double n_left = h * w / 2;
    for (auto& f : *layer) {
        const int label = f->GetFieldAsInteger("label");
        const GIntBig pixels = f->GetFieldAsInteger64("pixels");
        const OGRGeometry* g = f->GetGeometryRef();
        REQUIRE(g != nullptr);
        // Each pixel is 10 m x 10 m.
        CHECK(g->toPolygon()->get_Area() == doctest::Approx(100.0 * double(pixels)));
        if (label == 1) {
            CHECK(pixels == h * w / 2);
            CHECK(f->GetFieldAsDouble("mean_b2") == doctest::Approx(900 + 60 / n_left));
            // One value 60 above the others: std = 60 · sqrt((n - 1)) / n.
            CHECK(f->GetFieldAsDouble("std_b2") == doctest::Approx(60.0 * std::sqrt(n_left - 1) / n_left));
            CHECK(f->GetFieldAsDouble("mean_b1") == doctest::Approx(1200));
            CHECK(f->GetFieldAsDouble("std_b1") == doctest::Approx(0.0));
            CHECK(f->GetFieldAsDouble("mean_b4") == doctest::Approx(3100));
        } else {
            CHECK(label == 2);
            CHECK(pixels == h * w / 2 - 36);
            CHECK(f->GetFieldAsDouble("mean_b3") == doctest::Approx(2400));
        }
    }
    GDALClose(GDALDataset::ToHandle(d));

    CHECK_THROWS_AS(meanshift::write_segment_vectors(dir.file("seg.txt"), s, r), meanshift::InvalidArgument);
    CHECK_THROWS_AS(meanshift::write_segment_vectors(dir.file("no/such/dir/seg.gpkg"), s, r), meanshift::Error);
    CHECK(!fs::exists(dir.file("no/such/dir/seg.gpkg.partial")));
}
