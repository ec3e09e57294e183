// meanshift backends [--json]: what is compiled in, what is usable here, and why not.
#include "commands.hpp"
#include "image_codecs.hpp"

#include <meanshift/meanshift.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>

namespace mscli {
namespace {

void run_backends(bool json)
{
    const std::vector<meanshift::BackendStatus> all = meanshift::list_backends();
    std::string auto_name;
    try {
        auto_name = meanshift::resolve_auto_backend();
    } catch (const meanshift::Error& e) {
        auto_name = std::string("none (") + e.what() + ")";
    }
    if (json) {
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (const auto& s : all) {
            nlohmann::ordered_json devs = nlohmann::ordered_json::array();
            for (const auto& d : s.devices)
                devs.push_back({{"index", d.index},
                                {"name", d.name},
                                {"kind", d.kind},
                                {"compute_units", d.compute_units},
                                {"pus_per_ppu", d.pus_per_ppu},
                                {"global_memory", d.global_memory},
                                {"local_memory", d.local_memory}});
            out.push_back({{"name", s.name},
                           {"compiled_in", s.compiled_in},
                           {"usable", s.usable},
                           {"reason", s.reason},
                           {"devices", devs}});
        }
        std::printf(
            "%s\n",
            nlohmann::ordered_json{{"backends", out}, {"auto", auto_name}, {"image_codecs", image_codecs_summary()}}
                .dump()
                .c_str());
        return;
    }
    for (const auto& s : all) {
        const char* state = s.usable ? "usable" : "unavailable";
        std::printf("%-7s %s", s.name.c_str(), state);
        if (!s.usable && !s.reason.empty()) std::printf(": %s", s.reason.c_str());
        std::printf("\n");
        for (const auto& d : s.devices) {
            std::printf("          [%d] %s (%s", d.index, d.name.c_str(), d.kind.c_str());
            if (d.compute_units > 0) std::printf(", %d compute units", d.compute_units);
            if (d.pus_per_ppu > 0) std::printf(", %d PUs each", d.pus_per_ppu);
            if (d.global_memory > 0) std::printf(", %.1f GiB", static_cast<double>(d.global_memory) / (1 << 30));
            std::printf(")\n");
        }
    }
    std::printf("auto -> %s\n", auto_name.c_str());
    std::printf("image codecs (segment): %s\n", image_codecs_summary().c_str());
}

}  // namespace

void add_backends_command(CLI::App& app, Mode mode)
{
    auto json = std::make_shared<bool>(false);
    CLI::App* sub = app.add_subcommand("backends", "List backends and devices, with reasons for unavailable ones");
    sub->add_flag("--json", *json, "machine-readable output (one JSON object)");
    sub->callback([json, mode] {
        if (mode == Mode::Run) run_backends(*json);
    });
}

}  // namespace mscli
