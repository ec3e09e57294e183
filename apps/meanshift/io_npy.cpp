// NPY matrices. Debian 12 ships no NPY library for C++ (no libcnpy), so this is a small reader
// and writer for the format's documented layout: magic "\x93NUMPY", version, header length,
// a Python-literal dict {'descr': .., 'fortran_order': .., 'shape': (..)}, then the raw array.
#include "io_matrix.hpp"

#include "text.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace mscli {
namespace {

using meanshift::Index;
using meanshift::IoError;

bool host_is_little_endian()
{
    const std::uint16_t one = 1;
    unsigned char b;
    std::memcpy(&b, &one, 1);
    return b == 1;
}

std::uint32_t read_le(const unsigned char* p, int bytes)
{
    std::uint32_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

// Value of `key` in the header dict, as the raw literal text (up to the next top-level ',' or '}').
std::string dict_value(const std::string& header, const std::string& key, const std::string& name)
{
    std::size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) k = header.find("\"" + key + "\"");
    if (k == std::string::npos) throw IoError(name + ": NPY header has no '" + key + "' entry");
    std::size_t colon = header.find(':', k);
    if (colon == std::string::npos) throw IoError(name + ": malformed NPY header");
    std::size_t b = header.find_first_not_of(" ", colon + 1);
    if (b == std::string::npos) throw IoError(name + ": malformed NPY header");
    if (header[b] == '(') {
        std::size_t e = header.find(')', b);
        if (e == std::string::npos) throw IoError(name + ": malformed NPY shape");
        return header.substr(b, e - b + 1);
    }
    std::size_t e = header.find_first_of(",}", b);
    if (e == std::string::npos) throw IoError(name + ": malformed NPY header");
    std::string v = header.substr(b, e - b);
    while (!v.empty() && v.back() == ' ') v.pop_back();
    return v;
}

std::vector<Index> parse_shape(const std::string& text, const std::string& name)
{
    std::vector<Index> dims;
    if (text.size() < 2 || text.front() != '(' || text.back() != ')')
        throw IoError(name + ": NPY shape '" + clip(text) + "' is not a tuple");
    std::string inner = text.substr(1, text.size() - 2);
    std::stringstream ss(inner);
    std::string item;
    while (std::getline(ss, item, ',')) {
        std::size_t b = item.find_first_not_of(" L");
        if (b == std::string::npos) continue;  // trailing comma of "(n,)"
        std::size_t e = item.find_last_not_of(" L");
        std::string num = item.substr(b, e - b + 1);
        char* end = nullptr;
        errno = 0;
        long long v = std::strtoll(num.c_str(), &end, 10);
        if (end == num.c_str() || *end != '\0' || v < 0 || errno == ERANGE) throw IoError(name + ": NPY shape '" + clip(text) + "' is not a tuple of non-negative integers");
        dims.push_back(static_cast<Index>(v));
    }
    return dims;
}

template <class T>
double load_as_double(const unsigned char* p, bool swap)
{
    unsigned char b[sizeof(T)];
    std::memcpy(b, p, sizeof(T));
    if (swap)
        for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
    T v;
    std::memcpy(&v, b, sizeof(T));
    return static_cast<double>(v);
}

template <class T>
void append_le(std::string& out, T v)
{
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    if (!host_is_little_endian())
        for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
    out.append(reinterpret_cast<const char*>(b), sizeof(T));
}

// Version 1.0 file: header padded with spaces so that the data start is 64-byte aligned.
std::string npy_header(const std::string& descr, const std::vector<Index>& shape)
{
    std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        dict += std::to_string(shape[i]);
        if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
        if (i + 1 < shape.size()) dict += " ";
    }
    dict += "), }";
    std::size_t total = 10 + dict.size() + 1;
    dict.append((64 - total % 64) % 64, ' ');
    dict += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    const std::uint16_t len = static_cast<std::uint16_t>(dict.size());
    out.push_back(static_cast<char>(len & 0xff));
    out.push_back(static_cast<char>(len >> 8));
    return out + dict;
}

}  // namespace

