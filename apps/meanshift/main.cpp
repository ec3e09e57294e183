// `meanshift`: command-line front end of meanshift-skeleton (cluster, segment, backends, bench).
#include "commands.hpp"
#include "text.hpp"

#include <meanshift/meanshift.hpp>

#include <CLI/CLI.hpp>

#ifdef MEANSHIFT_CLI_MPI
#include <meanshift/mpi.hpp>

#include <cstdlib>
#endif

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

#ifdef MEANSHIFT_CLI_MPI
// Built with MPI (docs/mpi.md): MPI is initialised only when mpirun/mpiexec (Open MPI, or a PMI/PMIx
// launcher) started the tool, so a plain `meanshift ...` behaves exactly as without MPI.
bool launched_by_mpirun()
{
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
        if (std::getenv(v)) return true;
    return false;
}

int rank_ = 0, size_ = 1;

// Under mpirun: only `cluster` is distributed; another command would run R times on the same files.
bool command_allowed(int argc, char** argv)
{
    if (size_ <= 1) return true;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.empty() || a[0] == '-') continue;
        return a == "cluster";
    }
    return true;  // no command: --help, --version
}
#endif

int run(int argc, char** argv);

}  // namespace

int main(int argc, char** argv)
{
#ifdef MEANSHIFT_CLI_MPI
    if (launched_by_mpirun()) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
        MPI_Comm_size(MPI_COMM_WORLD, &size_);
        int status = 2;
        if (!command_allowed(argc, argv)) {
            if (rank_ == 0) print_error("under mpirun only the cluster command runs distributed (docs/mpi.md)");
        } else {
            status = run(argc, argv);
        }
        MPI_Finalize();
        return status;
    }
#endif
    return run(argc, argv);
}

namespace {

int run(int argc, char** argv)
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
#ifdef MEANSHIFT_CLI_MPI
        if (rank_ != 0) return e.get_exit_code() == 0 ? 0 : 2;  // the same on every rank: rank 0 says it
#endif
        if (e.get_exit_code() == 0) return check_stdout(app.exit(e));  // --help, --version
        const std::string unknown = mscli::unknown_command(app, argc, argv);
        print_error(unknown.empty() ? std::string(e.what()) : unknown, " (see meanshift --help)");
        return 2;
    } catch (const meanshift::Error& e) {
#ifdef MEANSHIFT_CLI_MPI
        // Every rank throws the agreed error (mpi::agree): rank 0 reports it once.
        if (dynamic_cast<const meanshift::mpi::DistributedError*>(&e) && rank_ != 0) return 1;
#endif
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

}  // namespace
