#include "commands.hpp"

#include <meanshift/meanshift.hpp>

namespace mscli {

void setup_app(CLI::App& app, Mode mode)
{
    app.description("Gaussian mean shift clustering on CPUs and GPUs (meanshift-skeleton " MEANSHIFT_VERSION_STRING
                    ").\nRun `meanshift COMMAND --help` for a command's options; docs/cli.md has examples.");
    app.name("meanshift");
    app.set_version_flag("--version", MEANSHIFT_VERSION_STRING);
    app.require_subcommand(1);
    add_cluster_command(app, mode);
    add_segment_command(app, mode);
    add_backends_command(app, mode);
    add_bench_command(app, mode);
}

}  // namespace mscli
