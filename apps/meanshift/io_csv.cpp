// CSV matrices through libcsv (Debian libcsv-dev), which does the tokenising (quotes, delimiters,
// strict-mode errors); this file only checks that every field is a finite number and every row
// has the same number of fields.
#include "io_matrix.hpp"

#include "text.hpp"

#include <meanshift/errors.hpp>

#include <csv.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace mscli {
namespace {

using meanshift::IoError;

// Fields are converted as they arrive, so memory stays a small multiple of the file size (8 bytes
// per field of at least 2 bytes); only the text of the first offending field is kept.
struct CsvState {
    std::string name;
    bool whitespace_delimited = false;
    std::size_t line = 1;  // 1-based line of the row being read
    std::vector<double> row;  // values of the current row
    std::size_t fields = 0;  // fields of the current row
    std::size_t blank_fields = 0;  // of which empty or blank
    std::size_t non_numeric = 0;  // of which not numbers
    std::size_t first_bad = 0;  // 1-based column of the first field that is not a finite number
    std::string first_bad_text;  // its text (clipped)
    bool first_bad_is_nonfinite = false;
    std::size_t nul_column = 0;  // 1-based column of the first field with a NUL byte
    std::size_t nul_at = 0;  // 1-based byte of the NUL in that field
    std::vector<double> values;  // all rows, row-major
    std::size_t cols = 0;
    std::size_t rows = 0;
    bool header_allowed = true;  // the first data row may be a header
    std::string error;  // first error; parsing continues but is ignored after it
};

bool is_blank(const char* p, std::size_t len)
{
    for (std::size_t i = 0; i < len; ++i)
        if (p[i] != ' ' && p[i] != '\t') return false;
    return true;
}

// strtod on the field without surrounding blanks; the whole field must be consumed.
bool parse_number(const char* p, std::size_t len, double& out)
{
    std::size_t b = 0, e = len;
    while (b < e && (p[b] == ' ' || p[b] == '\t')) ++b;
    while (e > b && (p[e - 1] == ' ' || p[e - 1] == '\t')) --e;
    if (b == e) return false;
    const std::string s(p + b, e - b);  // NUL-terminated copy for strtod
    char* end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return end != s.c_str() && *end == '\0';
}

void on_field(void* data, std::size_t len, void* user)
{
    auto* st = static_cast<CsvState*>(user);
    if (!st->error.empty()) return;
    if (data == nullptr) {  // empty unquoted field
        if (st->whitespace_delimited) return;  // runs of spaces separate one field
        len = 0;
    }
    const char* p = data ? static_cast<const char*>(data) : "";
    ++st->fields;
    double v = 0;
    if (is_blank(p, len)) ++st->blank_fields;
    // A NUL byte would end the C string strtod reads: "3\0abc" would be taken as 3.
    if (std::memchr(p, '\0', len) != nullptr) {
        ++st->non_numeric;
        if (st->nul_column == 0) {
            st->nul_column = st->fields;
            st->nul_at = static_cast<std::size_t>(static_cast<const char*>(std::memchr(p, '\0', len)) - p) + 1;
        }
    } else if (!parse_number(p, len, v)) {
        ++st->non_numeric;
        if (st->first_bad == 0) {
            st->first_bad = st->fields;
            st->first_bad_text = clip(std::string_view(p, len));
        }
    } else if (!std::isfinite(v) && st->first_bad == 0) {
        st->first_bad = st->fields;
        st->first_bad_text = clip(std::string_view(p, len));
        st->first_bad_is_nonfinite = true;
    }
    st->row.push_back(v);
}

void finish_row(CsvState& st)
{
    const std::size_t line = st.line++;
    const std::size_t fields = st.fields;
    const std::size_t blank = st.blank_fields, non_numeric = st.non_numeric, bad = st.first_bad;
    const bool nonfinite = st.first_bad_is_nonfinite;
    const std::size_t nul = st.nul_column, nul_at = st.nul_at;
    std::string bad_text;
    bad_text.swap(st.first_bad_text);
    st.fields = st.blank_fields = st.non_numeric = st.first_bad = st.nul_column = 0;
    st.first_bad_is_nonfinite = false;
    if (!st.error.empty()) {
        st.row.clear();
        return;
    }
    if (fields == 0 || (fields == 1 && blank == 1)) {  // blank line (or a comment line blanked before parsing)
        st.row.clear();
        return;
    }
    std::ostringstream msg;
    if (st.header_allowed && non_numeric == fields && !nul) {  // header line: names, skip
        st.header_allowed = false;
        st.row.clear();
        return;
    }
    st.header_allowed = false;
    if (bad != 0 || nul != 0) {
        msg << st.name << ": line " << line << ", column " << (nul ? nul : bad) << ": ";
        if (nul)
            msg << "the field has a NUL byte (its byte " << nul_at << "; a binary file, or text in UTF-16?)";
        else if (nonfinite)
            msg << "'" << bad_text << "' is not finite (NaN and Inf are not allowed)";
        else if (bad_text.find_first_not_of(" \t") == std::string::npos)
            msg << "empty field (every field must be a number)";
        else
            msg << "'" << bad_text << "' is not a number";
        st.error = msg.str();
        return;
    }
    if (st.rows == 0) {
        st.cols = fields;
    } else if (fields != st.cols) {
        msg << st.name << ": line " << line << " has " << fields << " fields, but earlier rows have " << st.cols
            << " (ragged rows)";
        st.error = msg.str();
        return;
    }
    st.values.insert(st.values.end(), st.row.begin(), st.row.end());
    st.row.clear();
    ++st.rows;
}

void on_row(int /*terminator*/, void* user)
{
    finish_row(*static_cast<CsvState*>(user));
}

// With CSV_REPALL_NL every line end is reported, so "\r\n" is first reduced to "\n" to keep the
// line count right; comment lines are blanked (not removed) for the same reason.
void normalise(std::string& text)
{
    if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);  // UTF-8 BOM
    std::string out;
    out.reserve(text.size());
    bool line_start = true;
    bool in_comment = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char ch = text[i];
        if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
        if (ch == '\r') ch = '\n';
        if (line_start && ch == '#') in_comment = true;
        if (ch == '\n') {
            in_comment = false;
            line_start = true;
            out.push_back('\n');
            continue;
        }
        if (ch != ' ' && ch != '\t') line_start = false;
        if (!in_comment) out.push_back(ch);
    }
    text.swap(out);
}

