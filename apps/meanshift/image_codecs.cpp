#include "image_codecs.hpp"

#include <meanshift/errors.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#if MSCLI_HAVE_SPNG
#include <spng.h>
#endif
#if MSCLI_HAVE_LIBJPEG
#include <csetjmp>
// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>
#endif

namespace mscli {
namespace {

using meanshift::IoError;

[[maybe_unused]] std::string cut_or_corrupt(const std::string& name, const std::string& why)
{
    return name + ": cannot read image (" + why + ": the image data after the header are truncated or corrupt)";
}

#if MSCLI_HAVE_SPNG
struct SpngFree {
    void operator()(spng_ctx* c) const { spng_ctx_free(c); }
};
using SpngCtx = std::unique_ptr<spng_ctx, SpngFree>;

// The first critical chunk (bit 5 of the first type byte clear: an upper-case letter) of a PNG that the standard does not define:
// libspng's message does not name it. Chunks were checked to fit in the file (png_problem()).
std::string unknown_critical_chunk(const std::string& b)
{
    static const char* const known[] = {"IHDR", "PLTE", "IDAT", "IEND"};
    for (std::size_t pos = 8; pos + 12 <= b.size();) {
        const std::string type = b.substr(pos + 4, 4);
        bool is_known = false;
        for (const char* k : known) is_known = is_known || type == k;
        if (!is_known && (static_cast<unsigned char>(type[0]) & 0x20) == 0) return type;  // bit 5 clear: critical
        const std::size_t len = static_cast<std::size_t>(static_cast<unsigned char>(b[pos])) << 24 |
                                static_cast<std::size_t>(static_cast<unsigned char>(b[pos + 1])) << 16 |
                                static_cast<std::size_t>(static_cast<unsigned char>(b[pos + 2])) << 8 |
                                static_cast<unsigned char>(b[pos + 3]);
        pos += 12 + len;
    }
    return {};
}

[[noreturn]] void spng_failure(int err, const std::string& bytes, const std::string& name, bool header_read)
{
    if (err == SPNG_ECHUNK_UNKNOWN_CRITICAL) {
        const std::string type = unknown_critical_chunk(bytes);
        throw IoError(name + ": cannot read image (" + (type.empty() ? "a critical" : type) +
                      " PNG chunk not known)");  // stb_image's words
    }
    const std::string why = spng_strerror(err);
    if (!header_read) throw IoError(name + ": cannot read image (PNG header: " + why + ")");
    throw IoError(cut_or_corrupt(name, why));
}
#endif

#if MSCLI_HAVE_LIBJPEG
// libjpeg reports errors through error_exit, which must not return: it jumps back to the decoding
// function (C++ exceptions must not unwind through the C library's frames).
struct JpegErrors {
    jpeg_error_mgr mgr;
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    bool truncated;
};

void jpeg_error_exit(j_common_ptr cinfo)
{
    auto* e = reinterpret_cast<JpegErrors*>(cinfo->err);
    (*cinfo->err->format_message)(cinfo, e->message);
    std::longjmp(e->jump, 1);
}

// Warnings (level -1) about corrupt data are not printed. A file that ends before its last scan
// is filled with grey by libjpeg: refused instead, as a wrong picture would be segmented otherwise.
void jpeg_emit_message(j_common_ptr cinfo, int level)
{
    auto* e = reinterpret_cast<JpegErrors*>(cinfo->err);
    if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
        (*cinfo->err->format_message)(cinfo, e->message);
        e->truncated = true;
    }
}

// 0: decoded; 1: libjpeg error (message in e.message); 2: CMYK/YCCK (left to stb_image);
// 3: the file ended early. Locals of this function are not touched after longjmp except `cinfo`
// and the caller's objects, so no C++ destructor is skipped.
int jpeg_decode(const std::string& bytes, JpegErrors& e, const SizeCheck& before_decoding, RgbImage& out,
                bool& header_read)
{
    jpeg_decompress_struct cinfo;
    cinfo.err = jpeg_std_error(&e.mgr);
    e.mgr.error_exit = jpeg_error_exit;
    e.mgr.emit_message = jpeg_emit_message;
    e.truncated = false;
    e.message[0] = '\0';
    if (setjmp(e.jump)) {
        jpeg_destroy_decompress(&cinfo);
        return 1;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()),
                 static_cast<unsigned long>(bytes.size()));
    jpeg_read_header(&cinfo, TRUE);
    header_read = true;
    if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
        jpeg_destroy_decompress(&cinfo);
        return 2;
    }
    cinfo.out_color_space = JCS_RGB;
    if (before_decoding) {
        // The size check may throw (a C++ exception through no C frame: we are in our own code).
        try {
            before_decoding(static_cast<int>(cinfo.image_width), static_cast<int>(cinfo.image_height));
        } catch (...) {
            jpeg_destroy_decompress(&cinfo);
            throw;
        }
    }
    jpeg_start_decompress(&cinfo);
    out.width = static_cast<int>(cinfo.output_width);
    out.height = static_cast<int>(cinfo.output_height);
    try {
        out.pixels.resize(out.count() * 3);
    } catch (...) {
        jpeg_destroy_decompress(&cinfo);
        throw;
    }
    const std::size_t stride = static_cast<std::size_t>(out.width) * 3;
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW rows[16];
        JDIMENSION want = cinfo.output_height - cinfo.output_scanline;
        if (want > 16) want = 16;
        for (JDIMENSION r = 0; r < want; ++r) rows[r] = &out.pixels[(cinfo.output_scanline + r) * stride];
        if (jpeg_read_scanlines(&cinfo, rows, want) == 0) break;  // suspended: cannot happen with a memory source
    }
    const bool complete = cinfo.output_scanline == cinfo.output_height;
    if (complete && !e.truncated) jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return complete && !e.truncated ? 0 : 3;
}
#endif

}  // namespace

