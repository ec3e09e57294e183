#pragma once
/// @file colour.hpp
/// sRGB <-> CIELAB (D65 white) for joint spatial-range segmentation. CIELAB is used, as in
/// Comaniciu & Meer (2002, who use CIELUV or CIELAB), because Euclidean distance in it roughly
/// follows perceived colour difference, so one range bandwidth means the same everywhere;
/// in sRGB the same distance is a large change in dark colours and a small one in bright ones.

#include <cstddef>
#include <cstdint>

namespace mscli {

/// 8-bit sRGB channel -> linear-light value in [0, 1] (IEC 61966-2-1 transfer function).
double srgb_to_linear(std::uint8_t c);
/// Linear-light value -> 8-bit sRGB channel (clamped, rounded).
std::uint8_t linear_to_srgb(double v);
/// 8-bit sRGB -> CIELAB: L in [0, 100], a and b roughly in [-110, 110].
void srgb_to_lab(std::uint8_t r, std::uint8_t g, std::uint8_t b, float lab[3]);
/// CIELAB -> 8-bit sRGB (the inverse of srgb_to_lab; colours outside the sRGB gamut are clipped
/// per channel). Round trip of every 8-bit colour: exact.
void lab_to_srgb(const float lab[3], std::uint8_t rgb[3]);

/// srgb_to_lab() of `count` pixels (rgb: count × 3 bytes, lab: count × 3 floats), the same values,
/// on up to `threads` host threads (0 = all cores): an image's conversion is a pass over its pixels
/// that the segmentation of a 4 MP photo would otherwise wait ~0.1 s for on one core.
void srgb_to_lab_pixels(const std::uint8_t* rgb, std::size_t count, float* lab, int threads = 0);
/// lab_to_srgb() of `count` pixels, likewise.
void lab_to_srgb_pixels(const float* lab, std::size_t count, std::uint8_t* rgb, int threads = 0);

}  // namespace mscli