NpyLayout parse_npy_layout(const std::string& bytes, const std::string& path, std::size_t file_size)
{
    const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
    if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
        throw IoError(path + ": not an NPY file (it does not start with \\x93NUMPY)");
    const int major = u[6];
    std::size_t header_len, offset;
    if (major == 1) {
        header_len = read_le(u + 8, 2);
        offset = 10;
    } else if (major == 2 || major == 3) {
        if (bytes.size() < 12) throw IoError(path + ": truncated NPY header (" + std::to_string(bytes.size()) + " bytes)");
        header_len = read_le(u + 8, 4);
        offset = 12;
    } else {
        throw IoError(path + ": unsupported NPY format version " + std::to_string(major) + " (1, 2 and 3 are read)");
    }
    if (bytes.size() - offset < header_len)
        throw IoError(path + ": truncated NPY header (it declares " + std::to_string(header_len) +
                      " bytes, the file has " + std::to_string(bytes.size() - offset) + " after the preamble)");
    const std::string header = bytes.substr(offset, header_len);
    offset += header_len;

    std::string descr = dict_value(header, "descr", path);
    if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"') || descr.back() != descr.front())
        throw IoError(path + ": unsupported NPY dtype " + clip(descr) + " (structured arrays are not supported)");
    descr = descr.substr(1, descr.size() - 2);
    const std::string fortran_text = dict_value(header, "fortran_order", path);
    if (fortran_text != "True" && fortran_text != "False")
        throw IoError(path + ": NPY 'fortran_order' must be True or False, got " + clip(fortran_text));
    NpyLayout L;
    L.fortran = fortran_text == "True";
    const std::vector<Index> shape = parse_shape(dict_value(header, "shape", path), path);

    const std::string bad_dtype =
        path + ": unsupported NPY dtype '" + clip(descr) + "' (use float32/float64 or integers)";
    if (descr.size() < 3 || descr.size() > 3 || std::string("<>|=").find(descr[0]) == std::string::npos)
        throw IoError(bad_dtype);
    const char order = descr[0];
    const char kind = descr[1];
    const int size = descr[2] - '0';
    const bool big = order == '>' || (order == '=' && !host_is_little_endian());
    L.swap = size > 1 && (big == host_is_little_endian());
    L.element_size = size;
    L.descr = descr;

    if (shape.empty() || shape.size() > 2)
        throw IoError(path + ": expected a 1-D or 2-D array, got " + std::to_string(shape.size()) + "-D");
    const Index n = shape[0];
    const Index k = shape.size() == 2 ? shape[1] : 1;
    if (n == 0 || k == 0) throw IoError(path + ": the array is empty (shape " + std::to_string(n) + " x " + std::to_string(k) + ")");
    L.rows = n;
    L.cols = k;

    if (kind == 'f' && size == 4) L.load = load_as_double<float>;
    else if (kind == 'f' && size == 8) L.load = load_as_double<double>;
    else if (kind == 'i' && size == 1) L.load = load_as_double<std::int8_t>;
    else if (kind == 'i' && size == 2) L.load = load_as_double<std::int16_t>;
    else if (kind == 'i' && size == 4) L.load = load_as_double<std::int32_t>;
    else if (kind == 'i' && size == 8) L.load = load_as_double<std::int64_t>;
    else if (kind == 'u' && size == 1) L.load = load_as_double<std::uint8_t>;
    else if (kind == 'u' && size == 2) L.load = load_as_double<std::uint16_t>;
    else if (kind == 'u' && size == 4) L.load = load_as_double<std::uint32_t>;
    else if (kind == 'u' && size == 8) L.load = load_as_double<std::uint64_t>;
    else if (kind == 'b' && size == 1) L.load = load_as_double<std::uint8_t>;
    else
        throw IoError(bad_dtype);

    // The shape must fit in the bytes that follow the header: checked before anything is allocated
    // (and without overflow: n and k come from the file).
    const std::size_t have = file_size - offset;
    const std::size_t elements_there = have / static_cast<std::size_t>(size);
    if (static_cast<std::size_t>(n) > elements_there / static_cast<std::size_t>(k)) {
        std::ostringstream msg;
        msg << path << ": truncated NPY data: the header declares shape (" << n << ", " << k << ") of '" << descr
            << "', ";
        if (static_cast<std::size_t>(n) <= std::numeric_limits<std::size_t>::max() / static_cast<std::size_t>(k) /
                                               static_cast<std::size_t>(size))
            msg << static_cast<std::size_t>(n) * static_cast<std::size_t>(k) * static_cast<std::size_t>(size)
                << " bytes";
        else
            msg << "more bytes than any file can hold";
        msg << ", but the file has " << have << " after the header";
        throw IoError(msg.str());
    }
    L.data_offset = offset;
    return L;
}

namespace {

// Decodes `count` rows starting at row `first` from `data`, which holds the file's data bytes
// [begin, begin + data.size()) relative to the data section; NaN/Inf are errors, named as element
// [row, column + d] (`column`: the first column these bytes hold).
meanshift::MatrixD decode_rows(const NpyLayout& L, const unsigned char* data, std::size_t begin, Index first,
                               Index count, const std::string& path, Index column = 0)
{
    const std::size_t size = static_cast<std::size_t>(L.element_size);
    meanshift::MatrixD m(count, L.cols);
    for (Index i = 0; i < count; ++i) {
        for (Index d = 0; d < L.cols; ++d) {
            const Index row = first + i;
            const Index src = L.fortran ? d * L.rows + row : row * L.cols + d;
            const double v = L.load(data + (static_cast<std::size_t>(src) * size - begin), L.swap);
            if (!std::isfinite(v)) {
                std::ostringstream msg;
                msg << path << ": element [" << row << ", " << column + d << "] (0-based) is " << v
                    << " (NaN and Inf are not allowed)";
                throw IoError(msg.str());
            }
            m(i, d) = v;
        }
    }
    return m;
}

}  // namespace

