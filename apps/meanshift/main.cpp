// `meanshift`: command-line front end of meanshift-skeleton (cluster, segment, backends, bench).
#include "commands.hpp"
#include "text.hpp"

#include <meanshift/meanshift.hpp>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

namespace {

// One line on stderr; the text may quote the input (file names, CSV fields, NPY headers), so
// control bytes are escaped before they reach the terminal.
void print_error(const std::string& what, const char* suffix = "")
{
    std::fprintf(stderr, "meanshift: error: %s%s\n", mscli::escape_for_terminal(what).c_str(), suffix);
}

// Everything printed on stdout must have arrived (e.g. `meanshift bench > /dev/full`).
int check_stdout(int status)
{
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        print_error(std::string("cannot write to standard output (") + std::strerror(errno) + ")");
        return status == 0 ? 1 : status;
    }
    return status;
}

}  // namespace

int main(int argc, char** argv)
{
    // A file size limit (ulimit -f) makes writes fail with EFBIG, reported like any write error,
    // instead of killing the tool half-way through its outputs.
    std::signal(SIGXFSZ, SIG_IGN);

    CLI::App app;
    mscli::setup_app(app);

    // Subcommand callbacks run inside parse(), so library and I/O errors surface here too.
    try {
        app.parse(argc, argv);
        return check_stdout(0);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return check_stdout(app.exit(e));  // --help, --version
        print_error(e.what(), " (see meanshift --help)");
        return 2;
    } catch (const meanshift::Error& e) {
        print_error(e.what());
        return 1;
    } catch (const std::bad_alloc&) {
        print_error("out of memory");
        return 1;
    } catch (const std::exception& e) {
        print_error(e.what());
        return 1;
    }
}