bool decode_png_fast(const std::string& bytes, const std::string& name, const SizeCheck& before_decoding,
                     RgbImage& out)
{
#if MSCLI_HAVE_SPNG
    SpngCtx ctx(spng_ctx_new(0));
    if (!ctx) throw IoError(name + ": cannot read image (out of memory for the PNG decoder)");
    // Chunks can be no longer than the file (png_problem() checked it too); CRCs of critical
    // chunks are checked (a mismatch is an error), corrupt ancillary chunks are skipped.
    spng_set_chunk_limits(ctx.get(), bytes.size(), bytes.size());
    int err = spng_set_png_buffer(ctx.get(), bytes.data(), bytes.size());
    spng_ihdr ihdr{};
    if (err == 0) err = spng_get_ihdr(ctx.get(), &ihdr);
    if (err != 0) spng_failure(err, bytes, name, false);
    if (before_decoding) before_decoding(static_cast<int>(ihdr.width), static_cast<int>(ihdr.height));
    std::size_t size = 0;
    err = spng_decoded_image_size(ctx.get(), SPNG_FMT_RGB8, &size);
    if (err != 0) spng_failure(err, bytes, name, true);
    out.width = static_cast<int>(ihdr.width);
    out.height = static_cast<int>(ihdr.height);
    if (size != out.count() * 3)
        throw IoError(name + ": cannot read image (the PNG decoder's buffer size " + std::to_string(size) +
                      " does not match " + std::to_string(out.width) + " x " + std::to_string(out.height) + " x 3)");
    out.pixels.resize(size);
    // No flags: alpha (and tRNS) dropped, no gamma correction, as stb_image decodes.
    err = spng_decode_image(ctx.get(), out.pixels.data(), size, SPNG_FMT_RGB8, 0);
    if (err != 0) spng_failure(err, bytes, name, true);
    return true;
#else
    (void)bytes, (void)name, (void)before_decoding, (void)out;
    return false;
#endif
}

bool decode_jpeg_fast(const std::string& bytes, const std::string& name, const SizeCheck& before_decoding,
                      RgbImage& out)
{
#if MSCLI_HAVE_LIBJPEG
    JpegErrors e;
    bool header_read = false;
    const int status = jpeg_decode(bytes, e, before_decoding, out, header_read);
    if (status == 0) return true;
    if (status == 2) return false;
    out = RgbImage{};
    if (status == 3) throw IoError(cut_or_corrupt(name, e.message[0] ? e.message : "the file ends early"));
    if (!header_read) throw IoError(name + ": cannot read image (JPEG header: " + e.message + ")");
    throw IoError(cut_or_corrupt(name, e.message));
#else
    (void)bytes, (void)name, (void)before_decoding, (void)out;
    return false;
#endif
}

bool encode_png_fast(const RgbImage& image, bool flat, std::string& out)
{
#if MSCLI_HAVE_SPNG
    SpngCtx ctx(spng_ctx_new(SPNG_CTX_ENCODER));
    if (!ctx) throw IoError("PNG encoding failed (out of memory)");
    spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1);
    spng_set_option(ctx.get(), SPNG_IMG_COMPRESSION_LEVEL, kPngCompressionLevel);
    spng_set_option(ctx.get(), SPNG_FILTER_CHOICE, flat ? SPNG_FILTER_CHOICE_NONE : SPNG_FILTER_CHOICE_SUB);
    spng_ihdr ihdr{};
    ihdr.width = static_cast<std::uint32_t>(image.width);
    ihdr.height = static_cast<std::uint32_t>(image.height);
    ihdr.bit_depth = 8;
    ihdr.color_type = SPNG_COLOR_TYPE_TRUECOLOR;
    int err = spng_set_ihdr(ctx.get(), &ihdr);
    if (err == 0)
        err = spng_encode_image(ctx.get(), image.pixels.data(), image.pixels.size(), SPNG_FMT_PNG,
                                SPNG_ENCODE_FINALIZE);
    if (err != 0) throw IoError(std::string("PNG encoding failed (libspng: ") + spng_strerror(err) + ")");
    std::size_t len = 0;
    std::unique_ptr<void, void (*)(void*)> png(spng_get_png_buffer(ctx.get(), &len, &err), std::free);
    if (!png || err != 0) throw IoError(std::string("PNG encoding failed (libspng: ") + spng_strerror(err) + ")");
    out.assign(static_cast<const char*>(png.get()), len);
    return true;
#else
    (void)image, (void)flat, (void)out;
    return false;
#endif
}

std::string image_codecs_summary()
{
    std::string s;
#if MSCLI_HAVE_SPNG
    s += std::string("PNG: libspng ") + spng_version_string() + " (written at zlib level " +
         std::to_string(kPngCompressionLevel) + ")";
#else
    s += "PNG: stb_image / stb_image_write";
#endif
#if MSCLI_HAVE_LIBJPEG
#ifdef LIBJPEG_TURBO_VERSION
#define MSCLI_STR2(x) #x
#define MSCLI_STR(x) MSCLI_STR2(x)
    s += ", JPEG: libjpeg-turbo " MSCLI_STR(LIBJPEG_TURBO_VERSION);
#else
    s += ", JPEG: libjpeg " + std::to_string(JPEG_LIB_VERSION);
#endif
#else
    s += ", JPEG: stb_image";
#endif
    return s + ", other formats: stb_image";
}

}  // namespace mscli
