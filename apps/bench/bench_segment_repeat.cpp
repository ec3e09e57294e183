// Segmentation timing with the device warm: loads a photo, converts it to CIELAB as the CLI does,
// and runs meanshift::segment_image R times in one process with the defaults the CLI also uses
// (hs 3, hr 6, min-region 40, SegmentOptions::filtering_defaults: cutoff 4, tolerance 0.3, 5 iterations).
// The first run pays the one-time costs (CUDA context and module load, OpenCL program build);
// the later runs are what a process segmenting many photos gets. One JSON line per run.
//   bench_segment_repeat IMAGE BACKEND [REPEATS=4]
#include "colour.hpp"
#include "io_image.hpp"

#include <meanshift/segmentation.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
    if (argc < 3) {
        std::fprintf(stderr, "usage: bench_segment_repeat IMAGE BACKEND [REPEATS=4]\n");
        return 2;
    }
    const mscli::RgbImage img = mscli::load_rgb(argv[1]);
    const int repeats = argc > 3 ? std::atoi(argv[3]) : 4;
    std::vector<float> lab(img.count() * 3);
    for (std::size_t i = 0; i < img.count(); ++i)
        mscli::srgb_to_lab(img.pixels[3 * i], img.pixels[3 * i + 1], img.pixels[3 * i + 2], &lab[3 * i]);
    meanshift::SegmentOptions so;  // the library's filtering defaults = the CLI's
    so.meanshift.backend = argv[2];
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const meanshift::Segmentation s = meanshift::segment_image(lab.data(), img.height, img.width, 3, so);
        const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const meanshift::Timing& t = s.ascent.timing;
        std::printf("{\"image\": \"%s\", \"backend\": \"%s\", \"run\": %d, \"pixels\": %d, \"segments\": %zu, "
                    "\"seconds_mean_shift\": %.4f, \"seconds_prepare\": %.4f, \"seconds_search\": %.4f, "
                    "\"seconds_bind\": %.4f, \"seconds_iterate\": %.4f, "
                    "\"seconds_kernels\": %.4f, \"seconds_group\": %.4f, \"seconds_total\": %.4f, \"iterations\": %d, "
                    "\"pairs\": %.4g, \"search\": \"%s\"}\n",
                    argv[1], s.ascent.backend.c_str(), r, img.width * img.height, s.sizes.size(), t.seconds_total,
                    t.seconds_prepare, t.seconds_search, t.seconds_bind, t.seconds_iterate, t.seconds_kernels,
                    t.seconds_group, total, t.iterations, t.pair_interactions, s.ascent.search.c_str());
    }
    return 0;
}
