// CSV matrices through libcsv (Debian libcsv-dev), which does the tokenising (quotes, delimiters,
// strict-mode errors); this file only checks that every field is a finite number and every row
// has the same number of fields.
#include "io_matrix.hpp"

#include <meanshift/errors.hpp>

#include <csv.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace mscli {
namespace {

using meanshift::IoError;

struct CsvState {
    std::string name;
    bool whitespace_delimited = false;
    std::size_t line = 1;            // 1-based line of the row being read
    std::vector<std::string> row;    // fields of the current row
    std::vector<double> values;      // all rows, row-major
    std::size_t cols = 0;
    std::size_t rows = 0;
    bool header_allowed = true;      // the first data row may be a header
    std::string error;               // first error; parsing continues but is ignored after it
};

bool parse_number(const std::string& field, double& out)
{
    std::size_t b = field.find_first_not_of(" \t");
    std::size_t e = field.find_last_not_of(" \t");
    if (b == std::string::npos) return false;
    std::string s = field.substr(b, e - b + 1);
    const char* begin = s.c_str();
    char* end = nullptr;
    errno = 0;
    out = std::strtod(begin, &end);
    if (end == begin || *end != '\0') return false;
    return true;
}

void on_field(void* data, std::size_t len, void* user)
{
    auto* st = static_cast<CsvState*>(user);
    if (data == nullptr) {  // empty unquoted field
        if (st->whitespace_delimited) return;  // runs of spaces separate one field
        st->row.emplace_back();
        return;
    }
    st->row.emplace_back(static_cast<const char*>(data), len);
}

void finish_row(CsvState& st)
{
    std::vector<std::string> row;
    row.swap(st.row);
    const std::size_t line = st.line++;
    if (!st.error.empty()) return;
    if (row.empty() || (row.size() == 1 && row[0].find_first_not_of(" \t") == std::string::npos))
        return;  // blank line (or a comment line blanked before parsing)

    std::vector<double> v(row.size());
    std::size_t bad = row.size();
    std::size_t non_numeric = 0;
    for (std::size_t c = 0; c < row.size(); ++c) {
        if (!parse_number(row[c], v[c])) {
            ++non_numeric;
            if (bad == row.size()) bad = c;
        }
    }
    std::ostringstream msg;
    if (st.header_allowed && non_numeric == row.size()) {  // header line: names, skip
        st.header_allowed = false;
        return;
    }
    st.header_allowed = false;
    if (bad != row.size()) {
        msg << st.name << ": line " << line << ", column " << bad + 1 << ": '" << row[bad]
            << "' is not a number";
        st.error = msg.str();
        return;
    }
    for (std::size_t c = 0; c < row.size(); ++c) {
        if (!std::isfinite(v[c])) {
            msg << st.name << ": line " << line << ", column " << c + 1 << ": '" << row[c]
                << "' is not finite (NaN and Inf are not allowed)";
            st.error = msg.str();
            return;
        }
    }
    if (st.rows == 0) {
        st.cols = row.size();
    } else if (row.size() != st.cols) {
        msg << st.name << ": line " << line << " has " << row.size() << " fields, but earlier rows have "
            << st.cols << " (ragged rows)";
        st.error = msg.str();
        return;
    }
    st.values.insert(st.values.end(), v.begin(), v.end());
    ++st.rows;
}

void on_row(int /*terminator*/, void* user) { finish_row(*static_cast<CsvState*>(user)); }

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

int no_space(unsigned char) { return 0; }

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

    meanshift::MatrixD m(static_cast<meanshift::Index>(st.rows), static_cast<meanshift::Index>(st.cols));
    std::copy(st.values.begin(), st.values.end(), m.data());
    return m;
}

meanshift::MatrixD read_csv(const std::string& path) { return parse_csv(read_file(path), path); }

}  // namespace mscli
