#pragma once
/// @file memory.hpp
/// The memory a run of the tool will need, estimated before anything large is allocated, and the
/// budget it is checked against (`--max-memory MB`, else the memory the machine has available).
/// A run whose estimate exceeds the budget is refused with the estimate and the budget, instead of
/// failing later with a bare "out of memory" (or being killed by the kernel) after minutes.
///
/// The per-point and per-pixel constants were measured as the peak resident set of the tool
/// (/usr/bin/time -v, "Maximum resident set size") at several sizes, the slope between sizes
/// being the cost per point or pixel (docs/cli.md, "Memory"); they are rounded up.

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace mscli {

/// Segment, per pixel of the decoded image: stb_image's buffers (the inflated scanlines and the
/// image, up to 4 bytes each), our RGB copy (3); rounded up. The file's bytes come on top.
constexpr double kDecodeBytesPerPixel = 12;
/// Segment, per pixel that is segmented (after --max-pixels): CIELAB values, the library's points
/// (x, y, L*, a*, b*), modes, grid, labels, region steps and the three output images. Measured
/// 388 bytes per pixel at full size (decoding included; 100,000 to 400,000 pixels).
constexpr double kSegmentBytesPerPixel = 400;
/// Cluster and bench, per point, independent of k (labels, flags, seeds, the grouping), and per
/// point and dimension (the matrix as read in float64 and as float32, the prepared copy, the
/// grid, the modes, the outputs' text). Measured slopes with the default options (bin seeding,
/// the grid search; --seeding all and --exact need less): 110 bytes per point at k = 2, 235 at 4,
/// 877 at 8, 1,738 at 16, 3,412 at 32; 64 + 112 k bounds them all.
constexpr double kClusterBytesPerPoint = 64;
constexpr double kClusterBytesPerValue = 112;

/// Bytes the machine has available now: MemAvailable in /proc/meminfo, else free pages
/// (sysconf). 0 if neither can be read.
std::uint64_t available_memory();

/// "3.2 GB", "512 MB", "12 kB": decimal units, 2 significant digits.
std::string format_bytes(double bytes);

/// `--max-memory MB` on a subcommand: the budget memory estimates are checked against.
struct MemoryOption {
    std::string text = "auto";  ///< "auto" (the available memory), a number of MB > 0, or 0 (no check)

    void add_to(CLI::App& app);
    /// The budget in bytes (0 = no check) and how to name it in a message.
    double budget(std::string& name) const;
    /// Throws meanshift::InvalidArgument "<what> needs about X (<how>), more than <the budget>;
    /// <hint>" when `need_bytes` exceeds the budget.
    void check(double need_bytes, const std::string& what, const std::string& how, const std::string& hint) const;
    /// The same budget as meanshift::Options::max_memory (bytes): "auto" -> 0 (the library checks
    /// against the available memory), "0" -> SIZE_MAX (no check), N -> N MB.
    std::size_t library_budget() const;
};

/// Estimated peak bytes of segmenting an image of `pixels` pixels (`segmented` after --max-pixels)
/// read from a file of `file_bytes`.
double segment_memory(double pixels, double segmented, double file_bytes);

/// Size of a file in bytes (0 if it cannot be read: the reader reports that).
double file_size(const std::string& path);

/// Estimated peak bytes of clustering n points of k dimensions (`input_bytes`: the file as read).
double cluster_memory(double n, double k, double input_bytes);

}  // namespace mscli
