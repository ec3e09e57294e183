#pragma once
/// @file io_matrix.hpp
/// Reading and writing numeric matrices for the `meanshift` tool (not part of the library).
/// The format follows the file name's extension: ".csv" (text) or ".npy" (NumPy binary).
/// Every failure throws meanshift::IoError with a one-line message naming the file and,
/// for CSV, the line and column.

#include <meanshift/types.hpp>

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
/// Fortran order, 1-D or 2-D.
meanshift::MatrixD read_npy(const std::string& path);

/// NPY writers (format 1.0, little-endian '<f4' / '<i4', C order).
void write_npy_float(const std::string& path, const meanshift::MatrixF& m);
void write_npy_int(const std::string& path, const std::vector<int>& values,
                   const std::vector<meanshift::Index>& shape);

/// Writes an n × k matrix (float32 values; CSV with 9 significant digits, NPY as '<f4').
void write_matrix(const std::string& path, const meanshift::MatrixF& m);
/// Writes an n × k integer matrix (CSV, or NPY as '<i4'); `cols` = k, values row-major.
void write_int_matrix(const std::string& path, const std::vector<int>& values, meanshift::Index rows,
                      meanshift::Index cols);
/// Writes one label per line (CSV) or a 1-D '<i4' array (NPY).
void write_labels(const std::string& path, const std::vector<int>& labels);

/// "out.csv" -> "out.centres.csv": the sibling file that receives the cluster centres.
std::string sibling_path(const std::string& path, const std::string& tag);

/// Whole file as bytes; throws IoError if it cannot be read.
std::string read_file(const std::string& path);

}  // namespace mscli
