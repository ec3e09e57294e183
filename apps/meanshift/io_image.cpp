#include "io_image.hpp"

#include "image_codecs.hpp"
#include "io_matrix.hpp"
#include "output_files.hpp"

#include <meanshift/errors.hpp>

#include <stb_image.h>
#include <stb_image_resize.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace mscli {
namespace {

using meanshift::IoError;

std::uint32_t le16(const std::string& b, std::size_t at)
{
    return static_cast<unsigned char>(b[at]) | static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8;
}
std::uint32_t le32(const std::string& b, std::size_t at)
{
    return le16(b, at) | le16(b, at + 2) << 16;
}
std::uint32_t be16(const std::string& b, std::size_t at)
{
    return static_cast<std::uint32_t>(static_cast<unsigned char>(b[at])) << 8 | static_cast<unsigned char>(b[at + 1]);
}
std::uint32_t be32(const std::string& b, std::size_t at)
{
    return be16(b, at) << 16 | be16(b, at + 2);
}

bool starts_with(const std::string& b, const char* magic, std::size_t len)
{
    return b.size() >= len && std::memcmp(b.data(), magic, len) == 0;
}

std::string num(unsigned long long v)
{
    return std::to_string(v);
}

// "declares W x H pixels, but ..." for compressed formats: at most `per_byte` pixels per byte.
std::string ratio_rule(const char* format, unsigned long long w, unsigned long long h, std::size_t size,
                       unsigned long long per_byte)
{
    const unsigned long long limit = static_cast<unsigned long long>(size) * per_byte;
    if (w * h <= limit) return {};
    return "the header declares " + num(w) + " x " + num(h) + " pixels, but a " + format + " file of " + num(size) +
           " bytes can hold at most " + num(limit) + " (" + num(per_byte) +
           " per byte at the best possible compression): truncated or corrupt file";
}

// The message docs/cli.md promises for a header that declares no pixels (stb_image's own readers
// refuse it as "unknown image type" after trying every format).
std::string zero_size(unsigned long long w, unsigned long long h)
{
    if (w != 0 && h != 0) return {};
    return "the image is " + num(w) + " x " + num(h) + " pixels (zero width or height)";
}

std::string exact_rule(const char* format, unsigned long long w, unsigned long long h, std::size_t have,
                       unsigned long long need)
{
    if (need <= have) return {};
    return "the header declares " + num(w) + " x " + num(h) + " pixels, " + num(need) + " bytes of " + format +
           " pixel data, but the file has only " + num(have) + " after the header: truncated or corrupt file";
}

// Binary PNM (P5 grey, P6 RGB): magic, then width, height and maxval separated by whitespace and
// '#' comments, then one whitespace byte, then the raster (16-bit big-endian samples if maxval >
// 255). Read here, not by stb_image 2.27, which reads 16-bit samples in the host's byte order,
// does not scale by maxval and overflows an int on long numbers.
struct PnmHeader {
    unsigned long long width = 0, height = 0, maxval = 0;
    int channels = 1;
    std::size_t data_offset = 0;
};

std::string parse_pnm(const std::string& b, PnmHeader& hd)
{
    std::size_t i = 2;
    hd.channels = b[1] == '6' ? 3 : 1;
    const char* names[3] = {"width", "height", "maximum value"};
    unsigned long long v[3] = {0, 0, 0};
    for (int f = 0; f < 3; ++f) {
        for (;;) {
            while (i < b.size() && b[i] != '\0' && std::strchr(" \t\n\v\f\r", b[i])) ++i;
            if (i < b.size() && b[i] == '#') {
                while (i < b.size() && b[i] != '\n' && b[i] != '\r') ++i;
                continue;
            }
            break;
        }
        const std::size_t start = i;
        while (i < b.size() && b[i] >= '0' && b[i] <= '9') {
            if (i - start >= 9) return std::string("PNM header: the ") + names[f] + " has more than 9 digits";
            v[f] = v[f] * 10 + static_cast<unsigned>(b[i] - '0');
            ++i;
        }
        if (i == start) return std::string("PNM header: no ") + names[f] + " (a decimal number) at byte " + num(i);
    }
    if (i >= b.size()) return "PNM header: no whitespace byte after the maximum value";
    ++i;  // the single whitespace byte after maxval
    if (v[0] > INT_MAX || v[1] > INT_MAX) return "PNM header: width or height too large";
    if (v[2] == 0 || v[2] > 65535) return "PNM header: the maximum value " + num(v[2]) + " is not in 1..65535";
    hd.width = v[0];
    hd.height = v[1];
    hd.maxval = v[2];
    hd.data_offset = i;
    return {};
}

std::string pnm_problem(const std::string& b, int& width, int& height)
{
    PnmHeader hd;
    const std::string problem = parse_pnm(b, hd);
    if (!problem.empty()) return problem;
    width = static_cast<int>(hd.width);
    height = static_cast<int>(hd.height);
    if (!zero_size(hd.width, hd.height).empty()) return zero_size(hd.width, hd.height);
    const unsigned long long bytes_per_sample = hd.maxval > 255 ? 2 : 1;
    return exact_rule(hd.channels == 3 ? "PPM" : "PGM", hd.width, hd.height, b.size() - hd.data_offset,
                      hd.width * hd.height * static_cast<unsigned long long>(hd.channels) * bytes_per_sample);
}

// Called after pnm_problem() found the header consistent with the file size.
RgbImage decode_pnm(const std::string& b)
{
    PnmHeader hd;
    parse_pnm(b, hd);
    RgbImage img;
    img.width = static_cast<int>(hd.width);
    img.height = static_cast<int>(hd.height);
    img.pixels.resize(img.count() * 3);
    const auto* p = reinterpret_cast<const unsigned char*>(b.data()) + hd.data_offset;
    const bool wide = hd.maxval > 255;
    const double scale = 255.0 / static_cast<double>(hd.maxval);
    for (std::size_t i = 0; i < img.count(); ++i) {
        for (int c = 0; c < 3; ++c) {
            const std::size_t sample = i * static_cast<std::size_t>(hd.channels) + (hd.channels == 3 ? c : 0);
            unsigned v = wide ? (static_cast<unsigned>(p[2 * sample]) << 8 | p[2 * sample + 1]) : p[sample];
            if (v > hd.maxval) v = static_cast<unsigned>(hd.maxval);  // out-of-range samples are clamped
            img.pixels[i * 3 + static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(std::lround(v * scale));
        }
    }
    return img;
}

std::string bmp_problem(const std::string& b, int& width, int& height)
{
    if (b.size() < 26) return {};
    const std::uint32_t hsz = le32(b, 14);
    unsigned long long w, h, bpp, compression = 0;
    if (hsz == 12) {
        w = le16(b, 18);
        h = le16(b, 20);
        bpp = le16(b, 24);
    } else {
        if (b.size() < 34) return {};
        const auto sw = static_cast<std::int32_t>(le32(b, 18));
        const auto sh = static_cast<std::int32_t>(le32(b, 22));
        w = static_cast<unsigned long long>(std::llabs(static_cast<long long>(sw)));
        h = static_cast<unsigned long long>(std::llabs(static_cast<long long>(sh)));
        bpp = le16(b, 28);
        compression = le32(b, 30);
    }
    if (w > INT_MAX || h > INT_MAX) return "BMP header: width or height too large";
    width = static_cast<int>(w);
    height = static_cast<int>(h);
    if (!zero_size(w, h).empty()) return zero_size(w, h);
    if (compression != 0 && compression != 3 && compression != 6) return {};  // stb_image decides
    if (bpp == 0 || bpp > 32 || w == 0 || h == 0) return {};
    const unsigned long long row = (w * bpp + 31) / 32 * 4;
    const unsigned long long last = (w * bpp + 7) / 8;  // the last row's padding may be missing
    const std::size_t headers = 14 + static_cast<std::size_t>(hsz);
    const std::size_t have = b.size() > headers ? b.size() - headers : 0;
    return exact_rule("BMP", w, h, have, row * (h - 1) + last);
}

// TGA has no magic number; only headers that stb_image's TGA test would accept are checked.
std::string tga_problem(const std::string& b, int& width, int& height)
{
    if (b.size() < 18) return {};
    const unsigned id_len = static_cast<unsigned char>(b[0]);
    const unsigned cmap_type = static_cast<unsigned char>(b[1]);
    const unsigned type = static_cast<unsigned char>(b[2]);
    if (cmap_type > 1) return {};
    if (type != 1 && type != 2 && type != 3 && type != 9 && type != 10 && type != 11) return {};
    const unsigned long long cmap_len = le16(b, 5);
    const unsigned cmap_bits = static_cast<unsigned char>(b[7]);
    const unsigned long long w = le16(b, 12), h = le16(b, 14);
    const unsigned bits = static_cast<unsigned char>(b[16]);
    if (w == 0 || h == 0 || bits == 0) return {};
    width = static_cast<int>(w);
    height = static_cast<int>(h);
    const unsigned long long bytes_pp = (bits + 7) / 8;
    const unsigned long long headers = 18ull + id_len + (cmap_type ? cmap_len * ((cmap_bits + 7) / 8) : 0);
    const std::size_t have = b.size() > headers ? b.size() - static_cast<std::size_t>(headers) : 0;
    if (type < 9) return exact_rule("TGA", w, h, have, w * h * bytes_pp);
    // Run-length: a packet of 1 + bytes_pp bytes covers at most 128 pixels.
    if (w * h > have / (1 + bytes_pp) * 128)
        return "the header declares " + num(w) + " x " + num(h) + " pixels, but a run-length TGA file of " +
               num(b.size()) + " bytes can hold at most " + num(have / (1 + bytes_pp) * 128) +
               ": truncated or corrupt file";
    return {};
}

// JPEG: walks the marker segments the way stb_image finds them (junk bytes and 0xFF fill skipped,
// entropy-coded data after SOS skipped up to the next marker). Checks the frame size against the
// file size, and every Huffman table: stb_image 2.27 writes past its 257-entry code-length array
// when a table's 16 code counts add up to more than 256 (found by fuzz_image).
// PNG: every chunk up to IEND must fit in the file (stb_image 2.27 allocates an IDAT chunk's
// declared length before reading it: 2 GiB for an 81-byte file, found by fuzz_image), and the
// image's raw scanlines (a filter byte per row plus the packed samples) can be at most 1032 times
// the compressed IDAT bytes, deflate's best ratio.
std::string png_problem(const std::string& b, int& width, int& height)
{
    const std::size_t size = b.size();
    if (size < 33 || b.compare(12, 4, "IHDR") != 0) return {};  // stb_image reports it
    const unsigned long long w = be32(b, 16), h = be32(b, 20);
    if (w > INT_MAX || h > INT_MAX) return "PNG header: width or height too large";
    width = static_cast<int>(w);
    height = static_cast<int>(h);
    const unsigned depth = static_cast<unsigned char>(b[24]);
    const unsigned colour = static_cast<unsigned char>(b[25]);
    const unsigned channels = colour == 2 ? 3 : colour == 4 ? 2 : colour == 6 ? 4 : 1;
    if (!zero_size(w, h).empty()) return zero_size(w, h);
    unsigned long long idat = 0;
    std::size_t pos = 8;
    bool iend = false;
    while (pos + 8 <= size) {
        const unsigned long long len = be32(b, pos);
        const std::string type = b.substr(pos + 4, 4);
        if (len + 12 > size - pos)
            return "PNG chunk at byte " + num(pos) + " declares " + num(len) +
                   " bytes of data, but the file has only " + num(size - pos >= 12 ? size - pos - 12 : 0) +
                   " left: truncated or corrupt file";
        if (type == "IDAT") idat += len;
        pos += static_cast<std::size_t>(12 + len);
        if (type == "IEND") {
            iend = true;
            break;
        }
    }
    if (depth >= 1 && depth <= 16) {  // else stb_image reports it
        const unsigned long long row = 1 + (w * depth * channels + 7) / 8;
        const unsigned long long limit = 1032 * idat + 1032;
        if (h > limit / row)
            return "the header declares " + num(w) + " x " + num(h) + " pixels, " + num(row) + " x " + num(h) +
                   " bytes of scanlines, but " + num(idat) + " bytes of compressed image data can hold at most " +
                   num(limit) + " (deflate expands at most 1032:1): truncated or corrupt file";
    }
    // Every PNG ends with an IEND chunk: without it the file was cut (stb_image then reads the
    // bytes that are left as a chunk header and quotes them as a chunk type).
    if (!iend)
        return "the PNG file ends at byte " + num(size) + (pos < size ? " inside a chunk header" : "") +
               ", before its IEND chunk: truncated file";
    return {};
}

// A PNG without its zero-length IDAT chunks (they carry no data). stb_image 2.27 passes a null
// buffer to memcpy for a zero-length first IDAT (undefined behaviour, found by fuzz_image).
// Called after png_problem() checked that every chunk fits in the file.
std::string without_empty_idat(const std::string& b)
{
    std::string out = b.substr(0, 8);
    std::size_t pos = 8;
    bool dropped = false;
    while (pos + 12 <= b.size()) {
        const std::size_t len = be32(b, pos);
        const bool empty_idat = len == 0 && b.compare(pos + 4, 4, "IDAT") == 0;
        if (empty_idat)
            dropped = true;
        else
            out.append(b, pos, 12 + len);
        if (b.compare(pos + 4, 4, "IEND") == 0) break;
        pos += 12 + len;
    }
    if (!dropped) return b;
    if (pos + 12 <= b.size()) pos += 12 + be32(b, pos);  // after IEND
    if (pos < b.size()) out.append(b, pos, std::string::npos);
    return out;
}

// stb_image accepts any number of 0xFF fill bytes before the SOI marker (FF D8).
bool is_jpeg(const std::string& b)
{
    std::size_t i = 0;
    while (i < b.size() && static_cast<unsigned char>(b[i]) == 0xFF) ++i;
    return i >= 1 && i < b.size() && static_cast<unsigned char>(b[i]) == 0xD8;
}

std::string jpeg_problem(const std::string& b, int& width, int& height)
{
    const std::size_t size = b.size();
    auto byte = [&](std::size_t at) -> unsigned { return at < size ? static_cast<unsigned char>(b[at]) : 0u; };
    std::string frame_problem;
    bool have_frame = false;
    std::size_t pos = 0;
    while (pos < size && byte(pos) == 0xFF) ++pos;
    ++pos;  // SOI
    while (pos < size) {
        while (pos < size && byte(pos) != 0xFF) ++pos;
        while (pos < size && byte(pos) == 0xFF) ++pos;
        if (pos >= size) break;
        const unsigned marker = byte(pos++);
        if (marker == 0xD9) break;  // EOI
        if (marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;  // no length
        const std::size_t len = (byte(pos) << 8) | byte(pos + 1);
        if (marker == 0xC4) {  // DHT: tables until the segment length is used up, as stb_image reads them
            long remaining = static_cast<long>(len) - 2;
            std::size_t p = pos + 2;
            while (remaining > 0 && p < size) {
                const unsigned q = byte(p);
                if ((q >> 4) > 1 || (q & 15) > 3) break;  // stb_image rejects the table itself
                unsigned n = 0;
                for (int i = 1; i <= 16; ++i) n += byte(p + static_cast<std::size_t>(i));
                if (n > 256)
                    return "JPEG Huffman table at byte " + num(p) + " declares " + num(n) +
                           " codes, more than the 256 a table can have: corrupt file";
                p += 17 + n;
                remaining -= static_cast<long>(17 + n);
            }
        } else if (!have_frame && marker >= 0xC0 && marker <= 0xCF && marker != 0xC8 && marker != 0xCC) {
            have_frame = true;
            const unsigned long long h = (byte(pos + 3) << 8) | byte(pos + 4);
            const unsigned long long w = (byte(pos + 5) << 8) | byte(pos + 6);
            width = static_cast<int>(w);
            height = static_cast<int>(h);
            if (!zero_size(w, h).empty()) return zero_size(w, h);
            // Every 8 x 8 block of the full-resolution component costs at least one bit.
            frame_problem = ratio_rule("JPEG", w, h, size, 512);
            if (!frame_problem.empty()) return frame_problem;
        }
        pos += len;
        if (marker == 0xDA) {  // entropy-coded data: up to the next marker other than RSTn
            while (pos + 1 < size &&
                   !(byte(pos) == 0xFF && byte(pos + 1) != 0 && !(byte(pos + 1) >= 0xD0 && byte(pos + 1) <= 0xD7)))
                ++pos;
        }
    }
    return {};
}

}  // namespace

std::string declared_size_problem(const std::string& b, int& width, int& height)
{
    width = height = 0;
    const std::size_t size = b.size();
    if (starts_with(b, "P5", 2) || starts_with(b, "P6", 2)) return pnm_problem(b, width, height);
    if (starts_with(b, "BM", 2)) return bmp_problem(b, width, height);
    if (starts_with(b, "\x89PNG\r\n\x1a\n", 8)) return png_problem(b, width, height);
    if (starts_with(b, "GIF87a", 6) || starts_with(b, "GIF89a", 6)) {
        if (size < 10) return {};
        const unsigned long long w = le16(b, 6), h = le16(b, 8);
        width = static_cast<int>(w);
        height = static_cast<int>(h);
        if (!zero_size(w, h).empty()) return zero_size(w, h);
        return ratio_rule("GIF", w, h, size, 4096);  // a 12-bit LZW code stands for at most 4,096 pixels
    }
    if (is_jpeg(b)) return jpeg_problem(b, width, height);
    if (starts_with(b, "8BPS", 4) && size >= 26) {
        const unsigned long long h = be32(b, 14), w = be32(b, 18);
        if (w > INT_MAX || h > INT_MAX) return "PSD header: width or height too large";
        width = static_cast<int>(w);
        height = static_cast<int>(h);
        if (!zero_size(w, h).empty()) return zero_size(w, h);
        return ratio_rule("PSD", w, h, size, 128);
    }
    if (starts_with(b, "#?RADIANCE", 10) || starts_with(b, "#?RGBE", 6) || starts_with(b, "\x53\x80\xf6\x34", 4)) {
        int w = 0, h = 0, comp = 0;
        if (size > INT_MAX ||
            !stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(b.data()), static_cast<int>(size), &w, &h, &comp))
            return {};
        width = w;
        height = h;
        return ratio_rule(b[0] == '#' ? "HDR" : "PIC", static_cast<unsigned long long>(w),
                          static_cast<unsigned long long>(h), size, 128);
    }
    return tga_problem(b, width, height);
}

RgbImage load_rgb(const std::string& path, long long max_pixels, const SizeCheck& before_decoding)
{
    return decode_rgb(read_file(path), path, max_pixels, before_decoding);
}

RgbImage decode_rgb(const std::string& bytes, const std::string& path, long long max_pixels,
                    const SizeCheck& before_decoding)
{
    if (bytes.empty()) throw meanshift::IoError(path + ": empty file, not an image");
    if (bytes.size() > static_cast<std::size_t>(INT_MAX))
        throw meanshift::IoError(path + ": " + std::to_string(bytes.size()) +
                                 " bytes is more than the image decoder reads (2 GiB)");
    const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
    int len = static_cast<int>(bytes.size());

    // 1. Our own reading of the header against the file size (before stb_image, whose readers
    //    fill missing pixels of truncated files).
    int w = 0, h = 0;
    const std::string problem = declared_size_problem(bytes, w, h);
    if (!problem.empty()) throw meanshift::IoError(path + ": " + problem);

    const auto check_dimensions = [&](int width, int height) {
        if (width <= 0 || height <= 0)
            throw meanshift::IoError(path + ": the image is " + std::to_string(width) + " x " + std::to_string(height) +
                                     " pixels (zero width or height)");
        const long long pixels = static_cast<long long>(width) * height;
        if (max_pixels > 0 && pixels > max_pixels)
            throw meanshift::IoError(path + ": the image is " + std::to_string(width) + " x " + std::to_string(height) +
                                     " = " + std::to_string(pixels) + " pixels, more than the limit of " +
                                     std::to_string(max_pixels) + " (raise it with --max-image-pixels N)");
        if (before_decoding) before_decoding(width, height);
    };
    if (starts_with(bytes, "P5", 2) || starts_with(bytes, "P6", 2)) {  // binary PNM: decoded here
        check_dimensions(w, h);
        return decode_pnm(bytes);
    }

    std::string cleaned;
    if (starts_with(bytes, "\x89PNG\r\n\x1a\n", 8)) {
        cleaned = without_empty_idat(bytes);
        if (cleaned.size() != bytes.size()) {
            data = reinterpret_cast<const stbi_uc*>(cleaned.data());
            len = static_cast<int>(cleaned.size());
        }
        // libspng where the build has it (image_codecs.hpp): faster, and no second buffer.
        RgbImage img;
        if (decode_png_fast(cleaned.size() != bytes.size() ? cleaned : bytes, path, check_dimensions, img)) return img;
    } else if (is_jpeg(bytes)) {
        RgbImage img;  // libjpeg-turbo where the build has it, except CMYK/YCCK files
        if (decode_jpeg_fast(bytes, path, check_dimensions, img)) return img;
    }

    // 2. stb_image's header reading: format, size, without decoding.
    int comp = 0;
    if (!stbi_info_from_memory(data, len, &w, &h, &comp)) {
        const char* why = stbi_failure_reason();
        throw meanshift::IoError(path + ": cannot read image (" +
                                 (why && *why ? std::string(why)
                                              : std::string("not a JPEG, PNG, BMP, TGA, GIF, PSD, PNM, HDR or PIC "
                                                            "image, or a corrupt header")) +
                                 ")");
    }
    check_dimensions(w, h);

    // 3. Decoding, in the file's own channel count, expanded to RGB here: stb_image 2.27 converts
    //    16-bit PGM files to RGB with its 8-bit routine and then reads past the end of that buffer
    //    (heap overflow found by fuzz_image, fuzz/regressions/image/; PNM is now decoded by
    //    decode_pnm() anyway), so its channel conversion is not used.
    int dw = 0, dh = 0, channels = 0;
    std::unique_ptr<unsigned char, void (*)(void*)> decoded(stbi_load_from_memory(data, len, &dw, &dh, &channels, 0),
                                                            stbi_image_free);
    if (!decoded) {
        // The header was read (step 2), so the data failed: stb_image's reasons are terse ("bad
        // codelengths", "read past buffer" for a cut deflate stream), hence the plain words after them.
        const std::string why = stbi_failure_reason() ? stbi_failure_reason() : "";
        static const char* const cut_or_corrupt[] = {
            "bad zlib header",   "bad codelengths", "bad huffman code", "read past buffer", "bad dist",   "bad sizes",
            "not enough pixels", "zlib corrupt",    "invalid filter",   "bad DC huff",      "bad AC huff"};
        bool data = why.empty();
        for (const char* r : cut_or_corrupt) data = data || why == r;
        throw meanshift::IoError(path + ": cannot read image (" + why + (why.empty() || !data ? "" : ": ") +
                                 (data ? "the image data after the header are truncated or corrupt" : "") + ")");
    }
    if (dw != w || dh != h)
        throw meanshift::IoError(path + ": the decoded image is " + std::to_string(dw) + " x " + std::to_string(dh) +
                                 " pixels, but its header says " + std::to_string(w) + " x " + std::to_string(h));
    if (channels < 1 || channels > 4)
        throw meanshift::IoError(path + ": the decoder returned " + std::to_string(channels) + " channels");
    RgbImage img;
    img.width = dw;
    img.height = dh;
    img.pixels.resize(img.count() * 3);
    const unsigned char* src = decoded.get();
    for (std::size_t i = 0; i < img.count(); ++i, src += channels) {
        std::uint8_t* dst = &img.pixels[i * 3];
        if (channels < 3) {  // grey, grey + alpha
            dst[0] = dst[1] = dst[2] = src[0];
        } else {  // RGB, RGBA (alpha dropped, as stb_image does)
            dst[0] = src[0];
            dst[1] = src[1];
            dst[2] = src[2];
        }
    }
    return img;
}

std::string png_bytes(const RgbImage& image, PngContent content, int threads)
{
    if (image.width <= 0 || image.height <= 0) throw meanshift::IoError("cannot encode an empty image as PNG");
    std::string out;
    if (encode_png_fast(image, content == PngContent::Flat, out, threads))
        return out;  // libspng at a low zlib level, where the build has it
    auto append = [](void* context, void* data, int size) {
        static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
    };
    if (!stbi_write_png_to_func(append, &out, image.width, image.height, 3, image.pixels.data(), image.width * 3))
        throw meanshift::IoError("PNG encoding failed (out of memory?)");
    return out;
}

void write_png(const std::string& path, const RgbImage& image)
{
    write_file_atomically(path, png_bytes(image));
}

void fitted_size(int width, int height, long long max_pixels, int& out_width, int& out_height)
{
    out_width = width;
    out_height = height;
    const long long pixels = static_cast<long long>(width) * height;
    if (max_pixels <= 0 || pixels <= max_pixels) return;
    const double s = std::sqrt(static_cast<double>(max_pixels) / static_cast<double>(pixels));
    out_width = std::max(1, static_cast<int>(std::floor(width * s)));
    out_height = std::max(1, static_cast<int>(std::floor(height * s)));
    while (static_cast<long long>(out_width) * out_height > max_pixels && (out_width > 1 || out_height > 1)) {
        if (out_width >= out_height)
            --out_width;
        else
            --out_height;  // floor rounding can still overshoot by one row
    }
}

RgbImage downscale_area(const RgbImage& image, int out_width, int out_height)
{
    if (out_width == image.width && out_height == image.height) return image;
    RgbImage out;
    out.width = out_width;
    out.height = out_height;
    out.pixels.resize(out.count() * 3);
    // Box filter = area averaging when shrinking; sRGB colour space makes stb average in linear light.
    if (!stbir_resize_uint8_generic(image.pixels.data(), image.width, image.height, image.width * 3, out.pixels.data(),
                                    out_width, out_height, out_width * 3, 3, STBIR_ALPHA_CHANNEL_NONE, 0,
                                    STBIR_EDGE_CLAMP, STBIR_FILTER_BOX, STBIR_COLORSPACE_SRGB, nullptr))
        throw meanshift::IoError("image downscaling failed (out of memory?)");
    return out;
}

}  // namespace mscli