unsigned char detect_delimiter(const std::string& text, bool& whitespace)
{
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        whitespace = false;
        if (line.find(',') != std::string::npos) return ',';
        if (line.find(';') != std::string::npos) return ';';
        if (line.find('\t') != std::string::npos) return '\t';
        break;
    }
    whitespace = true;
    return ' ';
}

int no_space(unsigned char)
{
    return 0;
}

}  // namespace

meanshift::MatrixD parse_csv(std::string text, const std::string& name)
{
    normalise(text);
    CsvState st;
    st.name = name;
    const unsigned char delim = detect_delimiter(text, st.whitespace_delimited);
    if (st.whitespace_delimited) {
        for (char& ch : text)
            if (ch == '\t') ch = ' ';
    }

    csv_parser parser;
    if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI | CSV_REPALL_NL | CSV_APPEND_NULL | CSV_EMPTY_IS_NULL) != 0)
        throw IoError(name + ": cannot initialise the CSV parser");
    std::unique_ptr<csv_parser, void (*)(csv_parser*)> guard(&parser, csv_free);
    csv_set_delim(&parser, delim);
    if (st.whitespace_delimited) csv_set_space_func(&parser, no_space);

    const std::size_t used = csv_parse(&parser, text.data(), text.size(), on_field, on_row, &st);
    if (used != text.size() || csv_fini(&parser, on_field, on_row, &st) != 0) {
        if (st.error.empty())
            st.error = name + ": line " + std::to_string(st.line) + ": malformed CSV (" +
                       csv_strerror(csv_error(&parser)) + ")";
    }
    if (!st.error.empty()) throw IoError(st.error);
    if (st.rows == 0) throw IoError(name + ": no data rows");

    std::string().swap(text);
    meanshift::MatrixD m(static_cast<meanshift::Index>(st.rows), static_cast<meanshift::Index>(st.cols));
    std::copy(st.values.begin(), st.values.end(), m.data());
    return m;
}

meanshift::MatrixD read_csv(const std::string& path)
{
    return parse_csv(read_file(path), path);
}

}  // namespace mscli
