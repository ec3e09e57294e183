// Format dispatch by extension, CSV writers and small file helpers.
#include "io_matrix.hpp"

#include "output_files.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mscli {
namespace {

using meanshift::Index;
using meanshift::IoError;

std::string lower_extension(const std::string& path)
{
    const std::size_t slash = path.find_last_of('/');
    const std::size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return {};
    std::string ext = path.substr(dot);
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    return ext;
}

void append_int(std::string& out, int v, char end)
{
    char buf[16];
    const int len = std::snprintf(buf, sizeof buf, "%d%c", v, end);
    out.append(buf, static_cast<std::size_t>(len));
}

}  // namespace

MatrixFormat format_of(const std::string& path)
{
    const std::string ext = lower_extension(path);
    if (ext == ".csv") return MatrixFormat::Csv;
    if (ext == ".npy") return MatrixFormat::Npy;
    throw IoError(path + ": unknown file type '" + ext + "' (use .csv or .npy)");
}

std::string read_file(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError(path + ": cannot open for reading (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        ::close(fd);
        throw IoError(path + ": is a folder, not a file");
    }
    std::string bytes;
    if (S_ISREG(st.st_mode) && st.st_size > 0) bytes.reserve(static_cast<std::size_t>(st.st_size));
    char buf[65536];
    for (;;) {
        const ssize_t r = ::read(fd, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            ::close(fd);
            throw IoError(path + ": read failed (" + std::strerror(err) + ")");
        }
        if (r == 0) break;
        bytes.append(buf, static_cast<std::size_t>(r));
    }
    ::close(fd);
    return bytes;
}

meanshift::MatrixD read_matrix(const std::string& path)
{
    return format_of(path) == MatrixFormat::Csv ? read_csv(path) : read_npy(path);
}

std::string matrix_bytes(MatrixFormat format, const meanshift::MatrixF& m)
{
    if (format == MatrixFormat::Npy) return npy_float_bytes(m);
    std::string out;
    out.reserve(static_cast<std::size_t>(m.size()) * 12);
    char buf[40];
    for (Index i = 0; i < m.rows(); ++i) {
        for (Index d = 0; d < m.cols(); ++d) {
            const int len =
                std::snprintf(buf, sizeof buf, d + 1 < m.cols() ? "%.9g," : "%.9g\n", static_cast<double>(m(i, d)));
            out.append(buf, static_cast<std::size_t>(len));
        }
    }
    return out;
}

std::string int_matrix_bytes(MatrixFormat format, const std::vector<int>& values, Index rows, Index cols)
{
    if (format == MatrixFormat::Npy) return npy_int_bytes(values, {rows, cols});
    std::string out;
    out.reserve(values.size() * 3);
    for (Index i = 0; i < rows; ++i)
        for (Index d = 0; d < cols; ++d)
            append_int(out, values[static_cast<std::size_t>(i * cols + d)], d + 1 < cols ? ',' : '\n');
    return out;
}

std::string labels_bytes(MatrixFormat format, const std::vector<int>& labels)
{
    if (format == MatrixFormat::Npy) return npy_int_bytes(labels, {static_cast<Index>(labels.size())});
    return int_matrix_bytes(format, labels, static_cast<Index>(labels.size()), 1);
}

void write_matrix(const std::string& path, const meanshift::MatrixF& m)
{
    write_file_atomically(path, matrix_bytes(format_of(path), m));
}

void write_int_matrix(const std::string& path, const std::vector<int>& values, Index rows, Index cols)
{
    write_file_atomically(path, int_matrix_bytes(format_of(path), values, rows, cols));
}

void write_labels(const std::string& path, const std::vector<int>& labels)
{
    write_file_atomically(path, labels_bytes(format_of(path), labels));
}

std::string sibling_path(const std::string& path, const std::string& tag)
{
    const std::size_t slash = path.find_last_of('/');
    const std::size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + "." + tag;
    return path.substr(0, dot) + "." + tag + path.substr(dot);
}

}  // namespace mscli
