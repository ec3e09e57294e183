#include "text.hpp"

#include <cstdint>
#include <cstdio>

namespace mscli {
namespace {

// Length of the well-formed UTF-8 sequence at s[i] (2-4) and its code point, or 0 if malformed.
std::size_t utf8_sequence(std::string_view s, std::size_t i, std::uint32_t& cp)
{
    const auto b0 = static_cast<unsigned char>(s[i]);
    std::size_t len;
    std::uint32_t min;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        len = 2;
        cp = b0 & 0x1Fu;
        min = 0x80;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        len = 3;
        cp = b0 & 0x0Fu;
        min = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4;
        cp = b0 & 0x07u;
        min = 0x10000;
    } else
        return 0;
    if (i + len > s.size()) return 0;
    for (std::size_t j = 1; j < len; ++j) {
        const auto b = static_cast<unsigned char>(s[i + j]);
        if ((b & 0xC0u) != 0x80u) return 0;
        cp = (cp << 6) | (b & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

bool shown_as_is(std::uint32_t cp)
{
    if (cp < 0xA0) return false;  // C1 controls (U+0080-U+009F)
    if (cp == 0x200E || cp == 0x200F) return false;  // LRM, RLM
    if (cp >= 0x202A && cp <= 0x202E) return false;  // bidi embeddings/overrides
    if (cp >= 0x2066 && cp <= 0x2069) return false;  // bidi isolates
    return true;
}

}  // namespace

std::string escape_for_terminal(std::string_view text)
{
    static const char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto b = static_cast<unsigned char>(text[i]);
        if (b == '\\') {
            out += "\\\\";
            ++i;
            continue;
        }
        if (b >= 0x20 && b < 0x7F) {
            out.push_back(static_cast<char>(b));
            ++i;
            continue;
        }
        if (b >= 0x80) {
            std::uint32_t cp = 0;
            const std::size_t len = utf8_sequence(text, i, cp);
            if (len > 0 && shown_as_is(cp)) {
                out.append(text.substr(i, len));
                i += len;
                continue;
            }
            if (len > 0) {  // a well-formed but unsafe character: escape all of its bytes
                for (std::size_t j = 0; j < len; ++j) {
                    const auto c = static_cast<unsigned char>(text[i + j]);
                    out += "\\x";
                    out.push_back(hex[c >> 4]);
                    out.push_back(hex[c & 15]);
                }
                i += len;
                continue;
            }
        }
        out += "\\x";
        out.push_back(hex[b >> 4]);
        out.push_back(hex[b & 15]);
        ++i;
    }
    return out;
}

std::string clip(std::string_view text, std::size_t max_bytes)
{
    if (text.size() <= max_bytes) return std::string(text);
    return std::string(text.substr(0, max_bytes)) + "...";
}

std::string sci(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

}  // namespace mscli
