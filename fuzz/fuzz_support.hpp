#pragma once
// Shared checks of the fuzz targets: the only exception a reader may throw is the documented one,
// and its message must name the input and stay printable once escaped.
#include "text.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace msfuzz {

[[noreturn]] inline void fail(const char* what, const std::string& detail)
{
    std::fprintf(stderr, "fuzz check failed: %s: %s\n", what, mscli::escape_for_terminal(detail).c_str());
    std::abort();
}

/// The message starts with `prefix` (the file name) and escapes to printable text.
inline void check_message(const std::string& message, const std::string& prefix)
{
    if (!prefix.empty() && message.compare(0, prefix.size(), prefix) != 0)
        fail("message does not start with the file name", message);
    const std::string shown = mscli::escape_for_terminal(message);
    for (unsigned char c : shown)
        if (c < 0x20 || c == 0x7f) fail("control byte left after escaping", message);
}

}  // namespace msfuzz
