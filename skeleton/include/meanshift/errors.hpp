#pragma once
/// @file errors.hpp
/// Exception hierarchy of meanshift-skeleton. Every failure the library detects is reported by
/// throwing one of these types; the library never calls exit() and never prints instead of throwing.

#include <meanshift/export.hpp>
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
        : Error(what), build_log_(std::move(build_log)) {}
    const std::string& build_log() const noexcept { return build_log_; }

private:
    std::string build_log_;
};

/// A requested feature that the chosen backend does not implement (e.g. candidate lists).
class MEANSHIFT_API NotSupported : public Error {
public:
    using Error::Error;
};

/// File input/output failures (unreadable file, bad format) raised by the I/O helpers.
class MEANSHIFT_API IoError : public Error {
public:
    using Error::Error;
};

}  // namespace meanshift
