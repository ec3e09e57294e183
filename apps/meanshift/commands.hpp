#pragma once
/// @file commands.hpp
/// Each subcommand registers itself on the CLI11 app; its callback checks the arguments, then runs
/// the command and throws meanshift::Error (or a subclass) on failure, which main() turns into a
/// one-line message.

#include <CLI/CLI.hpp>

#include <string>

namespace mscli {

/// What a subcommand's callback does after its argument checks: Run (the tool), or CheckOnly
/// (no file is read or written and nothing is computed: the option-parsing fuzz target).
enum class Mode { Run, CheckOnly };

void add_cluster_command(CLI::App& app, Mode mode = Mode::Run);  ///< meanshift cluster IN -o OUT
void add_segment_command(CLI::App& app, Mode mode = Mode::Run);  ///< meanshift segment IMAGE -o OUT.png
void add_backends_command(CLI::App& app, Mode mode = Mode::Run);  ///< meanshift backends
void add_bench_command(CLI::App& app, Mode mode = Mode::Run);  ///< meanshift bench --n N --dims K ...
void add_calibrate_command(CLI::App& app, Mode mode = Mode::Run);  ///< meanshift calibrate [--k 16,64,384]

/// The whole `meanshift` app: name, version flag, the subcommands.
void setup_app(CLI::App& app, Mode mode = Mode::Run);

/// "unknown command 'X' (commands: cluster, ...)" when the command line's command is not one of
/// the app's subcommands (CLI11 would only say that a subcommand is required); "" otherwise.
std::string unknown_command(CLI::App& app, int argc, const char* const* argv);

}  // namespace mscli
