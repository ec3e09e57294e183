#pragma once
// Internal: the process's peak resident memory, for Timing::peak_memory_bytes.

#include <cstddef>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/resource.h>
#endif

namespace meanshift::detail {

/// Bytes; 0 where the platform does not say. Linux reports ru_maxrss in KiB, macOS in bytes.
inline std::size_t peak_memory_bytes() noexcept
{
#if defined(__unix__) || defined(__APPLE__)
    rusage u{};
    if (getrusage(RUSAGE_SELF, &u) != 0 || u.ru_maxrss < 0) return 0;
#if defined(__APPLE__)
    return static_cast<std::size_t>(u.ru_maxrss);
#else
    return static_cast<std::size_t>(u.ru_maxrss) * 1024u;
#endif
#else
    return 0;
#endif
}

}  // namespace meanshift::detail
