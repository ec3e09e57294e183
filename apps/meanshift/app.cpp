#include "commands.hpp"

#include "text.hpp"

#include <meanshift/meanshift.hpp>

#include <string>

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
    add_calibrate_command(app, mode);
}

std::string unknown_command(CLI::App& app, int argc, const char* const* argv)
{
    // The top-level app has only flags (--help, --version), so its first argument that is not an
    // option is the command.
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (!arg.empty() && arg[0] == '-') continue;
        std::string names;
        for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
            if (sub->check_name(arg)) return {};
            names += (names.empty() ? "" : ", ") + sub->get_name();
        }
        return "unknown command '" + clip(arg) + "' (commands: " + names + ")";
    }
    return {};
}

}  // namespace mscli
