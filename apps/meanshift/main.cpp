// `meanshift`: command-line front end of meanshift-skeleton (cluster, segment, backends, bench).
#include "commands.hpp"

#include <meanshift/meanshift.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <new>

int main(int argc, char** argv)
{
    CLI::App app{"Gaussian mean shift clustering on CPUs and GPUs (meanshift-skeleton " MEANSHIFT_VERSION_STRING
                 ").\nRun `meanshift COMMAND --help` for a command's options; docs/cli.md has examples."};
    app.name("meanshift");
    app.set_version_flag("--version", MEANSHIFT_VERSION_STRING);
    app.require_subcommand(1);
    mscli::add_cluster_command(app);
    mscli::add_segment_command(app);
    mscli::add_backends_command(app);
    mscli::add_bench_command(app);

    // Subcommand callbacks run inside parse(), so library and I/O errors surface here too.
    try {
        app.parse(argc, argv);
        return 0;
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
        std::fprintf(stderr, "meanshift: error: %s (see meanshift --help)\n", e.what());
        return 2;
    } catch (const meanshift::Error& e) {
        std::fprintf(stderr, "meanshift: error: %s\n", e.what());
        return 1;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "meanshift: error: out of memory\n");
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "meanshift: error: %s\n", e.what());
        return 1;
    }
}
