// libFuzzer target: the command line of `meanshift` (CLI11 and our validators). The input is split
// at NUL bytes into arguments; the subcommands run in Mode::CheckOnly, so every check of the
// arguments runs but no file is read or written and nothing is computed.
#include "commands.hpp"
#include "fuzz_support.hpp"

#include <meanshift/errors.hpp>

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::vector<std::string> args{"meanshift"};
    std::string current;
    for (std::size_t i = 0; i < size && args.size() < 64; ++i) {
        if (data[i] == 0) {
            args.push_back(current);
            current.clear();
        } else {
            current.push_back(static_cast<char>(data[i]));
        }
    }
    if (!current.empty() && args.size() < 64) args.push_back(current);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    CLI::App app;
    mscli::setup_app(app, mscli::Mode::CheckOnly);
    try {
        app.parse(static_cast<int>(args.size()), argv.data());
    } catch (const CLI::Error& e) {  // parse errors, --help, --version
        msfuzz::check_message(e.what(), "");
    } catch (const meanshift::Error& e) {  // output name checks
        msfuzz::check_message(e.what(), "");
    }
    return 0;
}
