#pragma once
/// @file io_image.hpp
/// Image reading/writing (stb_image, stb_image_write) and area-averaging downscaling
/// (stb_image_resize, box filter in linear light) for `meanshift segment`.

#include <cstdint>
#include <string>
#include <vector>

namespace mscli {

/// 8-bit RGB image, row-major, 3 bytes per pixel.
struct RgbImage {
    int width = 0;
    int height = 0;
    std::vector<std::uint8_t> pixels;
    std::size_t count() const { return static_cast<std::size_t>(width) * static_cast<std::size_t>(height); }
};

/// Loads JPEG, PNG, BMP, TGA, GIF (first frame), PSD, PNM; grey or RGBA inputs become RGB.
/// Throws meanshift::IoError with stb's reason on failure.
RgbImage load_rgb(const std::string& path);

/// Writes a PNG (8-bit RGB). Throws IoError on failure.
void write_png(const std::string& path, const RgbImage& image);

/// Size with at most `max_pixels` pixels and the same aspect ratio (unchanged if it already fits
/// or max_pixels == 0).
void fitted_size(int width, int height, long long max_pixels, int& out_width, int& out_height);

/// Area-averaging downscale to out_width × out_height (averages in linear light).
RgbImage downscale_area(const RgbImage& image, int out_width, int out_height);

}  // namespace mscli
