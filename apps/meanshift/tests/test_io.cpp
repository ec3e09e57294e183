// Unit tests of the tool's file I/O and colour conversion (no backend needed).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "colour.hpp"
#include "io_image.hpp"
#include "io_matrix.hpp"

#include <meanshift/errors.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

using meanshift::IoError;
using mscli::parse_csv;

namespace {

std::string temp_path(const std::string& name) { return std::string(MSCLI_TEST_TMP) + "/" + name; }

void write_text(const std::string& path, const std::string& text)
{
    std::ofstream f(path, std::ios::binary);
    f << text;
}

std::string message_of(const std::string& text)
{
    try {
        parse_csv(text, "t.csv");
    } catch (const IoError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("CSV: commas, header, comments, CRLF, quotes")
{
    auto m = parse_csv("x,y\r\n# comment\r\n1,2\r\n\r\n3.5,-4e2\r\n\"5\", 6 \r\n", "t.csv");
    REQUIRE(m.rows() == 3);
    REQUIRE(m.cols() == 2);
    CHECK(m(0, 0) == 1);
    CHECK(m(1, 1) == -400);
    CHECK(m(2, 0) == 5);
    CHECK(m(2, 1) == 6);
}

TEST_CASE("CSV: whitespace, tab and semicolon delimited; one column")
{
    auto ws = parse_csv("  1   2 3\n4 5   6\n", "t.csv");
    CHECK(ws.rows() == 2);
    CHECK(ws.cols() == 3);
    CHECK(ws(1, 2) == 6);
    auto tab = parse_csv("1\t2\n3\t4", "t.csv");
    CHECK(tab.cols() == 2);
    CHECK(tab(1, 1) == 4);
    auto semi = parse_csv("1;2\n3;4\n", "t.csv");
    CHECK(semi(1, 0) == 3);
    auto one = parse_csv("7\n8\n9\n", "t.csv");
    CHECK(one.rows() == 3);
    CHECK(one.cols() == 1);
}

TEST_CASE("CSV: errors name the line and column")
{
    CHECK(message_of("1,2\n3,abc\n") == "t.csv: line 2, column 2: 'abc' is not a number");
    CHECK(message_of("1,2\n3,4,5\n") == "t.csv: line 2 has 3 fields, but earlier rows have 2 (ragged rows)");
    CHECK(message_of("1,2\nnan,4\n").find("line 2, column 1: 'nan' is not finite") != std::string::npos);
    CHECK(message_of("1,inf\n").find("is not finite") != std::string::npos);
    CHECK(message_of("1,\n").find("column 2") != std::string::npos);  // empty field
    CHECK(message_of("").find("no data rows") != std::string::npos);
    CHECK(message_of("a,b\n").find("no data rows") != std::string::npos);
    CHECK(message_of("a,1\n").find("'a' is not a number") != std::string::npos);  // mixed: not a header
    CHECK(message_of("1,\"2\n").find("malformed CSV") != std::string::npos);     // unterminated quote
}

TEST_CASE("NPY: float32 round trip, int labels, 1-D, Fortran order, errors")
{
    meanshift::MatrixF m(3, 2);
    m << 1.5f, -2, 3, 4, 5, 6.25f;
    const std::string p = temp_path("m.npy");
    mscli::write_matrix(p, m);
    auto back = mscli::read_matrix(p);
    REQUIRE(back.rows() == 3);
    REQUIRE(back.cols() == 2);
    CHECK(back(0, 0) == 1.5);
    CHECK(back(2, 1) == 6.25);
    // Data start is 64-byte aligned, as the format recommends.
    const std::string bytes = mscli::read_file(p);
    CHECK((bytes.size() - 3 * 2 * 4) % 64 == 0);

    const std::string lp = temp_path("l.npy");
    mscli::write_labels(lp, {0, 2, 1, 1});
    auto labels = mscli::read_matrix(lp);
    CHECK(labels.rows() == 4);
    CHECK(labels.cols() == 1);
    CHECK(labels(1, 0) == 2);

    // Hand-made big-endian float64 Fortran-order 2 x 2 array [[1, 2], [3, 4]].
    std::string dict = "{'descr': '>f8', 'fortran_order': True, 'shape': (2, 2), }";
    dict.append(118 - dict.size(), ' ');
    dict += '\n';
    std::string f("\x93NUMPY\x01\x00", 8);
    f.push_back(static_cast<char>(dict.size()));
    f.push_back(0);
    f += dict;
    for (double v : {1.0, 3.0, 2.0, 4.0}) {  // column-major
        unsigned char b[8];
        std::memcpy(b, &v, 8);
        for (int i = 7; i >= 0; --i) f.push_back(static_cast<char>(b[i]));
    }
    write_text(temp_path("f.npy"), f);
    auto fm = mscli::read_matrix(temp_path("f.npy"));
    CHECK(fm(0, 1) == 2);
    CHECK(fm(1, 0) == 3);

    write_text(temp_path("trunc.npy"), f.substr(0, f.size() - 3));
    CHECK_THROWS_AS(mscli::read_matrix(temp_path("trunc.npy")), IoError);
    write_text(temp_path("bad.npy"), "not numpy");
    CHECK_THROWS_AS(mscli::read_matrix(temp_path("bad.npy")), IoError);
    CHECK_THROWS_AS(mscli::read_matrix(temp_path("missing.csv")), IoError);
    CHECK_THROWS_AS(mscli::read_matrix(temp_path("x.txt")), IoError);
}

TEST_CASE("CSV writer round trip and sibling names")
{
    meanshift::MatrixF m(2, 3);
    m << 0.1f, 2, 3, 4, 5, 1e-7f;
    const std::string p = temp_path("m.csv");
    mscli::write_matrix(p, m);
    auto back = mscli::read_matrix(p);
    CHECK(static_cast<float>(back(0, 0)) == 0.1f);  // 9 significant digits round-trip float32
    CHECK(static_cast<float>(back(1, 2)) == 1e-7f);
    CHECK(mscli::sibling_path("out/labels.csv", "centres") == "out/labels.centres.csv");
    CHECK(mscli::sibling_path("a.b/labels", "centres") == "a.b/labels.centres");
}

TEST_CASE("sRGB to CIELAB reference values")
{
    float lab[3];
    mscli::srgb_to_lab(255, 255, 255, lab);
    CHECK(lab[0] == doctest::Approx(100).epsilon(1e-4));
    CHECK(lab[1] == doctest::Approx(0).epsilon(1e-3));
    CHECK(lab[2] == doctest::Approx(0).epsilon(1e-3));
    mscli::srgb_to_lab(255, 0, 0, lab);  // sRGB red: L* 53.24, a* 80.09, b* 67.20
    CHECK(lab[0] == doctest::Approx(53.24).epsilon(1e-3));
    CHECK(lab[1] == doctest::Approx(80.09).epsilon(1e-3));
    CHECK(lab[2] == doctest::Approx(67.20).epsilon(1e-3));
    mscli::srgb_to_lab(0, 0, 0, lab);
    CHECK(lab[0] == doctest::Approx(0));
    for (int c : {0, 1, 17, 128, 254, 255}) CHECK(mscli::linear_to_srgb(mscli::srgb_to_linear(c)) == c);
}

TEST_CASE("downscaling keeps the pixel budget and averages areas")
{
    int w = 0, h = 0;
    mscli::fitted_size(640, 427, 20000, w, h);
    CHECK(static_cast<long long>(w) * h <= 20000);
    CHECK(w == 173);
    mscli::fitted_size(100, 100, 0, w, h);
    CHECK(w == 100);
    mscli::RgbImage img;
    img.width = 2;
    img.height = 2;
    img.pixels = {0, 0, 0, 255, 255, 255, 0, 0, 0, 255, 255, 255};
    auto small = mscli::downscale_area(img, 1, 1);
    // Half black, half white averaged in linear light: 0.5 linear = sRGB 188.
    CHECK(small.pixels[0] == doctest::Approx(188).epsilon(0.02));
    mscli::write_png(temp_path("x.png"), img);
    auto back = mscli::load_rgb(temp_path("x.png"));
    CHECK(back.width == 2);
    CHECK(back.pixels == img.pixels);
    CHECK_THROWS_AS(mscli::load_rgb(temp_path("m.csv")), IoError);
}
