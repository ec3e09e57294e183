#include "io_image.hpp"

#include "io_matrix.hpp"
#include "output_files.hpp"

#include <meanshift/errors.hpp>

#include <stb_image.h>
#include <stb_image_resize.h>
#include <stb_image_write.h>

#include <algorithm>
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
std::uint32_t le32(const std::string& b, std::size_t at) { return le16(b, at) | le16(b, at + 2) << 16; }
std::uint32_t be16(const std::string& b, std::size_t at)
{
    return static_cast<std::uint32_t>(static_cast<unsigned char>(b[at])) << 8 | static_cast<unsigned char>(b[at + 1]);
}
std::uint32_t be32(const std::string& b, std::size_t at) { return be16(b, at) << 16 | be16(b, at + 2); }

bool starts_with(const std::string& b, const char* magic, std::size_t len)
{
    return b.size() >= len && std::memcmp(b.data(), magic, len) == 0;
}

std::string num(unsigned long long v) { return std::to_string(v); }

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

std::string exact_rule(const char* format, unsigned long long w, unsigned long long h, std::size_t have,
                       unsigned long long need)
{
    if (need <= have) return {};
    return "the header declares " + num(w) + " x " + num(h) + " pixels, " + num(need) + " bytes of " + format +
           " pixel data, but the file has only " + num(have) + " after the header: truncated or corrupt file";
}

// Binary PNM (P5, P6) as stb_image reads it: magic, then width, height and maxval separated by
// whitespace and '#' comments, then one whitespace byte, then the raster.
std::string pnm_problem(const std::string& b, int& width, int& height)
{
    std::size_t i = 2;
    const int channels = b[1] == '6' ? 3 : 1;
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
            if (i - start >= 9) return "PNM header: a number has more than 9 digits";
            v[f] = v[f] * 10 + static_cast<unsigned>(b[i] - '0');
            ++i;
        }
        if (i == start) return {};  // not a header we understand: stb_image decides
    }
    ++i;  // the single whitespace byte after maxval
    if (v[0] > INT_MAX || v[1] > INT_MAX) return "PNM header: width or height too large";
    width = static_cast<int>(v[0]);
    height = static_cast<int>(v[1]);
    const unsigned long long bytes_per_sample = v[2] > 255 ? 2 : 1;
    const std::size_t have = i <= b.size() ? b.size() - i : 0;
    return exact_rule(channels == 3 ? "PPM" : "PGM", v[0], v[1], have,
                      v[0] * v[1] * static_cast<unsigned long long>(channels) * bytes_per_sample);
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

}  // namespace

std::string declared_size_problem(const std::string& b, int& width, int& height)
{
    width = height = 0;
    const std::size_t size = b.size();
    if (starts_with(b, "P5", 2) || starts_with(b, "P6", 2)) return pnm_problem(b, width, height);
    if (starts_with(b, "BM", 2)) return bmp_problem(b, width, height);
    if (starts_with(b, "\x89PNG\r\n\x1a\n", 8) && size >= 24) {
        const unsigned long long w = be32(b, 16), h = be32(b, 20);
        if (w > INT_MAX || h > INT_MAX) return "PNG header: width or height too large";
        width = static_cast<int>(w);
        height = static_cast<int>(h);
        // deflate expands at most 1032:1 and a 1-bit pixel is 1/8 byte: 8,256 pixels per byte.
        return ratio_rule("PNG", w, h, size, 8256);
    }
    if (starts_with(b, "GIF87a", 6) || starts_with(b, "GIF89a", 6)) {
        if (size < 10) return {};
        const unsigned long long w = le16(b, 6), h = le16(b, 8);
        width = static_cast<int>(w);
        height = static_cast<int>(h);
        return ratio_rule("GIF", w, h, size, 4096);  // a 12-bit LZW code stands for at most 4,096 pixels
    }
    if (starts_with(b, "\xff\xd8", 2)) {
        // Find the frame header (SOF0-SOF15 except DHT, JPG, DAC) by walking the marker segments.
        std::size_t i = 2;
        while (i + 4 <= size) {
            if (static_cast<unsigned char>(b[i]) != 0xFF) return {};
            const unsigned marker = static_cast<unsigned char>(b[i + 1]);
            if (marker == 0xFF) {
                ++i;
                continue;
            }
            const std::size_t len = be16(b, i + 2);
            if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
                if (i + 9 > size) return {};
                const unsigned long long h = be16(b, i + 5), w = be16(b, i + 7);
                width = static_cast<int>(w);
                height = static_cast<int>(h);
                // Every 8 x 8 block of the full-resolution component costs at least one bit.
                return ratio_rule("JPEG", w, h, size, 512);
            }
            if (marker == 0xD9 || marker == 0xDA) return {};
            i += 2 + len;
        }
        return {};
    }
    if (starts_with(b, "8BPS", 4) && size >= 26) {
        const unsigned long long h = be32(b, 14), w = be32(b, 18);
        if (w > INT_MAX || h > INT_MAX) return "PSD header: width or height too large";
        width = static_cast<int>(w);
        height = static_cast<int>(h);
        return ratio_rule("PSD", w, h, size, 128);
    }
    if (starts_with(b, "#?RADIANCE", 10) || starts_with(b, "#?RGBE", 6) ||
        starts_with(b, "\x53\x80\xf6\x34", 4)) {
        int w = 0, h = 0, comp = 0;
        if (size > INT_MAX || !stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(b.data()),
                                                     static_cast<int>(size), &w, &h, &comp))
            return {};
        width = w;
        height = h;
        return ratio_rule(b[0] == '#' ? "HDR" : "PIC", static_cast<unsigned long long>(w),
                          static_cast<unsigned long long>(h), size, 128);
    }
    return tga_problem(b, width, height);
}