meanshift::MatrixD read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

meanshift::MatrixD parse_npy(const std::string& bytes, const std::string& path)
{
    const NpyLayout L = parse_npy_layout(bytes, path, bytes.size());
    const auto* u = reinterpret_cast<const unsigned char*>(bytes.data()) + L.data_offset;
    return decode_rows(L, u, 0, 0, L.rows, path);
}

NpyLayout read_npy_layout(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    if (!f) throw IoError(path + ": cannot open: " + std::strerror(errno));
    f.seekg(0, std::ios::end);
    const std::size_t file_size = static_cast<std::size_t>(f.tellg());
    f.seekg(0);
    // Preamble, then the header it declares (at most 4 GiB in format 2/3; bounded by the file).
    std::string head(std::min<std::size_t>(file_size, 12), '\0');
    f.read(head.data(), static_cast<std::streamsize>(head.size()));
    if (head.size() >= 10 && head.compare(0, 6, "\x93NUMPY") == 0) {
        const auto* u = reinterpret_cast<const unsigned char*>(head.data());
        const std::size_t header_len = u[6] == 1 ? read_le(u + 8, 2) : head.size() >= 12 ? read_le(u + 8, 4) : 0;
        const std::size_t want = std::min(file_size, (u[6] == 1 ? 10 : 12) + header_len);
        if (want > head.size()) {
            head.resize(want);
            f.seekg(0);
            f.read(head.data(), static_cast<std::streamsize>(want));
        }
    }
    if (!f) throw IoError(path + ": read failed: " + std::strerror(errno));
    return parse_npy_layout(head, path, file_size);
}

meanshift::MatrixD read_npy_rows(const std::string& path, const NpyLayout& L, Index first, Index count)
{
    if (first < 0 || count < 0 || first > L.rows || count > L.rows - first)
        throw IoError(path + ": rows [" + std::to_string(first) + ", " + std::to_string(first + count) +
                      ") are outside the array's " + std::to_string(L.rows) + " rows");
    if (count == 0) return meanshift::MatrixD(0, L.cols);
    std::ifstream f(path, std::ios::binary);
    if (!f) throw IoError(path + ": cannot open: " + std::strerror(errno));
    const std::size_t size = static_cast<std::size_t>(L.element_size), k = static_cast<std::size_t>(L.cols);
    const std::size_t n = static_cast<std::size_t>(L.rows);
    auto read_at = [&](std::size_t begin, std::size_t length) {
        std::string bytes(length, '\0');
        f.seekg(static_cast<std::streamoff>(L.data_offset + begin));
        f.read(bytes.data(), static_cast<std::streamsize>(length));
        if (!f) throw IoError(path + ": read failed (rows from " + std::to_string(first) + "): " + std::strerror(errno));
        return bytes;
    };
    if (!L.fortran) {  // C order: the rows are one contiguous block
        const std::size_t begin = static_cast<std::size_t>(first) * k * size;
        const std::string bytes = read_at(begin, static_cast<std::size_t>(count) * k * size);
        return decode_rows(L, reinterpret_cast<const unsigned char*>(bytes.data()), begin, first, count, path);
    }
    // Fortran order: one block per column.
    meanshift::MatrixD m(count, L.cols);
    NpyLayout column = L;
    column.cols = 1;
    column.fortran = false;
    for (Index d = 0; d < L.cols; ++d) {
        const std::size_t begin = (static_cast<std::size_t>(d) * n + static_cast<std::size_t>(first)) * size;
        const std::string bytes = read_at(begin, static_cast<std::size_t>(count) * size);
        m.col(d) = decode_rows(column, reinterpret_cast<const unsigned char*>(bytes.data()),
                               static_cast<std::size_t>(first) * size, first, count, path, d);
    }
    return m;
}

std::string npy_float_bytes(const meanshift::MatrixF& m)
{
    std::string out = npy_header("<f4", {m.rows(), m.cols()});
    out.reserve(out.size() + static_cast<std::size_t>(m.size()) * 4);
    for (Index i = 0; i < m.size(); ++i) append_le<float>(out, m.data()[i]);
    return out;
}

std::string npy_int_bytes(const std::vector<int>& v, const std::vector<Index>& shape)
{
    std::string out = npy_header("<i4", shape);
    out.reserve(out.size() + v.size() * 4);
    for (int x : v) append_le<std::int32_t>(out, static_cast<std::int32_t>(x));
    return out;
}

}  // namespace mscli
