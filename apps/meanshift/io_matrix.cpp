// Format dispatch by extension, CSV writers and small file helpers.
#include "io_matrix.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

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

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};

std::unique_ptr<std::FILE, FileCloser> open_for_writing(const std::string& path)
{
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "w"));
    if (!f) throw IoError(path + ": cannot open for writing");
    return f;
}

void close_checked(std::unique_ptr<std::FILE, FileCloser> f, const std::string& path)
{
    const bool failed = std::ferror(f.get()) != 0;
    if (std::fclose(f.release()) != 0 || failed) throw IoError(path + ": write failed");
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
    std::ifstream f(path, std::ios::binary);
    if (!f) throw IoError(path + ": cannot open for reading");
    std::ostringstream ss;
    ss << f.rdbuf();
    if (f.bad()) throw IoError(path + ": read failed");
    return ss.str();
}

meanshift::MatrixD read_matrix(const std::string& path)
{
    return format_of(path) == MatrixFormat::Csv ? read_csv(path) : read_npy(path);
}

void write_matrix(const std::string& path, const meanshift::MatrixF& m)
{
    if (format_of(path) == MatrixFormat::Npy) {
        write_npy_float(path, m);
        return;
    }
    auto f = open_for_writing(path);
    for (Index i = 0; i < m.rows(); ++i) {
        for (Index d = 0; d < m.cols(); ++d)
            std::fprintf(f.get(), d + 1 < m.cols() ? "%.9g," : "%.9g\n", static_cast<double>(m(i, d)));
    }
    close_checked(std::move(f), path);
}

void write_int_matrix(const std::string& path, const std::vector<int>& values, Index rows, Index cols)
{
    if (format_of(path) == MatrixFormat::Npy) {
        write_npy_int(path, values, {rows, cols});
        return;
    }
    auto f = open_for_writing(path);
    for (Index i = 0; i < rows; ++i) {
        for (Index d = 0; d < cols; ++d)
            std::fprintf(f.get(), d + 1 < cols ? "%d," : "%d\n", values[static_cast<std::size_t>(i * cols + d)]);
    }
    close_checked(std::move(f), path);
}

void write_labels(const std::string& path, const std::vector<int>& labels)
{
    if (format_of(path) == MatrixFormat::Npy) {
        write_npy_int(path, labels, {static_cast<Index>(labels.size())});
        return;
    }
    write_int_matrix(path, labels, static_cast<Index>(labels.size()), 1);
}

std::string sibling_path(const std::string& path, const std::string& tag)
{
    const std::size_t slash = path.find_last_of('/');
    const std::size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + "." + tag;
    return path.substr(0, dot) + "." + tag + path.substr(dot);
}

}  // namespace mscli