RgbImage load_rgb(const std::string& path, long long max_pixels)
{
    return decode_rgb(read_file(path), path, max_pixels);
}

RgbImage decode_rgb(const std::string& bytes, const std::string& path, long long max_pixels)
{
    if (bytes.empty()) throw meanshift::IoError(path + ": empty file, not an image");
    if (bytes.size() > static_cast<std::size_t>(INT_MAX))
        throw meanshift::IoError(path + ": " + std::to_string(bytes.size()) +
                                 " bytes is more than the image decoder reads (2 GiB)");
    const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
    const int len = static_cast<int>(bytes.size());

    // 1. Our own reading of the header against the file size (before stb_image, whose readers
    //    fill missing pixels and whose PNM number parser overflows on long numbers).
    int w = 0, h = 0;
    const std::string problem = declared_size_problem(bytes, w, h);
    if (!problem.empty()) throw meanshift::IoError(path + ": " + problem);

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
    if (w <= 0 || h <= 0)
        throw meanshift::IoError(path + ": the image is " + std::to_string(w) + " x " + std::to_string(h) +
                                 " pixels (zero width or height)");
    const long long pixels = static_cast<long long>(w) * h;
    if (max_pixels > 0 && pixels > max_pixels)
        throw meanshift::IoError(path + ": the image is " + std::to_string(w) + " x " + std::to_string(h) + " = " +
                                 std::to_string(pixels) + " pixels, more than the limit of " +
                                 std::to_string(max_pixels) + " (raise it with --max-image-pixels N)");

    // 3. Decoding.
    int dw = 0, dh = 0, channels = 0;
    std::unique_ptr<unsigned char, void (*)(void*)> pixels_rgb(
        stbi_load_from_memory(data, len, &dw, &dh, &channels, 3), stbi_image_free);
    if (!pixels_rgb) {
        const char* why = stbi_failure_reason();
        throw meanshift::IoError(path + ": cannot read image (" +
                                 (why && *why ? std::string(why) : std::string("the decoder gave no reason")) + ")");
    }
    if (dw != w || dh != h)
        throw meanshift::IoError(path + ": the decoded image is " + std::to_string(dw) + " x " + std::to_string(dh) +
                                 " pixels, but its header says " + std::to_string(w) + " x " + std::to_string(h));
    RgbImage img;
    img.width = dw;
    img.height = dh;
    img.pixels.assign(pixels_rgb.get(), pixels_rgb.get() + img.count() * 3);
    return img;
}

std::string png_bytes(const RgbImage& image)
{
    if (image.width <= 0 || image.height <= 0) throw meanshift::IoError("cannot encode an empty image as PNG");
    std::string out;
    auto append = [](void* context, void* data, int size) {
        static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
    };
    if (!stbi_write_png_to_func(append, &out, image.width, image.height, 3, image.pixels.data(), image.width * 3))
        throw meanshift::IoError("PNG encoding failed (out of memory?)");
    return out;
}

void write_png(const std::string& path, const RgbImage& image) { write_file_atomically(path, png_bytes(image)); }

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
        if (out_width >= out_height) --out_width; else --out_height;  // floor rounding can still overshoot by one row
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
    if (!stbir_resize_uint8_generic(image.pixels.data(), image.width, image.height, image.width * 3,
                                    out.pixels.data(), out_width, out_height, out_width * 3, 3,
                                    STBIR_ALPHA_CHANNEL_NONE, 0, STBIR_EDGE_CLAMP, STBIR_FILTER_BOX,
                                    STBIR_COLORSPACE_SRGB, nullptr))
        throw meanshift::IoError("image downscaling failed (out of memory?)");
    return out;
}

}  // namespace mscli
