// Unit tests of the tool's file I/O and colour conversion (no backend needed).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "colour.hpp"
#include "io_image.hpp"
#include "image_codecs.hpp"
#include "io_matrix.hpp"
#include "output_files.hpp"
#include "text.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>
#include <atomic>
#include <chrono>
#include <thread>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

using meanshift::IoError;
using mscli::parse_csv;

namespace {

std::string temp_path(const std::string& name)
{
    return std::string(MSCLI_TEST_TMP) + "/" + name;
}

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

// A hand-made NPY file: big-endian float64 in Fortran order, `shape` rows x cols, `column_major`
// the values column by column (the byte order and layout the writer never produces).
std::string fortran_be_f8(const std::string& shape, std::initializer_list<double> column_major)
{
    std::string dict = "{'descr': '>f8', 'fortran_order': True, 'shape': " + shape + ", }";
    dict.append(118 - dict.size(), ' ');
    dict += '\n';
    std::string f("\x93NUMPY\x01\x00", 8);
    f.push_back(static_cast<char>(dict.size()));
    f.push_back(0);
    f += dict;
    for (double v : column_major) {
        unsigned char b[8];
        std::memcpy(b, &v, 8);
        for (int i = 7; i >= 0; --i) f.push_back(static_cast<char>(b[i]));
    }
    return f;
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
    CHECK(message_of("1,\"2\n").find("malformed CSV") != std::string::npos);  // unterminated quote
}

TEST_CASE("CSV: a NUL byte in a field is an error naming the line and column (audit 26, item 7)")
{
    // strtod stopped at the NUL: "3\0abc" was read as 3.
    CHECK(message_of(std::string("1,2\n3\0abc,4\n5,6\n", 16)) ==
          "t.csv: line 2, column 1: the field has a NUL byte (its byte 2; a binary file, or text in UTF-16?)");
    CHECK(message_of(std::string("1,2\n3,4\0\n", 9)).find("line 2, column 2: ") != std::string::npos);
    // Not a header either: a first line of names with a NUL byte is refused too.
    CHECK(message_of(std::string("x\0,y\n1,2\n", 9)).find("line 1, column 1: ") != std::string::npos);
}

namespace {

// NPY version 1.0 bytes with `dict` as the header (padded as NumPy pads it) and `data` after it.
std::string npy_with_header(std::string dict, const std::string& data)
{
    dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');
    dict += '\n';
    std::string f("\x93NUMPY\x01\x00", 8);
    f.push_back(static_cast<char>(dict.size() & 0xff));
    f.push_back(static_cast<char>(dict.size() >> 8));
    return f + dict + data;
}

std::string npy_message(const std::string& dict, const std::string& data = std::string(32, '\0'))
{
    try {
        mscli::parse_npy(npy_with_header(dict, data), "h.npy");
    } catch (const IoError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("NPY: headers as strict as NumPy's reader (audit 26, item 11)")
{
    // Accepted: NumPy's own header, double quotes, another key order, no trailing comma, Python 2's 'L'.
    CHECK(npy_message("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }") == "");
    CHECK(npy_message("{\"shape\": (2, 2), \"descr\": \"<f8\", \"fortran_order\": False}") == "");
    CHECK(npy_message("{'descr': '<f8', 'fortran_order': False, 'shape': (4L,)}") == "");
    CHECK(npy_message("{'descr':'<f8','fortran_order':True,'shape':(2,2)}") == "");
    // Refused: an unknown key (the audit's 'x': __import__('os') was ignored), a duplicated key
    // (NumPy takes the last 'shape', we took the first), and what ast.literal_eval cannot parse.
    CHECK(npy_message("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), 'x': __import__('os'), }") ==
          "h.npy: malformed NPY header at byte 58 of the header: unknown key 'x' (the header may hold only 'descr', "
          "'fortran_order' and 'shape')");
    CHECK(npy_message("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), 'shape': (2, 2), }") ==
          "h.npy: malformed NPY header at byte 58 of the header: the key 'shape' appears twice");
    CHECK(npy_message("{'descr': '<f8', 'fortran_order': False, 'shape': (4), }")
              .find("'shape' (n) is not a tuple: write (n,)") != std::string::npos);
    CHECK(npy_message("{'descr': '<f8', 'fortran_order': False, 'shape': (02, 2), }").find("leading zeros") !=
          std::string::npos);
    CHECK(npy_message("{'descr': '<f8', 'fortran_order': Trueish, 'shape': (2, 2), }")
              .find("'fortran_order' must be True or False") != std::string::npos);
    CHECK(npy_message("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), } x").find("only spaces may follow") !=
          std::string::npos);
    CHECK(npy_message("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), ")
              .find("the header ends inside the dict") != std::string::npos);
    CHECK(npy_message("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }")
              .find("structured arrays are not supported") != std::string::npos);
    CHECK(npy_message("{'descr': '<f8', 'fortran_order': False, }").find("no 'shape' entry") != std::string::npos);
    CHECK(npy_message("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2),, }") != "");
    CHECK(npy_message("{'descr': '<f\\x38', 'fortran_order': False, 'shape': (2, 2), }") != "");
}

TEST_CASE("NPY: bool arrays load as 0 and 1 (docs/cli.md)")
{
    const meanshift::MatrixD m = mscli::parse_npy(
        npy_with_header("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\x00\x01\x07", 3)),
        "b.npy");
    REQUIRE(m.rows() == 3);
    CHECK(m(0, 0) == 0);
    CHECK(m(1, 0) == 1);
    CHECK(m(2, 0) == 1);  // any byte other than 0 is True, as in NumPy
}

TEST_CASE("NPY: row slices (each MPI rank reads its own rows) equal the whole array's rows")
{
    // C order, float32, 7 x 3.
    meanshift::MatrixF m(7, 3);
    for (int i = 0; i < 7; ++i)
        for (int d = 0; d < 3; ++d) m(i, d) = static_cast<float>(10 * i + d) + 0.25f;
    const std::string p = temp_path("slices.npy");
    mscli::write_matrix(p, m);
    const mscli::NpyLayout L = mscli::read_npy_layout(p);
    CHECK(L.rows == 7);
    CHECK(L.cols == 3);
    CHECK_FALSE(L.fortran);
    const meanshift::MatrixD whole = mscli::read_matrix(p);
    for (meanshift::Index first = 0; first <= 7; ++first)
        for (meanshift::Index count = 0; first + count <= 7; ++count) {
            const meanshift::MatrixD part = mscli::read_npy_rows(p, L, first, count);
            REQUIRE(part.rows() == count);
            REQUIRE(part.cols() == 3);
            CHECK(part == whole.middleRows(first, count));
        }
    CHECK_THROWS_AS(mscli::read_npy_rows(p, L, 5, 3), IoError);
    CHECK_THROWS_AS(mscli::read_npy_rows(p, L, -1, 1), IoError);

    // Fortran order, big-endian float64, 3 x 2 [[1, 2], [3, 4], [5, NaN]]: one block per column,
    // and a NaN in the slice is named by its element.
    const std::string f = fortran_be_f8("(3, 2)", {1.0, 3.0, 5.0, 2.0, 4.0, std::nan("")});
    write_text(temp_path("fs.npy"), f);
    const mscli::NpyLayout F = mscli::read_npy_layout(temp_path("fs.npy"));
    CHECK(F.fortran);
    const meanshift::MatrixD top = mscli::read_npy_rows(temp_path("fs.npy"), F, 0, 2);
    CHECK(top(0, 0) == 1);
    CHECK(top(0, 1) == 2);
    CHECK(top(1, 0) == 3);
    CHECK(top(1, 1) == 4);
    CHECK_THROWS_WITH_AS(mscli::read_npy_rows(temp_path("fs.npy"), F, 1, 2),
                         doctest::Contains("element [2, 1] (0-based) is nan"), IoError);
    // A truncated file fails at the header, before any slice is read.
    write_text(temp_path("fs-trunc.npy"), f.substr(0, f.size() - 9));
    CHECK_THROWS_WITH_AS(mscli::read_npy_layout(temp_path("fs-trunc.npy")), doctest::Contains("truncated NPY data"),
                         IoError);
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
    const std::string f = fortran_be_f8("(2, 2)", {1.0, 3.0, 2.0, 4.0});
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

TEST_CASE("escape_for_terminal: control bytes, C1, bidi and malformed UTF-8 become \\xNN")
{
    using mscli::escape_for_terminal;
    CHECK(escape_for_terminal("plain, text 1.5e3") == "plain, text 1.5e3");
    CHECK(escape_for_terminal("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m");
    CHECK(escape_for_terminal(std::string("a\0b\r\n\t\x7f", 7)) == "a\\x00b\\x0d\\x0a\\x09\\x7f");
    CHECK(escape_for_terminal("back\\slash") == "back\\\\slash");
    CHECK(escape_for_terminal("caf\xc3\xa9 \xe2\x82\xac") == "caf\xc3\xa9 \xe2\x82\xac");  // é, € stay
    CHECK(escape_for_terminal("\xc2\x9b"
                              "2J") == "\\xc2\\x9b2J");  // C1 CSI
    CHECK(escape_for_terminal("\xe2\x80\xae"
                              "txt") == "\\xe2\\x80\\xaetxt");  // RLO
    CHECK(escape_for_terminal("\xff\xc3") == "\\xff\\xc3");  // malformed
    CHECK(escape_for_terminal("\xc0\xaf") == "\\xc0\\xaf");  // overlong
    CHECK(mscli::clip(std::string(100, 'x'), 5) == "xxxxx...");
    CHECK(mscli::sci(3.4028234663852886e38) == "3.4e+38");
}

TEST_CASE("CSV: messages quote at most 40 bytes of a field and say 'empty field'")
{
    const std::string msg = message_of("1,2\n3," + std::string(1000, 'z') + "\n");
    CHECK(msg == "t.csv: line 2, column 2: '" + std::string(40, 'z') + "...' is not a number");
    CHECK(message_of("1,2\n3,\n") == "t.csv: line 2, column 2: empty field (every field must be a number)");
}

TEST_CASE("NPY: a shape larger than the data is refused before allocating")
{
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000000000), }";
    dict.append(117 - dict.size(), ' ');
    dict += '\n';
    std::string f("\x93NUMPY\x01\x00", 8);
    f.push_back(static_cast<char>(dict.size()));
    f.push_back(0);
    f += dict + std::string(16, '\0');
    try {
        mscli::parse_npy(f, "big.npy");
        FAIL("accepted");
    } catch (const IoError& e) {
        CHECK(std::string(e.what()) ==
              "big.npy: truncated NPY data: the header declares shape (1000000000, 1000000000) of '<f4', "
              "4000000000000000000 bytes, but the file has 16 after the header");
    }
    CHECK_THROWS_WITH_AS(mscli::parse_npy(std::string("\x93NUMPY\x01\x00\x05\x00{'de'", 15), "h.npy"),
                         "h.npy: malformed NPY header at byte 5 of the header: the header ends inside the dict",
                         IoError);
}

TEST_CASE("images: header sizes checked against the file before decoding")
{
    int w = 0, h = 0;
    std::string ppm = "P6\n26000 26000\n255\n" + std::string(1000, '\x10');
    CHECK(mscli::declared_size_problem(ppm, w, h).find("declares 26000 x 26000 pixels") != std::string::npos);
    CHECK(w == 26000);
    std::string ok = "P6 2 1\n255\n" + std::string(6, '\x20');
    CHECK(mscli::declared_size_problem(ok, w, h).empty());
    CHECK(mscli::decode_rgb(ok, "ok.ppm").width == 2);
    CHECK(!mscli::declared_size_problem(ok.substr(0, ok.size() - 1), w, h).empty());  // one byte short
    CHECK_THROWS_WITH_AS(mscli::decode_rgb(ppm, "lie.ppm"),
                         doctest::Contains("lie.ppm: the header declares 26000 x 26000 pixels"), IoError);
    CHECK_THROWS_WITH_AS(mscli::decode_rgb("P6\n0 8\n255\n", "zero.ppm"),
                         "zero.ppm: the image is 0 x 8 pixels (zero width or height)", IoError);
    CHECK_THROWS_WITH_AS(mscli::decode_rgb(ok, "small.ppm", 1),
                         "small.ppm: the image is 2 x 1 = 2 pixels, more than the limit of 1 (raise it with "
                         "--max-image-pixels N)",
                         IoError);
    CHECK_THROWS_WITH_AS(mscli::decode_rgb("", "e.png"), "e.png: empty file, not an image", IoError);
    CHECK_THROWS_WITH_AS(mscli::decode_rgb("hello", "t.png"), doctest::Contains("t.png: cannot read image ("), IoError);
    // PNG: 26000 x 26000 in 100 bytes exceeds deflate's best ratio.
    std::string png("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\x65\x90\0\0\x65\x90\x08\x02\0\0\0\0\0\0\0", 33);
    png.resize(100, '\0');
    CHECK(mscli::declared_size_problem(png, w, h) ==
          "the header declares 26000 x 26000 pixels, 78001 x 26000 bytes of scanlines, but 0 bytes of compressed "
          "image data can hold at most 1032 (deflate expands at most 1032:1): truncated or corrupt file");
    // A chunk longer than the rest of the file (stb_image allocated its declared 2 GiB first).
    std::string chunk("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x08\0\0\0\x02\x01\0\0\0\0\x4d\xef\xa0\x40"
                      "\x80\0\0\0IDAT",
                      41);
    chunk.resize(81, 'x');
    CHECK(mscli::declared_size_problem(chunk, w, h) ==
          "PNG chunk at byte 33 declares 2147483648 bytes of data, but the file has only 36 left: truncated or "
          "corrupt file");
}

namespace {

std::string png_chunk(const std::string& type, const std::string& data)
{
    std::string c;
    for (int shift = 24; shift >= 0; shift -= 8) c.push_back(static_cast<char>((data.size() >> shift) & 0xff));
    return c + type + data + std::string(4, '\0');  // stb_image does not check the CRC
}

std::string png_ihdr(unsigned w, unsigned h)
{
    std::string d;
    for (unsigned v : {w, h})
        for (int shift = 24; shift >= 0; shift -= 8) d.push_back(static_cast<char>((v >> shift) & 0xff));
    d += std::string("\x08\x02\x00\x00\x00", 5);
    return std::string("\x89PNG\r\n\x1a\n", 8) + png_chunk("IHDR", d);
}

std::string image_message(const std::string& bytes)
{
    try {
        mscli::decode_rgb(bytes, "i.png");
    } catch (const IoError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("images: clear messages for zero sizes and cut PNGs (audit 26, item 9)")
{
    // Zero width or height: the message docs/cli.md promises, not stb_image's "unknown image type".
    const std::string idat = png_chunk("IDAT", std::string("\x78\x9c\x63\x00\x00\x00\x01\x00\x01", 9));
    CHECK(image_message(png_ihdr(0, 0) + idat + png_chunk("IEND", "")) ==
          "i.png: the image is 0 x 0 pixels (zero width or height)");
    CHECK(image_message(png_ihdr(0, 5) + idat + png_chunk("IEND", "")) ==
          "i.png: the image is 0 x 5 pixels (zero width or height)");
    const std::string gif = "GIF89a" + std::string("\x00\x00\x05\x00", 4) + std::string(20, '\0');
    CHECK(image_message(gif) == "i.png: the image is 0 x 5 pixels (zero width or height)");
    // A PNG cut inside its IEND chunk (stb_image quoted the CRC's bytes as a chunk type), or
    // before it.
    mscli::RgbImage img;
    img.width = 2;
    img.height = 1;
    img.pixels = {1, 2, 3, 4, 5, 6};
    const std::string png = mscli::png_bytes(img);
    CHECK(image_message(png) == "");
    CHECK(image_message(png.substr(0, png.size() - 6)) ==
          "i.png: the PNG file ends at byte " + std::to_string(png.size() - 6) +
              " inside a chunk header, before its IEND chunk: truncated file");
    CHECK(image_message(png.substr(0, png.size() - 12)) == "i.png: the PNG file ends at byte " +
                                                               std::to_string(png.size() - 12) +
                                                               ", before its IEND chunk: truncated file");
    CHECK(image_message(png.substr(0, png.size() - 2)).find("PNG chunk at byte") != std::string::npos);
}

TEST_CASE("images: a PNG over 4 MP, deflated in parallel pieces, decodes to its own pixels")
{
    // 2049 x 2049 (just over 2^22 pixels): zlib pieces on 3 threads (rows split unevenly), with
    // the None filter (flat) and the Sub filter; one thread takes libspng's single stream.
    mscli::RgbImage img;
    img.width = img.height = 2049;
    img.pixels.resize(std::size_t(2049) * 2049 * 3);
    for (std::size_t i = 0; i < img.pixels.size(); ++i)
        img.pixels[i] = static_cast<std::uint8_t>((i * 7919u) % 251u + ((i / 6147u) % 3u) * 2u);
    for (const mscli::PngContent content : {mscli::PngContent::Flat, mscli::PngContent::Photo})
        for (const int threads : {3, 1}) {
            const std::string png = mscli::png_bytes(img, content, threads);
            const mscli::RgbImage back = mscli::decode_rgb(png, "big.png");
            CHECK(back.width == 2049);
            CHECK(back.height == 2049);
            CHECK(back.pixels == img.pixels);
        }
}

TEST_CASE("images: the size check runs before decoding (audit 26, item 4)")
{
    // A header of 10,000 x 10,000 pixels with a garbage IDAT: the check sees the header's size
    // and refuses before the decoder would fail on the data.
    const std::string bomb = mscli::read_file(std::string(MSCLI_TEST_DATA) + "/bomb-10000x10000.png");
    int seen_w = 0, seen_h = 0;
    CHECK_THROWS_WITH_AS(mscli::decode_rgb(bomb, "b.png", 0,
                                           [&](int w, int h) {
                                               seen_w = w;
                                               seen_h = h;
                                               throw meanshift::InvalidArgument("too big");
                                           }),
                         "too big", meanshift::InvalidArgument);
    CHECK(seen_w == 10000);
    CHECK(seen_h == 10000);
    // Without the check, the decoder reads the data and fails on them.
    CHECK_THROWS_AS(mscli::decode_rgb(bomb, "b.png", 0), IoError);
}

TEST_CASE("images: 16-bit PGM (stb_image 2.27 overflowed its buffer converting it to RGB)")
{
    const std::string pgm = std::string("P5 2 1 65535\n") + std::string("\x00\x01\xff\xff", 4);
    const mscli::RgbImage img = mscli::decode_rgb(pgm, "16.pgm");
    REQUIRE(img.width == 2);
    CHECK(img.pixels == std::vector<std::uint8_t>{0, 0, 0, 255, 255, 255});
}

TEST_CASE("regressions found by the fuzz targets (fuzz/regressions/)")
{
    // NPY: a shape that is not a tuple threw std::out_of_range from substr().
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': ,1, }";
    std::string npy("\x93NUMPY\x01\x00", 8);
    npy.push_back(static_cast<char>(dict.size()));
    npy.push_back(0);
    npy += dict;
    CHECK_THROWS_WITH_AS(mscli::parse_npy(npy, "s.npy"),
                         "s.npy: malformed NPY header at byte 50 of the header: 'shape' must be a tuple such as (3, 2)",
                         IoError);
    // JPEG: a Huffman table whose 16 code counts add up to more than 256 made stb_image 2.27 write
    // past its code-length array.
    std::string jpg("\xff\xd8\xff\xc4\x00\x23\x00", 7);
    jpg += std::string(16, '\x20') + std::string(64, '\0');
    int w = 0, h = 0;
    CHECK(mscli::declared_size_problem(jpg, w, h) ==
          "JPEG Huffman table at byte 6 declares 512 codes, more than the 256 a table can have: corrupt file");
    CHECK_THROWS_WITH_AS(mscli::decode_rgb(jpg, "h.jpg"), doctest::Contains("h.jpg: JPEG Huffman table"), IoError);
    // stb_image also accepts 0xFF fill bytes before SOI, so the check must find such files too.
    CHECK(mscli::declared_size_problem("\xff\xff" + jpg, w, h).find("JPEG Huffman table at byte 8") == 0);
}

TEST_CASE("PNG with a zero-length IDAT chunk decodes (stb_image 2.27 memcpy'd from a null buffer)")
{
    mscli::RgbImage img;
    img.width = 2;
    img.height = 1;
    img.pixels = {1, 2, 3, 4, 5, 6};
    const std::string png = mscli::png_bytes(img);
    const std::size_t idat = png.find("IDAT") - 4;
    const std::string with_empty = png.substr(0, idat) + std::string("\0\0\0\0IDAT\0\0\0\0", 12) + png.substr(idat);
    CHECK(mscli::decode_rgb(with_empty, "e.png").pixels == img.pixels);
}

TEST_CASE("OutputFiles: inputs refused as outputs, all or nothing, permissions kept")
{
    const std::string in = temp_path("of-in.csv");
    write_text(in, "1,2\n");
    {
        mscli::OutputFiles files;
        files.add_input(in, "the input");
        CHECK_THROWS_WITH_AS(
            files.add_output(in, "-o"),
            ("refusing to write " + in + " (-o): it is the input " + in + ", which would be lost").c_str(), IoError);
        const std::string dotted = std::string(MSCLI_TEST_TMP) + "/./of-in.csv";
        CHECK_THROWS_WITH_AS(files.add_output(dotted, "--modes"), doctest::Contains("(the same file)"), IoError);
    }
    // The second output cannot be renamed (a folder appeared there): nothing is written.
    const std::string a = temp_path("of-a.csv"), b = temp_path("of-b.csv");
    std::remove(a.c_str());
    ::rmdir(b.c_str());
    {
        mscli::OutputFiles files;
        files.set(files.add_output(a, "-o"), "labels\n");
        files.set(files.add_output(b, "--modes"), "modes\n");
        REQUIRE(::mkdir(b.c_str(), 0755) == 0);
        CHECK_THROWS_WITH_AS(files.commit(), doctest::Contains("no output file was created or changed"), IoError);
    }
    struct stat st {};
    CHECK(::stat(a.c_str(), &st) != 0);  // the first output was rolled back
    ::rmdir(b.c_str());
    // An existing output keeps its permissions.
    write_text(a, "old");
    ::chmod(a.c_str(), 0640);
    mscli::write_file_atomically(a, "new");
    CHECK(mscli::read_file(a) == "new");
    REQUIRE(::stat(a.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0640);
}

TEST_CASE("OutputFiles: a failed rename puts the earlier outputs back as they were (audit 26, item 8)")
{
    // -o existed with old contents; --modes cannot be renamed (a folder appeared there): the old
    // -o is restored from its backup (the audit's run left it replaced).
    const std::string a = temp_path("pb-a.csv"), b = temp_path("pb-b.csv");
    write_text(a, "old labels\n");
    ::rmdir(b.c_str());
    {
        mscli::OutputFiles files;
        files.set(files.add_output(a, "-o"), "new labels\n");
        files.set(files.add_output(b, "--modes"), "modes\n");
        files.prepare();
        REQUIRE(::mkdir(b.c_str(), 0755) == 0);
        CHECK_THROWS_WITH_AS(files.publish(), doctest::Contains("; no output file was created or changed"), IoError);
    }
    CHECK(mscli::read_file(a) == "old labels\n");
    ::rmdir(b.c_str());
}

TEST_CASE("OutputFiles: a set is published under the target folder's lock (audit 26, item 8)")
{
    // Another run holds the folder's lock while it renames its set: ours waits, so the two sets
    // are never interleaved.
    const std::string dir = temp_path("locked");
    ::mkdir(dir.c_str(), 0755);
    const std::string a = dir + "/l.csv", b = dir + "/m.csv";
    std::remove(a.c_str());
    std::remove(b.c_str());
    mscli::OutputFiles files;
    files.set(files.add_output(a, "-o"), "labels\n");
    files.set(files.add_output(b, "--modes"), "modes\n");
    files.prepare();
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX) == 0);
    std::atomic<bool> done{false}, failed{false};
    std::thread publisher([&] {
        try {
            files.publish();
        } catch (...) {
            failed = true;
        }
        done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    struct stat st {};
    CHECK(!done);
    CHECK(::stat(a.c_str(), &st) != 0);  // nothing published while the lock is held
    ::close(fd);  // releases the lock
    publisher.join();
    CHECK(done);
    CHECK(!failed);
    CHECK(mscli::read_file(a) == "labels\n");
    CHECK(mscli::read_file(b) == "modes\n");
}

TEST_CASE("OutputFiles: a symbolic link to a file that does not exist yet is followed (audit 26, item 12)")
{
    const std::string link = temp_path("dangling.csv"), target = temp_path("dangling-target.csv");
    std::remove(link.c_str());
    std::remove(target.c_str());
    REQUIRE(::symlink("dangling-target.csv", link.c_str()) == 0);  // relative to the link's folder
    mscli::write_file_atomically(link, "x\n");
    struct stat st {};
    REQUIRE(::lstat(link.c_str(), &st) == 0);
    CHECK(S_ISLNK(st.st_mode));  // still a link
    CHECK(mscli::read_file(target) == "x\n");
    std::remove(link.c_str());
    std::remove(target.c_str());
}

namespace {

std::string test_file(const char* name)
{
    return mscli::read_file(std::string(MSCLI_TEST_DATA) + "/" + name);
}

// Largest channel difference from the 32 x 16 gradient the test JPEGs were made from
// (R = 8x, G = 16y, B = 255 - 8x; written by OpenCV at quality 95).
int gradient_error(const mscli::RgbImage& img)
{
    int worst = 0;
    for (int y = 0; y < img.height; ++y)
        for (int x = 0; x < img.width; ++x) {
            const int want[3] = {8 * x, 16 * y, 255 - 8 * x};
            for (int c = 0; c < 3; ++c)
                worst = std::max(worst,
                                 std::abs(img.pixels[(static_cast<std::size_t>(y) * img.width + x) * 3 + c] - want[c]));
        }
    return worst;
}

}  // namespace

TEST_CASE("images: JPEG (baseline and progressive) and 16-bit grey PNG decode to the picture they hold")
{
    for (const char* name : {"gradient-32x16.jpg", "gradient-32x16-progressive.jpg"}) {
        CAPTURE(name);
        int seen_w = 0, seen_h = 0;
        const mscli::RgbImage img = mscli::decode_rgb(test_file(name), name, 0, [&](int w, int h) {
            seen_w = w;
            seen_h = h;
        });
        CHECK(seen_w == 32);  // the size check ran, with the header's size
        CHECK(seen_h == 16);
        REQUIRE(img.width == 32);
        REQUIRE(img.height == 16);
        CHECK(gradient_error(img) <= 10);  // JPEG at quality 95 (OpenCV's decoder: 8)
    }
    // 16-bit grey, value 257 * 8x: every decoder gives the high byte, 8x, in all three channels.
    const mscli::RgbImage grey = mscli::decode_rgb(test_file("grey16-32x16.png"), "g.png");
    REQUIRE(grey.width == 32);
    for (int x = 0; x < 32; ++x)
        for (int c = 0; c < 3; ++c) CHECK(grey.pixels[(5 * 32 + x) * 3 + c] == 8 * x);
}

TEST_CASE("images: PNG round trip is exact; a cut JPEG or a PNG with a bad CRC is an error, not a picture")
{
    mscli::RgbImage img;
    img.width = 97;
    img.height = 31;
    img.pixels.resize(img.count() * 3);
    unsigned state = 12345;
    for (auto& p : img.pixels) p = static_cast<std::uint8_t>((state = state * 1103515245u + 12345u) >> 24);
    const std::string png = mscli::png_bytes(img);
    CHECK(mscli::decode_rgb(png, "r.png").pixels == img.pixels);

    const std::string summary = mscli::image_codecs_summary();
    CHECK(summary.find("PNG: ") == 0);
    if (summary.find("libjpeg") != std::string::npos) {
        // libjpeg fills a file that ends early with grey; the tool refuses it.
        const std::string jpg = test_file("gradient-32x16.jpg");
        const std::size_t scan = jpg.find("\xff\xda");  // SOS: cut half-way through the scan's data
        REQUIRE(scan != std::string::npos);
        CHECK_THROWS_WITH_AS(mscli::decode_rgb(jpg.substr(0, (scan + jpg.size()) / 2), "cut.jpg"),
                             doctest::Contains("cut.jpg: cannot read image (Premature end of JPEG file: the image data "
                                               "after the header are truncated or corrupt)"),
                             IoError);
    }
    if (summary.find("libspng") != std::string::npos) {
        std::string bad = png;
        const std::size_t idat = bad.find("IDAT");
        bad[idat + 6] = static_cast<char>(bad[idat + 6] ^ 0x40);  // a byte of the compressed data
        CHECK_THROWS_WITH_AS(mscli::decode_rgb(bad, "crc.png"), doctest::Contains("crc.png: cannot read image ("),
                             IoError);
    }
}

TEST_CASE("colour: the image conversions on threads give the per-pixel functions' values")
{
    const std::size_t n = 200000;  // several slices of 2^16 pixels
    std::vector<std::uint8_t> rgb(n * 3);
    for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 13);
    for (std::size_t i = n / 2; i < n; ++i)  // repeated colours too (the conversion caches them)
        for (int c = 0; c < 3; ++c) rgb[3 * i + c] = rgb[3 * ((i * 7) % 1000) + c];
    std::vector<float> lab(n * 3);
    mscli::srgb_to_lab_pixels(rgb.data(), n, lab.data(), 3);
    std::vector<std::uint8_t> back(n * 3);
    mscli::lab_to_srgb_pixels(lab.data(), n, back.data(), 0);
    for (std::size_t i = 0; i < n; i += 97) {
        float one[3];
        mscli::srgb_to_lab(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2], one);
        CHECK(std::memcmp(one, &lab[3 * i], sizeof one) == 0);
    }
    CHECK(back == rgb);  // lab_to_srgb inverts srgb_to_lab exactly on 8-bit colours
}
