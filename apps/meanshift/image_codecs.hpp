#pragma once
/// @file image_codecs.hpp
/// The fast image codecs of `meanshift segment`, where the build found them (pkg-config):
/// libspng (PNG decoding and encoding) and libjpeg-turbo (JPEG decoding, through the libjpeg API).
/// Each function returns false when its library is not compiled in; io_image.cpp then uses
/// stb_image / stb_image_write, which also read every other format (BMP, TGA, GIF, PSD, HDR, PIC).
/// They are called after io_image.cpp has checked the header against the file size
/// (declared_size_problem()), and call `before_decoding` with the header's size before any pixel
/// buffer is allocated.

#include "io_image.hpp"

#include <string>

namespace mscli {

/// Decodes a PNG into 8-bit RGB (grey and palette expanded, 16-bit samples reduced to their high
/// byte and alpha dropped, as stb_image does). Throws meanshift::IoError naming `name` on corrupt
/// data (CRC mismatch of a critical chunk, a cut or corrupt deflate stream, an unknown critical
/// chunk). False: libspng is not compiled in.
bool decode_png_fast(const std::string& bytes, const std::string& name, const SizeCheck& before_decoding,
                     RgbImage& out);

/// Decodes a JPEG (grey or YCbCr) into 8-bit RGB with libjpeg-turbo (accurate integer DCT, fancy
/// upsampling: libjpeg's defaults). A file that ends before its last scan is an error, not grey
/// fill. False: libjpeg-turbo is not compiled in, or the file is CMYK/YCCK (stb_image reads those).
bool decode_jpeg_fast(const std::string& bytes, const std::string& name, const SizeCheck& before_decoding,
                      RgbImage& out);

/// PNG file contents of an 8-bit RGB image, compressed at zlib level kPngCompressionLevel, every row
/// with no filter (`flat`: regions of one colour) or the Sub filter (PngContent in io_image.hpp).
/// Images over 4 MP: rows deflated in pieces on `threads` threads (0 = the hardware's) with zlib,
/// one valid stream (each piece ends on a byte boundary); smaller ones through libspng.
/// False: neither libspng nor zlib is compiled in. Throws IoError when encoding fails.
bool encode_png_fast(const RgbImage& image, bool flat, std::string& out, int threads = 0);

/// zlib level of the PNGs written through libspng: 1, the fastest that still compresses. The
/// outputs of `segment` are mostly flat regions (each segment one colour), which level 1 already
/// packs well; levels 3 and 6 took 2-3x the time for 3-13 % smaller files on china.jpg's outputs
/// (docs/segmentation.md, "Image I/O and stages of the command").
constexpr int kPngCompressionLevel = 1;

/// "PNG: libspng 0.7.3 (written at zlib level 1), JPEG: libjpeg-turbo 2.1.5, other formats: stb_image"
/// (what `meanshift backends` and the segment summary print).
std::string image_codecs_summary();

}  // namespace mscli
