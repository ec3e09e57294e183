#pragma once
/// @file calibration.hpp
/// The calibration cache ("wisdom", as FFTW keeps it): crossovers that depend on the CPU more than
/// on the data - the openmp backend's direct vs GEMM form of the pair exponents and, where Intel AMX
/// runs, AMX vs Eigen products - are measured on the machine the first time a configuration is met
/// (a short run, well under a second) and kept in a JSON file. An entry is keyed by the machine (CPU
/// model, ISA features, hardware threads), the build (library version, compiler), the backend and
/// its device (threads, instruction set), the kernel model and a bucket of k. Location, options and
/// the file's format: docs/tuning.md, "Calibration". BackendOptions::calibration turns it off
/// (the fixed default rule), re-runs it, and BackendOptions::calibration_file moves the file.

#include <meanshift/backend.hpp>
#include <meanshift/export.hpp>
#include <meanshift/tuning.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace meanshift {

/// One measured candidate: a form's name and its wall seconds for the same work (lower is faster).
struct CalibrationTiming {
    std::string form;
    double seconds = 0;
};

/// One configuration's measurement, as the file keeps it.
struct CalibrationEntry {
    std::string key;  ///< calibration_key() of the fields below
    std::string backend;  ///< "openmp"
    std::string device;  ///< the backend's device, e.g. "2 threads, AVX2"
    std::string model;  ///< "shared" or "per-point" (KernelModel)
    int k_bucket = 0;  ///< calibration_k_bucket(k)
    std::vector<CalibrationTiming> timings;  ///< every candidate form measured
    std::string choice;  ///< the form the defaults take: choose_fastest(timings)
    std::string measured;  ///< UTC time of the measurement, ISO 8601
};

/// Where the cache lives unless BackendOptions::calibration_file says otherwise:
/// $XDG_CACHE_HOME/meanshift/calibration.json, else $HOME/.cache/meanshift/calibration.json, else
/// "" (no cache: every process measures for itself once per configuration).
MEANSHIFT_API std::string default_calibration_file();

/// The machine part of the key: CPU model name, the ISA features that select kernels (AVX2, FMA,
/// AVX-512F, AMX-TILE, AMX-BF16, ...) and the hardware threads, e.g. "AMD EPYC | avx2 fma | 2 threads".
MEANSHIFT_API std::string calibration_machine();
/// The build part of the key: library version and compiler, e.g. "meanshift 0.1.0 | GCC 12.2.0".
MEANSHIFT_API std::string calibration_build();
/// The bucket of k an entry covers: the smallest power of two ≥ k (k ≥ 1), capped at 4096; the
/// measurement runs at that k. Throws InvalidArgument for k < 1.
MEANSHIFT_API int calibration_k_bucket(int k);
/// The full key: machine | build | backend | device | model | "k<=bucket".
MEANSHIFT_API std::string calibration_key(const std::string& backend, const std::string& device,
                                          const std::string& model, int k_bucket);
/// The fastest candidate (least seconds; a tie keeps the earlier one); timings that are not finite
/// and > 0 are ignored; "" when none is left. first_margin ≥ 1: taken in order, a candidate replaces
/// the one chosen so far only when faster by more than this factor (seconds × first_margin < its
/// seconds), for costs of the later, more specialised forms that the calibration's step does not see.
MEANSHIFT_API std::string choose_fastest(const std::vector<CalibrationTiming>& timings, double first_margin = 1.0);

/// The cache file: JSON {"format": 1, "entries": [...]} with one object per CalibrationEntry.
class MEANSHIFT_API CalibrationFile {
public:
    explicit CalibrationFile(std::string path);
    const std::string& path() const noexcept { return path_; }

    /// Reads the file. A missing file is an empty cache; an unreadable or corrupt one (not JSON, a
    /// wrong format number, entries of the wrong shape) is an empty cache with warning() saying
    /// why, and the next save() replaces it.
    void load();
    /// Why the last load() ignored the file's contents; "" when it did not.
    const std::string& warning() const noexcept { return warning_; }

    std::optional<CalibrationEntry> find(const std::string& key) const;
    /// Adds or replaces the entry of entry.key.
    void put(CalibrationEntry entry);
    const std::vector<CalibrationEntry>& entries() const noexcept { return entries_; }

    /// Writes every entry. Robust to concurrent writers: the file is re-read first and the entries
    /// other processes added meanwhile are kept (this object's win on the same key), then a
    /// temporary file beside it is written and renamed over it (atomic on POSIX: readers see the
    /// old or the new file, never a part of one). Creates the folder. Throws Error naming the path
    /// when it cannot be written.
    void save();

private:
    std::string path_;
    std::string warning_;
    std::vector<CalibrationEntry> entries_;
};

/// What backends call: the entry of `identity.key` (calibration_key() of identity's fields, filled
/// in here) under options.calibration and options.calibration_file:
///   Off   - nullopt: the backend takes its fixed default rule;
///   Auto  - the cached entry; where there is none and may_measure, measure() now and cache it;
///   Rerun - measure() again (once per process and key), replacing the cached entry.
/// measure() returns the candidates' timings (empty: could not measure, nullopt). The file is read
/// once per process and path; a file that cannot be read or written is a warning on stderr, never
/// an error (the measurement still serves this process). Thread-safe.
/// first_margin: choose_fastest()'s, for the measured timings.
MEANSHIFT_API std::optional<CalibrationEntry> calibrated(const BackendOptions& options, CalibrationEntry identity,
                                                         const std::function<std::vector<CalibrationTiming>()>& measure,
                                                         bool may_measure = true, double first_margin = 1.0);

/// The calibration of backend `backend`'s machine-dependent crossovers for k dimensions and `model`
/// under `options` (its threads, instruction set, calibration mode and file): the cached entry,
/// measured now where there is none (or again under Calibration::Rerun). nullopt where the backend
/// calibrates nothing (serial, opencl, cuda), for this k (openmp: k > 4096), or under
/// Calibration::Off. `meanshift calibrate` prints these. Throws what make_backend() throws.
MEANSHIFT_API std::optional<CalibrationEntry> calibrate(const std::string& backend, const BackendOptions& options,
                                                        int k, KernelModel model);

}  // namespace meanshift
