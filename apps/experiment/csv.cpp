#include "csv.hpp"

#include <meanshift/errors.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

namespace experiment {
namespace {

const char* const kColumns[] = {"sweep",
                                "backend",
                                "device",
                                "kernel",
                                "n",
                                "k",
                                "m",
                                "z",
                                "tau",
                                "f_vppu",
                                "f_load",
                                "preload",
                                "preload_size",
                                "threads",
                                "iterations",
                                "repeats",
                                "seconds",
                                "seconds_min",
                                "seconds_max",
                                "pairs_per_second",
                                "utilisation",
                                "predicted",
                                "error",
                                "error_max",
                                "speedup",
                                "candidates",
                                "note"};

std::string quote(const std::string& s)
{
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
    return q + "\"";
}

std::string num(double v)
{
    if (!std::isfinite(v)) return "";
    std::ostringstream o;
    o.precision(9);
    o << v;
    return o.str();
}

std::vector<std::string> split_line(const std::string& line)
{
    std::vector<std::string> cells;
    std::string cur;
    bool in_quotes = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (in_quotes) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                cur += '"';
                ++i;
            } else if (c == '"') {
                in_quotes = false;
            } else {
                cur += c;
            }
        } else if (c == '"') {
            in_quotes = true;
        } else if (c == ',') {
            cells.push_back(cur);
            cur.clear();
        } else if (c != '\r') {
            cur += c;
        }
    }
    cells.push_back(cur);
    return cells;
}

}  // namespace

std::string header()
{
    std::string h;
    for (const char* c : kColumns) h += (h.empty() ? "" : ",") + std::string(c);
    return h;
}

std::string format(const Row& r)
{
    std::ostringstream o;
    o << quote(r.sweep) << ',' << quote(r.backend) << ',' << quote(r.device) << ',' << r.kernel << ',' << r.n << ','
      << r.k << ',' << r.m << ',' << r.z << ',' << r.tau << ',' << r.f_vppu << ',' << r.f_load << ',' << r.preload
      << ',' << r.preload_size << ',' << r.threads << ',' << r.iterations << ',' << r.repeats << ',' << num(r.seconds)
      << ',' << num(r.seconds_min) << ',' << num(r.seconds_max) << ',' << num(r.pairs_per_second) << ','
      << num(r.utilisation) << ',' << num(r.predicted) << ',' << (r.error >= 0 ? num(r.error) : "") << ','
      << (r.error_max >= 0 ? num(r.error_max) : "") << ',' << (r.speedup > 0 ? num(r.speedup) : "") << ','
      << (r.candidates > 0 ? num(r.candidates) : "") << ',' << quote(r.note);
    return o.str();
}

CsvWriter::CsvWriter(const std::string& path, bool echo) : echo_(echo)
{
    if (path != "-") {
        file_ = std::make_unique<std::ofstream>(path);
        if (!*file_) throw meanshift::IoError("cannot open '" + path + "' for writing");
        *file_ << header() << '\n';
        file_->flush();
    } else {
        std::cout << header() << '\n';
    }
}

CsvWriter::~CsvWriter() = default;

void CsvWriter::write(const Row& r)
{
    const std::string line = format(r);
    if (file_) {
        *file_ << line << '\n';
        file_->flush();
        if (!*file_) throw meanshift::IoError("write to the CSV file failed");
    } else {
        std::cout << line << std::endl;
    }
    if (!echo_) return;
    std::cerr << r.sweep << ' ' << r.backend << " n=" << r.n << " m=" << r.m << " z=" << r.z << " tau=" << r.tau
              << " f_vppu=" << r.f_vppu << " f_load=" << r.f_load << (r.preload ? " preload" : "")
              << (r.threads ? " threads=" + std::to_string(r.threads) : std::string()) << "  " << r.seconds << " s"
              << (r.error >= 0 ? "  E=" + num(r.error) : std::string()) << (r.note.empty() ? "" : "  [" + r.note + "]")
              << '\n';
}

std::vector<Row> read_csv(const std::string& path)
{
    std::ifstream in(path);
    if (!in) throw meanshift::IoError("cannot open '" + path + "'");
    std::string line;
    if (!std::getline(in, line)) throw meanshift::IoError("'" + path + "' is empty");
    const std::vector<std::string> names = split_line(line);
    std::map<std::string, std::size_t> col;
    for (std::size_t i = 0; i < names.size(); ++i) col[names[i]] = i;
    for (const char* need : {"n", "k", "m", "seconds"})
        if (!col.count(need))
            throw meanshift::IoError("'" + path + "' has no column '" + need + "' (not a meanshift-experiment CSV?)");

    std::vector<Row> rows;
    long line_no = 1;
    while (std::getline(in, line)) {
        ++line_no;
        if (line.empty()) continue;
        const std::vector<std::string> cells = split_line(line);
        auto cell = [&](const char* name) -> std::string {
            auto it = col.find(name);
            return it != col.end() && it->second < cells.size() ? cells[it->second] : std::string();
        };
        auto d = [&](const char* name, double dflt) {
            const std::string s = cell(name);
            if (s.empty()) return dflt;
            try {
                return std::stod(s);
            } catch (const std::exception&) {
                throw meanshift::IoError(path + ":" + std::to_string(line_no) + ": column '" + name +
                                         "' is not a number: '" + s + "'");
            }
        };
        Row r;
        r.sweep = cell("sweep");
        r.backend = cell("backend");
        r.device = cell("device");
        r.kernel = cell("kernel").empty() ? "shared" : cell("kernel");
        r.n = static_cast<long long>(d("n", 0));
        r.k = static_cast<int>(d("k", 0));
        r.m = static_cast<long long>(d("m", 0));
        r.z = static_cast<int>(d("z", 0));
        r.tau = static_cast<int>(d("tau", 0));
        r.f_vppu = static_cast<int>(d("f_vppu", 0));
        r.f_load = static_cast<int>(d("f_load", 0));
        r.preload = static_cast<int>(d("preload", 0));
        r.preload_size = static_cast<int>(d("preload_size", 0));
        r.threads = static_cast<int>(d("threads", 0));
        r.iterations = static_cast<int>(d("iterations", 1));
        r.repeats = static_cast<int>(d("repeats", 0));
        r.seconds = d("seconds", 0);
        r.seconds_min = d("seconds_min", 0);
        r.seconds_max = d("seconds_max", 0);
        r.pairs_per_second = d("pairs_per_second", 0);
        r.utilisation = d("utilisation", 0);
        r.predicted = d("predicted", 0);
        r.error = d("error", -1);
        r.error_max = d("error_max", -1);
        r.speedup = d("speedup", 0);
        r.candidates = d("candidates", 0);
        r.note = cell("note");
        rows.push_back(r);
    }
    return rows;
}

}  // namespace experiment
