#pragma once
/// @file tuning.hpp
/// Typed per-backend tuning. Every field has a default that is the fastest configuration measured
/// for the device class and kernel model (docs/tuning.md lists the measurements behind each
/// default); set a field only to override it (benchmarks, experiments, tests). There are no
/// environment variables: the one text form of an override is BackendOptions::set("key", "value"),
/// parsed in one place (skeleton/src/core/tuning.cpp), which the CLI's `--tune key=value` uses.

#include <meanshift/export.hpp>
#include <meanshift/types.hpp>

#include <string>
#include <vector>

namespace meanshift {

/// Alg. 7 (local-memory preloading) of Malysiak & Handmann. Auto = the measured default of the
/// backend for its device class (GPUs: on; CPU-class OpenCL devices: off).
enum class Preload { Auto, On, Off };

/// How a backend evaluates the pair exponents −½ D² (docs/high-dimensional.md).
/// Direct: each PU loops over the k dimensions of each pair (Alg. 3 as written; fastest at low k).
/// Gemm: the exponents of a block of modes against a block of points come from matrix products,
/// −½|q − p|² = q·p − ½|q|² − ½|p|² (per-point H_i: two products against w∘x and w), fused with the
/// exponential and the weighted sums (the m × n weight matrix is never stored in full).
/// Auto: Gemm from the backend's measured crossover k on (docs/tuning.md), Direct below it; the CUDA
/// backend's Auto keeps Direct until its GEMM kernels are measured on a GPU.
enum class PairForm { Auto, Direct, Gemm };

/// OpenMP backend (backends/openmp).
struct OpenMPTuning {
    /// Widest instruction set the SIMD kernels may use: "auto" (the widest this CPU runs, and the
    /// GEMM form's products on Intel AMX tiles where the CPU and OS allow), "amx" (AVX-512 with AMX),
    /// "avx512" (AVX-512 without AMX), "avx2" or "generic" (portable, 4 lanes). A set the CPU lacks
    /// is an InvalidArgument when the backend is created.
    std::string isa = "auto";
};

/// CUDA backend (backends/cuda).
struct CudaTuning {
    int modes_per_pu = 0;  ///< r, modes each thread carries in the fast kernels (1, 2, 4, 8); 0 = default table
    int kernel_variant = 0;  ///< point-loop variant of the fast kernels (1..3, kernel_params.hpp); 0 = default
    Index max_queries = 0;  ///< modes per launch chunk; 0 = 2^24 (small values exercise the chunking)
    Index max_points = 0;  ///< points resident per device chunk; 0 = as many as fit in device memory
    /// GEMM form of the shared model: Hopper's warpgroup-MMA kernel where the devices and k allow
    /// (compute capability 9.0, k = 33..64, k % 4 == 0); false: the mma.sync kernel everywhere.
    bool wgmma = true;
};

/// Exponent form of the OpenCL kernels (kernels/meanshift_device.h).
enum class ExponentForm { Expanded, Direct };

/// OpenCL backend (backends/opencl).
struct OpenCLTuning {
    int modes_per_pu = 0;  ///< r when f_vppu = 1; 0 = default table
    ExponentForm exponent = ExponentForm::Expanded;
    int segments = 0;  ///< n-loop segments per mode block; 0 = automatic
    bool nv_ex2 = true;  ///< NVIDIA: exp2 as one ex2.approx instruction
    std::string extra_build_options;  ///< appended to the program build options
    // The GEMM kernel (PairForm::Gemm, kernels/gemm_modes.cl); 0 = the default of the device class.
    int gemm_modes = 0;  ///< BM, modes per work-group tile (1..256)
    int gemm_points = 0;  ///< BN, points per tile (1..256)
    int gemm_dim_chunk = 0;  ///< BK, dims staged in local memory per step of the exponent product (1..64)
    int gemm_min_k = 0;  ///< smallest k at which PairForm::Auto takes the GEMM kernel; 0 = measured default
    /// Smallest k at which a GEMM step of the shared model takes the dimension-tiled kernel
    /// (kernels/gemm_wide.cl) instead of gemm_modes.cl; 0 = measured default (GPUs only).
    int gemm_wide_min_k = 0;
};

/// Use of the calibration cache (calibration.hpp, docs/tuning.md "Calibration") for the crossovers
/// measured on the machine (openmp: direct vs GEMM form, AMX vs Eigen products).
/// Auto: the cached measurement, made the first time a configuration is met; Off: the fixed default
/// rule (no file is read or written); Rerun: measure again (once per process and configuration)
/// and replace the cached entry.
enum class Calibration { Auto, Off, Rerun };

/// Factor of max_threads() over the hardware threads (oversubscription beyond it only costs).
inline constexpr int kMaxThreadsPerHardwareThread = 64;

/// The most OpenMP threads the library starts, and the largest BackendOptions::threads and
/// Topology::ppus (z) of the openmp backend: kMaxThreadsPerHardwareThread × the hardware threads
/// (std::thread::hardware_concurrency(), 1 when unknown), capped by OpenMP's thread limit
/// (omp_get_thread_limit(), OMP_THREAD_LIMIT). 128 on a 2-core machine without hyper-threading.
MEANSHIFT_API int max_threads() noexcept;

/// Throws InvalidArgument when a thread count `value` given as option `option` ("threads",
/// "z (ppus)") exceeds max_threads(); the message names `who` (the backend), the option, the
/// value and the limit.
MEANSHIFT_API void check_thread_count(const std::string& who, const std::string& option, long long value);

/// Per-backend options chosen by the user at run time.
struct MEANSHIFT_API BackendOptions {
    std::vector<int> devices;  ///< device indices to use (multi-device backends); empty = all (CUDA) / default
    std::string device_spec;  ///< OpenCL "P:D" (platform:device); empty = first GPU, else first device
    Preload preload = Preload::Auto;  ///< Alg. 7 local-memory preloading (OpenCL, CUDA)
    int preload_size = 0;  ///< points staged per batch / tile width W; 0 = backend default
    /// OpenMP threads (z); 0 = all. At most max_threads(): more cannot run faster and, far beyond
    /// it, crashed inside libgomp (100,000 threads overflowed GOMP_parallel's stack);
    /// the openmp and serial backends refuse a larger value (InvalidArgument naming threads, the
    /// value and the limit), and the library's own host passes never start more.
    int threads = 0;
    PairForm pair_form = PairForm::Auto;  ///< direct loop or matrix products for the exponents
    /// Whether PairForm::Auto (and the openmp unit) follow the calibration cache (calibration.hpp).
    Calibration calibration = Calibration::Auto;
    /// The cache file; "" = default_calibration_file() ($XDG_CACHE_HOME/meanshift/calibration.json,
    /// else ~/.cache/meanshift/calibration.json).
    std::string calibration_file;
    OpenMPTuning openmp;
    CudaTuning cuda;
    OpenCLTuning opencl;

    /// Sets one option from text, the single parser of tuning overrides:
    ///   preload=auto|on|off, preload_size=N, threads=N, devices=0,1, device=P:D,
    ///   pair_form=auto|direct|gemm, calibration=auto|off|rerun, calibration_file=PATH,
    ///   openmp.isa=auto|amx|avx512|avx2|generic,
    ///   cuda.modes_per_pu=N, cuda.kernel_variant=N, cuda.max_queries=N, cuda.max_points=N, cuda.wgmma=0|1,
    ///   opencl.modes_per_pu=N, opencl.exponent=expanded|direct, opencl.segments=N,
    ///   opencl.nv_ex2=0|1, opencl.build_options=TEXT,
    ///   opencl.gemm_modes=N, opencl.gemm_points=N, opencl.gemm_dim_chunk=N, opencl.gemm_min_k=N,
    ///   opencl.gemm_wide_min_k=N.
    /// Throws InvalidArgument naming the key and the rule for an unknown key or a bad value.
    void set(const std::string& key, const std::string& value);
    /// "key=value" form of set().
    void set(const std::string& assignment);
    /// Keys accepted by set(), for help texts.
    static std::vector<std::string> keys();
};

}  // namespace meanshift
