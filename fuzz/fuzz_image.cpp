// libFuzzer target: image decoding with the header checks (mscli::decode_rgb), and for small
// images a PNG round trip through the writer.
#include "fuzz_support.hpp"
#include "io_image.hpp"

#include <meanshift/errors.hpp>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    // A smaller pixel limit than the tool's default keeps each run fast; the rules are the same.
    const long long limit = 1 << 20;
    try {
        const mscli::RgbImage img = mscli::decode_rgb(bytes, "fuzz.img", limit);
        if (img.width <= 0 || img.height <= 0) msfuzz::fail("empty image accepted", "");
        if (static_cast<long long>(img.count()) > limit) msfuzz::fail("pixel limit not enforced", "");
        if (img.pixels.size() != img.count() * 3) msfuzz::fail("pixel buffer size", "");
        if (img.count() <= 4096) {
            const mscli::RgbImage back = mscli::decode_rgb(mscli::png_bytes(img), "round-trip.png", limit);
            if (back.width != img.width || back.height != img.height || back.pixels != img.pixels)
                msfuzz::fail("PNG round trip changed the image", "");
        }
    } catch (const meanshift::IoError& e) {
        msfuzz::check_message(e.what(), "fuzz.img: ");
    }
    return 0;
}
