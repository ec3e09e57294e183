#pragma once
/// @file errors.hpp
/// Exception hierarchy of meanshift-skeleton. Every failure the library detects is reported by
/// throwing one of these types; the library never calls exit() and never prints instead of throwing.

#include <meanshift/export.hpp>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace meanshift {

/// Base class of every exception thrown by the library.
class MEANSHIFT_API Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Bad input: NaN/Inf, empty data, wrong dimensions, bandwidth <= 0, singular H_i, invalid topology,
/// unknown option values.
class MEANSHIFT_API InvalidArgument : public Error {
public:
    using Error::Error;
};

/// A backend name that is not known, or one that is compiled out / has no usable device here.
/// what() says which backends exist and why this one cannot be used.
class MEANSHIFT_API BackendUnavailable : public Error {
public:
    using Error::Error;
};

/// A failure reported by a device runtime (CUDA, OpenCL): out of memory, launch failure,
/// program build failure. what() carries the runtime's error name and, for a build failure,
/// the full build log (also available through build_log()).
class MEANSHIFT_API DeviceError : public Error {
public:
    explicit DeviceError(const std::string& what, std::string build_log = {})
        : Error(what), build_log_(std::move(build_log))
    {
    }
    const std::string& build_log() const noexcept { return build_log_; }

private:
    std::string build_log_;
};

/// A requested feature that the chosen backend does not implement (e.g. candidate lists).
class MEANSHIFT_API NotSupported : public Error {
public:
    using Error::Error;
};

/// A run whose estimated memory (meanshift::estimate_memory()) exceeds Options::max_memory or,
/// by default, the machine's available physical memory: refused before anything large is
/// allocated. what() names the estimate, the limit and where the limit comes from; estimate()
/// and limit() give them in bytes.
class MEANSHIFT_API OutOfMemory : public Error {
public:
    OutOfMemory(const std::string& what, std::size_t estimate, std::size_t limit)
        : Error(what), estimate_(estimate), limit_(limit)
    {
    }
    std::size_t estimate() const noexcept { return estimate_; }
    std::size_t limit() const noexcept { return limit_; }

private:
    std::size_t estimate_ = 0, limit_ = 0;
};

/// File input/output failures (unreadable file, bad format) raised by the I/O helpers.
class MEANSHIFT_API IoError : public Error {
public:
    using Error::Error;
};

}  // namespace meanshift
