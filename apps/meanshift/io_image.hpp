#pragma once
/// @file io_image.hpp
/// Image reading/writing and area-averaging downscaling (stb_image_resize, box filter in linear
/// light) for `meanshift segment`. PNG and JPEG go through libspng and libjpeg-turbo where the build
/// has them (image_codecs.hpp), everything else through stb_image / stb_image_write.

#include <cstdint>
#include <functional>
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

/// Default pixel limit of decode_rgb()/load_rgb() (100 megapixels: 300 MB as 8-bit RGB, twice that
/// while converting). `meanshift segment` derives its default from the memory instead
/// (--max-image-pixels auto, memory.hpp).
constexpr long long kDefaultMaxImagePixels = 100000000;

/// Called with the header's width and height (both > 0, within the pixel limit) before the image
/// is decoded; throws to refuse it (e.g. when decoding and segmenting it would need more memory
/// than the machine has).
using SizeCheck = std::function<void(int width, int height)>;

/// Loads JPEG, PNG, BMP, TGA, GIF (first frame), PSD, HDR, PIC (stb_image) and binary PGM/PPM
/// (P5/P6, 8 or 16 bits, scaled by their maximum value; read by the tool itself); grey or RGBA
/// inputs become RGB. Before decoding, the header's width × height is checked: both > 0, at most `max_pixels`
/// (0 = no limit of ours; stb_image's own limits remain), and no more than the file's bytes can
/// hold (declared_size_problem()). Throws meanshift::IoError naming the file and the rule.
RgbImage load_rgb(const std::string& path, long long max_pixels = kDefaultMaxImagePixels,
                  const SizeCheck& before_decoding = {});
/// The same for an image already in memory; `name` is used in messages.
RgbImage decode_rgb(const std::string& bytes, const std::string& name, long long max_pixels = kDefaultMaxImagePixels,
                    const SizeCheck& before_decoding = {});

/// Checks the header of an image file against the file's size. Uncompressed formats (binary
/// PNM, uncompressed BMP and TGA) must hold every declared pixel; PNG chunks must fit in the file
/// and the raw scanlines may be at most 1032 times the compressed IDAT bytes (deflate's best
/// ratio); other compressed formats may declare at most as many pixels as their best possible
/// compression allows per byte of file (GIF 4,096, JPEG 512, run-length TGA/PSD/HDR/PIC 128);
/// JPEG Huffman tables must have at most 256 codes. Returns an empty string if the header is
/// plausible or the format is not recognised (stb_image decides then), else the reason.
/// Fills `width`/`height` when it parsed them (else leaves them 0).
std::string declared_size_problem(const std::string& bytes, int& width, int& height);

/// What a PNG holds; it decides the scanline filter where libspng writes it (stb_image_write picks
/// its own). Flat: regions of one colour each (the segmented and label images): no filter, so that
/// deflate finds the runs of equal pixels (china.jpg's segmented image: 2 ms and 42 kB, against
/// 64 ms and 53 kB with libspng's per-row choice of filter, 174 ms and 55 kB with stb_image_write).
/// Photo: anything else: the Sub filter (the filtered image: 51 ms, 409 kB; per-row choice 139 ms, 398 kB).
enum class PngContent { Photo, Flat };

/// PNG (8-bit RGB) file contents. Throws IoError on failure.
std::string png_bytes(const RgbImage& image, PngContent content = PngContent::Photo, int threads = 0);
/// Writes a PNG (temporary file + rename). Throws IoError on failure.
void write_png(const std::string& path, const RgbImage& image);

/// Size with at most `max_pixels` pixels and the same aspect ratio (unchanged if it already fits
/// or max_pixels == 0).
void fitted_size(int width, int height, long long max_pixels, int& out_width, int& out_height);

/// Area-averaging downscale to out_width × out_height (averages in linear light).
RgbImage downscale_area(const RgbImage& image, int out_width, int out_height);

}  // namespace mscli
