#pragma once
/// @file commands.hpp
/// Each subcommand registers itself on the CLI11 app; its callback runs the command and throws
/// meanshift::Error (or a subclass) on failure, which main() turns into a one-line message.

#include <CLI/CLI.hpp>

namespace mscli {

void add_cluster_command(CLI::App& app);   ///< meanshift cluster IN -o OUT
void add_segment_command(CLI::App& app);   ///< meanshift segment IMAGE -o OUT.png
void add_backends_command(CLI::App& app);  ///< meanshift backends
void add_bench_command(CLI::App& app);     ///< meanshift bench --n N --dims K ...

}  // namespace mscli
