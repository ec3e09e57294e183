#pragma once
/// @file io_matrix.hpp
/// Reading and writing numeric matrices for the `meanshift` tool (not part of the library).
/// The format follows the file name's extension: ".csv" (text) or ".npy" (NumPy binary).
/// Every failure throws meanshift::IoError with a one-line message naming the file and,
/// for CSV, the line and column.

#include <meanshift/types.hpp>

#include <optional>
#include <string>
#include <vector>

namespace mscli {

enum class MatrixFormat { Csv, Npy };

/// Format from the extension (case-insensitive). Throws IoError for any other extension.
MatrixFormat format_of(const std::string& path);

/// Reads an n × k matrix of finite numbers (n ≥ 1, k ≥ 1). A 1-D NPY array or a one-column CSV
/// gives k = 1. NaN, ±Inf, non-numeric fields and ragged rows are errors.
meanshift::MatrixD read_matrix(const std::string& path);

/// CSV reader (libcsv). Delimiter: ',' ';' or tab if the first data line has one (in that order),
/// else runs of spaces. Lines starting with '#' and empty lines are skipped; a first line whose
/// fields are all non-numeric is a header and is skipped.
meanshift::MatrixD read_csv(const std::string& path);
/// Parses CSV text (same rules as read_csv); `name` is used in messages.
meanshift::MatrixD parse_csv(std::string text, const std::string& name);

/// NPY reader (format versions 1-3): dtypes f4, f8, i1-i8, u1-u8 in either byte order, C or
/// Fortran order, 1-D or 2-D. The declared shape is checked against the file size before anything
/// is allocated.
meanshift::MatrixD read_npy(const std::string& path);
/// Parses NPY bytes (same rules as read_npy); `name` is used in messages.
meanshift::MatrixD parse_npy(const std::string& bytes, const std::string& name);

/// An NPY file's array, from its header: rows × cols of one dtype at `data_offset`.
struct NpyLayout {
    meanshift::Index rows = 0, cols = 0;
    bool fortran = false;  ///< column-major data
    int element_size = 0;  ///< bytes per element
    bool swap = false;  ///< byte order differs from the host's
    std::string descr;  ///< e.g. "<f4"
    double (*load)(const unsigned char*, bool) = nullptr;
    std::size_t data_offset = 0;
};
/// The header of `bytes` (at least the preamble and the header), checked as read_npy checks it,
/// with the shape checked against `file_size`. Throws IoError.
NpyLayout parse_npy_layout(const std::string& bytes, const std::string& name, std::size_t file_size);
/// Reads only an NPY file's header (the shape, for splitting the rows between MPI ranks).
NpyLayout read_npy_layout(const std::string& path);
/// Rows [first, first + count) of the array `layout` describes, reading only their bytes
/// (C order: one block; Fortran order: one block per column). NaN/Inf and rows outside the array
/// are IoError.
meanshift::MatrixD read_npy_rows(const std::string& path, const NpyLayout& layout, meanshift::Index first,
                                 meanshift::Index count);

/// The array of an NPY file of float32 in C order and the host's byte order, read straight into
/// the matrix (NaN/Inf are IoError, named as read_npy names them); std::nullopt for any other dtype
/// or order (read_matrix then decodes it).
std::optional<meanshift::MatrixF> read_npy_float32(const std::string& path);

/// File contents, for OutputFiles (output_files.hpp). NPY: format 1.0, little-endian, C order.
std::string npy_float_bytes(const meanshift::MatrixF& m);  ///< '<f4'
std::string npy_int_bytes(const std::vector<int>& values, const std::vector<meanshift::Index>& shape);  ///< '<i4'
/// n × k float32 matrix: CSV with 9 significant digits (round-trips float32), or NPY '<f4'.
std::string matrix_bytes(MatrixFormat format, const meanshift::MatrixF& m);
/// rows × cols integer matrix, values row-major: CSV, or NPY '<i4'.
std::string int_matrix_bytes(MatrixFormat format, const std::vector<int>& values, meanshift::Index rows,
                             meanshift::Index cols);
/// One label per line (CSV) or a 1-D '<i4' array (NPY).
std::string labels_bytes(MatrixFormat format, const std::vector<int>& labels);

/// Single-file writers (temporary file + rename, see output_files.hpp); the format follows the
/// extension.
void write_matrix(const std::string& path, const meanshift::MatrixF& m);
void write_int_matrix(const std::string& path, const std::vector<int>& values, meanshift::Index rows,
                      meanshift::Index cols);
void write_labels(const std::string& path, const std::vector<int>& labels);

/// "out.csv" -> "out.centres.csv": the sibling file that receives the cluster centres.
std::string sibling_path(const std::string& path, const std::string& tag);

/// Whole file as bytes; throws IoError (with the system's reason) if it cannot be read or is a
/// folder.
std::string read_file(const std::string& path);

}  // namespace mscli
