#include "io_image.hpp"

#include <meanshift/errors.hpp>

#include <stb_image.h>
#include <stb_image_resize.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <memory>

namespace mscli {

RgbImage load_rgb(const std::string& path)
{
    int w = 0, h = 0, channels = 0;
    std::unique_ptr<unsigned char, void (*)(void*)> data(stbi_load(path.c_str(), &w, &h, &channels, 3),
                                                          stbi_image_free);
    if (!data) {
        const char* why = stbi_failure_reason();
        throw meanshift::IoError(path + ": cannot read image (" + (why ? why : "unknown reason") + ")");
    }
    RgbImage img;
    img.width = w;
    img.height = h;
    img.pixels.assign(data.get(), data.get() + img.count() * 3);
    return img;
}

void write_png(const std::string& path, const RgbImage& image)
{
    if (image.width <= 0 || image.height <= 0) throw meanshift::IoError(path + ": empty image");
    if (!stbi_write_png(path.c_str(), image.width, image.height, 3, image.pixels.data(), image.width * 3))
        throw meanshift::IoError(path + ": cannot write PNG");
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
