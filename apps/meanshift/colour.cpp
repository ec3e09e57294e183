#include "colour.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

namespace mscli {
namespace {

const std::array<double, 256>& linear_table()
{
    static const std::array<double, 256> table = [] {
        std::array<double, 256> t{};
        for (int i = 0; i < 256; ++i) {
            const double c = i / 255.0;
            t[i] = c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
        }
        return t;
    }();
    return table;
}

// CIE 1976 companding function f(t) with the linear segment below (6/29)³.
double lab_f(double t)
{
    constexpr double delta = 6.0 / 29.0;
    return t > delta * delta * delta ? std::cbrt(t) : t / (3 * delta * delta) + 4.0 / 29.0;
}

// Inverse of lab_f.
double lab_f_inverse(double f)
{
    constexpr double delta = 6.0 / 29.0;
    return f > delta ? f * f * f : 3 * delta * delta * (f - 4.0 / 29.0);
}

// body(begin, end) over [0, count) in contiguous slices, one per thread; slices of at least 2^16
// pixels, so that small images stay on the calling thread.
void for_slices(std::size_t count, int threads, const std::function<void(std::size_t, std::size_t)>& body)
{
    const std::size_t cores =
        threads > 0 ? static_cast<std::size_t>(threads) : std::max(1u, std::thread::hardware_concurrency());
    const std::size_t parts = std::max<std::size_t>(1, std::min(cores, count >> 16));
    if (parts == 1) {
        body(0, count);
        return;
    }
    std::vector<std::thread> pool;
    for (std::size_t p = 1; p < parts; ++p) pool.emplace_back(body, count * p / parts, count * (p + 1) / parts);
    body(0, count / parts);
    for (std::thread& t : pool) t.join();
}

}  // namespace

double srgb_to_linear(std::uint8_t c)
{
    return linear_table()[c];
}

std::uint8_t linear_to_srgb(double v)
{
    v = std::clamp(v, 0.0, 1.0);
    const double c = v <= 0.0031308 ? 12.92 * v : 1.055 * std::pow(v, 1 / 2.4) - 0.055;
    return static_cast<std::uint8_t>(std::lround(std::clamp(c, 0.0, 1.0) * 255.0));
}

void srgb_to_lab(std::uint8_t r8, std::uint8_t g8, std::uint8_t b8, float lab[3])
{
    const double r = srgb_to_linear(r8), g = srgb_to_linear(g8), b = srgb_to_linear(b8);
    // sRGB primaries -> CIE XYZ, then normalised by the D65 reference white.
    const double x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047;
    const double y = (0.2126729 * r + 0.7151522 * g + 0.0721750 * b) / 1.00000;
    const double z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883;
    const double fx = lab_f(x), fy = lab_f(y), fz = lab_f(z);
    lab[0] = static_cast<float>(116 * fy - 16);
    lab[1] = static_cast<float>(500 * (fx - fy));
    lab[2] = static_cast<float>(200 * (fy - fz));
}

void lab_to_srgb(const float lab[3], std::uint8_t rgb[3])
{
    const double fy = (lab[0] + 16.0) / 116.0, fx = fy + lab[1] / 500.0, fz = fy - lab[2] / 200.0;
    const double x = lab_f_inverse(fx) * 0.95047, y = lab_f_inverse(fy), z = lab_f_inverse(fz) * 1.08883;
    rgb[0] = linear_to_srgb(3.2404542 * x - 1.5371385 * y - 0.4985314 * z);
    rgb[1] = linear_to_srgb(-0.9692660 * x + 1.8760108 * y + 0.0415560 * z);
    rgb[2] = linear_to_srgb(0.0556434 * x - 0.2040259 * y + 1.0572252 * z);
}

void srgb_to_lab_pixels(const std::uint8_t* rgb, std::size_t count, float* lab, int threads)
{
    linear_table();  // built once, before the threads read it
    for_slices(count, threads, [&](std::size_t begin, std::size_t end) {
        // Photos repeat colours (china.jpg: 96,615 distinct in 273,280 pixels): a direct-mapped cache
        // of converted colours (1 MB a thread) skips most of the three cube roots per pixel. Entries
        // hold srgb_to_lab()'s own results, so the values are the same.
        struct Entry {
            std::uint32_t key;
            float lab[3];
        };
        constexpr int kBits = 16;
        std::vector<Entry> cache(std::size_t{1} << kBits, Entry{~0u, {0, 0, 0}});
        for (std::size_t i = begin; i < end; ++i) {
            const std::uint8_t* p = &rgb[3 * i];
            const std::uint32_t key = std::uint32_t{p[0]} << 16 | std::uint32_t{p[1]} << 8 | p[2];
            Entry& e = cache[(key * 2654435761u) >> (32 - kBits)];
            if (e.key != key) {
                srgb_to_lab(p[0], p[1], p[2], e.lab);
                e.key = key;
            }
            lab[3 * i] = e.lab[0];
            lab[3 * i + 1] = e.lab[1];
            lab[3 * i + 2] = e.lab[2];
        }
    });
}

void lab_to_srgb_pixels(const float* lab, std::size_t count, std::uint8_t* rgb, int threads)
{
    for_slices(count, threads, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) lab_to_srgb(&lab[3 * i], &rgb[3 * i]);
    });
}

}  // namespace mscli
