#include "image_codecs.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#ifndef MSCLI_HAVE_ZLIB
#define MSCLI_HAVE_ZLIB 0
#endif
#if MSCLI_HAVE_ZLIB
#include <zlib.h>
#endif

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

bool decode_png_fast(const std::string& bytes, const std::string& name, const SizeCheck& before_decoding, RgbImage& out)
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

#if MSCLI_HAVE_ZLIB
namespace {

void put32(std::string& out, std::uint32_t v)
{
    const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
    out.append(b, 4);
}

// One PNG chunk: length, type, data, CRC-32 of type and data.
void put_chunk(std::string& out, const char* type, const char* data, std::size_t size)
{
    put32(out, static_cast<std::uint32_t>(size));
    const std::size_t at = out.size();
    out.append(type, 4);
    out.append(data, size);
    put32(out, static_cast<std::uint32_t>(
                   crc32(0L, reinterpret_cast<const Bytef*>(out.data() + at), static_cast<uInt>(size + 4))));
}

// Rows [y0, y1) filtered (None or Sub) and deflated as raw deflate blocks that end byte-aligned
// (Z_SYNC_FLUSH; Z_FINISH for the last piece), so that the pieces concatenate into one stream
// (as pigz does). Returns false when zlib fails.
bool deflate_rows(const RgbImage& image, bool flat, int y0, int y1, bool last, std::string& out, uLong& adler)
{
    z_stream z{};
    if (deflateInit2(&z, kPngCompressionLevel, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
    const std::size_t stride = static_cast<std::size_t>(image.width) * 3;
    std::vector<unsigned char> row(stride + 1), buffer(std::size_t(1) << 18);
    adler = adler32(0L, Z_NULL, 0);
    bool ok = true;
    for (int y = y0; y < y1 && ok; ++y) {
        const unsigned char* src = image.pixels.data() + static_cast<std::size_t>(y) * stride;
        row[0] = flat ? 0 : 1;
        if (flat) {
            std::memcpy(row.data() + 1, src, stride);
        } else {
            for (std::size_t j = 0; j < stride; ++j)
                row[1 + j] = static_cast<unsigned char>(src[j] - (j >= 3 ? src[j - 3] : 0));
        }
        adler = adler32(adler, row.data(), static_cast<uInt>(row.size()));
        z.next_in = row.data();
        z.avail_in = static_cast<uInt>(row.size());
        const int flush = y + 1 < y1 ? Z_NO_FLUSH : last ? Z_FINISH : Z_SYNC_FLUSH;
        // Until the row is consumed and, on the piece's last row, the flush is complete (zlib
        // leaves output space unused then).
        for (;;) {
            z.next_out = buffer.data();
            z.avail_out = static_cast<uInt>(buffer.size());
            const int err = deflate(&z, flush);
            out.append(reinterpret_cast<const char*>(buffer.data()), buffer.size() - z.avail_out);
            if (err == Z_STREAM_END) break;
            if (err != Z_OK && err != Z_BUF_ERROR) {
                ok = false;
                break;
            }
            if (z.avail_in == 0 && z.avail_out != 0) break;
        }
        if (ok && flush == Z_FINISH && z.avail_in != 0) ok = false;
    }
    deflateEnd(&z);
    return ok;
}

}  // namespace

bool encode_png_parallel(const RgbImage& image, bool flat, int threads, std::string& out)
{
    const int T = std::min(threads, image.height / 64);
    if (T < 2) return false;
    std::vector<std::string> piece(static_cast<std::size_t>(T));
    std::vector<uLong> adler(static_cast<std::size_t>(T));
    std::vector<char> ok(static_cast<std::size_t>(T), 0);
    std::vector<std::thread> pool;
    for (int t = 0; t < T; ++t)
        pool.emplace_back([&, t] {
            const int y0 = static_cast<int>(static_cast<long long>(image.height) * t / T);
            const int y1 = static_cast<int>(static_cast<long long>(image.height) * (t + 1) / T);
            ok[std::size_t(t)] =
                deflate_rows(image, flat, y0, y1, t + 1 == T, piece[std::size_t(t)], adler[std::size_t(t)]);
        });
    for (std::thread& th : pool) th.join();
    for (char k : ok)
        if (!k) throw IoError("PNG encoding failed (zlib)");
    std::size_t total = 0;
    for (const std::string& p : piece) total += p.size();
    out.clear();
    out.reserve(total + total / 1000 + 128);
    out.append("\x89PNG\r\n\x1a\n", 8);
    char ihdr[13] = {};
    const auto w = static_cast<std::uint32_t>(image.width), h = static_cast<std::uint32_t>(image.height);
    for (int b = 0; b < 4; ++b) {
        ihdr[b] = char(w >> (24 - 8 * b));
        ihdr[4 + b] = char(h >> (24 - 8 * b));
    }
    ihdr[8] = 8;  // bit depth
    ihdr[9] = 2;  // truecolour; compression, filter method and interlace 0
    put_chunk(out, "IHDR", ihdr, sizeof ihdr);
    // The zlib stream (header: deflate, 32 KiB window, level 1's flags; the pieces; the Adler-32 of
    // all the filtered rows) in IDAT chunks, whose split the format leaves free: one or more per
    // piece (at most 64 MiB each), each piece released once written.
    put_chunk(out, "IDAT", "\x78\x01", 2);
    uLong a = adler[0];
    const std::size_t stride = static_cast<std::size_t>(image.width) * 3 + 1;
    constexpr std::size_t kChunk = std::size_t(1) << 26;
    for (int t = 0; t < T; ++t) {
        const std::string& p = piece[std::size_t(t)];
        for (std::size_t at = 0; at < p.size(); at += kChunk)
            put_chunk(out, "IDAT", p.data() + at, std::min(kChunk, p.size() - at));
        std::string().swap(piece[std::size_t(t)]);
        if (t > 0) {
            const int y0 = static_cast<int>(static_cast<long long>(image.height) * t / T);
            const int y1 = static_cast<int>(static_cast<long long>(image.height) * (t + 1) / T);
            a = adler32_combine(a, adler[std::size_t(t)],
                                static_cast<z_off_t>(stride * static_cast<std::size_t>(y1 - y0)));
        }
    }
    const char tail[4] = {char(a >> 24), char(a >> 16), char(a >> 8), char(a)};
    put_chunk(out, "IDAT", tail, 4);
    put_chunk(out, "IEND", "", 0);
    return true;
}
#else
bool encode_png_parallel(const RgbImage&, bool, int, std::string&)
{
    return false;
}
#endif

bool encode_png_fast(const RgbImage& image, bool flat, std::string& out, int threads)
{
    // Large images: rows deflated in parallel pieces (one stream, the same pixels); 4 MP and less:
    // libspng, one thread.
    if (static_cast<long long>(image.width) * image.height > (1LL << 22) && threads != 1) {
        const int T = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        if (encode_png_parallel(image, flat, T, out)) return true;
    }
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
        err =
            spng_encode_image(ctx.get(), image.pixels.data(), image.pixels.size(), SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
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
         std::to_string(kPngCompressionLevel) + (MSCLI_HAVE_ZLIB ? "; over 4 MP by zlib in parallel pieces)" : ")");
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
