#pragma once
// Internal: the compile-time configuration of one OpenCL kernel build (the -D options), the
// choice of the preload batch, and the checks of a configuration against the device's limits.

#include <meanshift/backend.hpp>
#include <meanshift/tuning.hpp>

#include <cstddef>
#include <string>

namespace meanshift::detail {

/// Largest k the OpenCL kernels are built for. Each PU keeps the state of the r modes it carries
/// in private memory (S0, S1, the tile's raw sums and query terms: about 4k + 2·NS0 floats a mode,
/// NS0 = 1 or k) plus a private copy of one point record (STRIDE floats), and the program is
/// specialised with -D K=k. At k = 10^6 that is tens of MB per work-item: PoCL spent 407 s
/// compiling and then crashed. Measured on PoCL 3 (2 cores, n = 2, one step): per-point H runs at
/// k = 3072 (96 KiB private a work-item, bind + step 1.0 s) and crashes at k = 4096 (128 KiB);
/// shared H runs at k = 4096 (80 KiB). The limits keep a margin below that: k ≤ kMaxDimensions
/// (per-point state at r = 1: 64 KiB) and private state ≤ kMaxPrivateBytes for any r.
/// resolve_topology() refuses larger values with InvalidArgument before any program build.
constexpr int kMaxDimensions = 2048;
constexpr std::size_t kMaxPrivateBytes = 72 * 1024;

struct KernelConfig {
    int k = 0;
    bool per_point = false;  ///< KernelModel::PerPoint
    ExponentForm form = ExponentForm::Expanded;
    bool preload = false;  ///< Alg. 7 (approx_modes_preload) instead of Alg. 3
    bool ranges = false;  ///< truncated kernel over the cell grid's ranges (range_modes.cl); r = 1, no preload
    bool range_wide = false;  ///< also build range_modes_wide (32 PUs a mode, for steps with few modes)
    int tile = 128;  ///< TILE: points per tile / preload batch
    int tau = 128;  ///< work-group size
    int f_vppu = 1;
    int f_load = 1;
    int modes_per_pu = 1;  ///< r: modes each PU carries (f_vppu == 1 only)
    /// The GEMM kernel (gemm_modes.cl, PairForm::Gemm): BM modes × BN = tile points per work-group,
    /// TM × TN register block per PU (BM/TM · BN/TN = tau), dims staged BK at a time. Exact
    /// kernel or, with gemm_cut, the cutoff as a mask over every point (no grid ranges).
    bool gemm = false;
    bool gemm_cut = false;
    int gemm_bm = 0, gemm_tm = 0, gemm_tn = 0, gemm_bk = 0;
    /// The dimension-tiled GEMM kernel (gemm_wide.cl; gemm is also set): shared model, tau = 256
    /// (or 128), 64 modes × tile = (tau/4)·gw_tnh points, dims staged gemm_bk at a time for the exponents and
    /// (tau/4)·gw_tdh at a time for the sums, gw_jc points a phase-2 stage. Private state independent of k.
    bool gemm_wide = false;
    int gw_tnh = 0, gw_tdh = 0, gw_jc = 0;
    bool nv_ex2 = false;  ///< NVIDIA: exp2 as inline PTX ex2.approx.ftz (one MUFU op)
    /// Per-point weights beyond float32's range (needs_log2_shift, partial_sums.hpp): each mode's log2
    /// weights are shifted by its own maximum (MS_LOG2_SHIFT, approx_mode_common.clh); the program
    /// then also holds the max pass log2_weight_max. gemm_maxpass: the GEMM kernel's own max pass
    /// (GEMM_MAXPASS, gemm_modes.cl), a second program of the same sources.
    bool log2_shift = false;
    bool gemm_maxpass = false;
    /// CPU-class devices: > 0 builds approx_mode_cpu (approx_mode.cl), each PU's r
    /// modes against cpu_vw points at once in explicit float vectors, over records stored
    /// point-transposed in blocks of cpu_vw points; 0 = the GPU shape.
    int cpu_vw = 0;
    /// CPU shape, r = 1 and more tile sums than registers: exponents of a tile first, then the
    /// sums cpu_dc dims at a time (0 = all dims at once).
    int cpu_dc = 0;
    bool cpu_fma = false;
    int cpu_range_modes =
        0;  ///< range_modes_cpu (ranges with cpu_vw > 0): slots one work-item walks          ///< CPU shape: fma() (CL_FP_FMA in CL_DEVICE_SINGLE_FP_CONFIG), else mad()
    bool cpu_range_block = false;  ///< range_modes_cpu with the modes in the lanes (cpu_plan.hpp, range_modes_cpu.cl)
    /// Weight profile (MS_PROFILE, kernels/profiles/profiles.h; KernelProfile's value). Compact
    /// profiles run the range kernels only (their cutoff is the support), never the GEMM ones.
    int profile = 0;
    /// vMF: each finished mode is projected onto the sphere the binding passes (MS_SPHERE).
    bool sphere = false;
    std::string extra_build_options;  ///< appended to build_options()

    /// Floats per point record (gpu::record_stride: the one definition).
    int stride() const noexcept;
    /// Modes one work-group handles per block: (tau / f_vppu) · r.
    int modes_per_block() const noexcept { return gemm ? gemm_bm : tau / f_vppu * modes_per_pu; }
    /// Accumulators per mode: S0 (1 or k) + S1 (k).
    int accumulators() const noexcept { return (per_point ? k : 1) + k; }
    /// Floats of the vPPU reduction buffer: tau PUs x accumulators.
    int reduction_floats() const noexcept { return tau * accumulators(); }
    /// Bytes of the reduction buffer (only declared when f_load > 1).
    std::size_t reduction_bytes() const noexcept;
    /// Private memory one work-item uses (estimate of the kernels' arrays: r modes' state and one
    /// record copy), checked against kMaxPrivateBytes.
    std::size_t private_bytes() const noexcept;
    /// Local memory the kernel declares: the preload batch and the reduction buffer.
    std::size_t local_bytes() const noexcept;
    /// Kernel function name.
    const char* kernel_name() const noexcept
    {
        return gemm_wide ? "gemm_wide"
               : gemm    ? "gemm_modes"
               : ranges  ? (cpu_vw ? "range_modes_cpu" : "range_modes")
               : cpu_vw  ? "approx_mode_cpu"
               : preload ? "approx_modes_preload"
                         : "approx_mode";
    }
    /// "-D K=3 -D STRIDE=4 ... -cl-fast-relaxed-math ..."
    std::string build_options() const;
};

/// Smallest k at which PairForm::Auto takes the GEMM kernel (OpenCLTuning::gemm_min_k overrides;
/// docs/backend-opencl.md, "High-dimensional kernel"). Measured one step, kernel pairs/s,
/// GEMM vs direct with preloading: H100 (NVIDIA OpenCL) shared H k = 64 6.3e10 vs 9.1e10, k = 128
/// 2.8e10 vs 0.08e10; per-point k = 32 7.7e10 vs 9.1e10, k = 64 3.3e10 vs 0.12e10 (the direct
/// kernels unroll K only up to 64 and spill beyond). PoCL (2 cores): GEMM faster than the GPU
/// shape from k = 16 on, but slower than the CPU shape at every k: on CPU devices Auto
/// takes GEMM only where the CPU shape does not apply (cutoff, direct form, preloading asked for).
constexpr int kGemmMinKGpuShared = 65;
constexpr int kGemmMinKGpuPerPoint = 33;
constexpr int kGemmMinKCpu = 16;

/// Smallest k at which a shared-model GEMM step on a GPU takes the dimension-tiled kernel
/// (gemm_wide.cl) rather than gemm_modes.cl (OpenCLTuning::gemm_wide_min_k overrides; CPU devices
/// only by that override). docs/high-dimensional.md, "OpenCL: the dimension-tiled kernel".
constexpr int kGemmWideMinKGpu = 65;

/// Whether a GEMM step of `cfg` (k, per_point, tau) takes gemm_wide.cl: shared model, tau = 256 or 128,
/// k from the crossover on, no explicit gemm_modes / gemm_points (those describe gemm_modes.cl).
bool gemm_wide_for(const KernelConfig& cfg, const OpenCLTuning& t, bool gpu);

/// Largest k at which gemm_wide.cl on a GPU runs with 128 work-items a group (4 x 16 register
/// blocks) by default; 256 (4 x 8) above. One H100, one exact step, n = 131,072 (2026-11-28): 128
/// gave 1.10x 256's pairs/s at k = 128, 0.85x at 384 and 0.83x at 1,024 (the larger block's
/// registers leave fewer warps to hide the partial sums' global reads and writes, which grow
/// with k). Measured on one card only: docs/high-dimensional.md.
constexpr int kGemmWideTau128MaxKGpu = 128;

/// Default work-group size of a GEMM step: on GPUs 128 for gemm_wide.cl up to
/// kGemmWideTau128MaxKGpu, else 256; 256 for gemm_wide.cl on CPU devices (when asked for), 64 on
/// CPU devices otherwise.
int gemm_default_tau(int k, bool per_point, const OpenCLTuning& t, bool gpu);

/// Fills the GEMM geometry of `cfg` (gemm_bm, tile = BN, gemm_tm/tn/bk) for work-group size
/// cfg.tau from the tuning (0 = defaults: GPU 64 × 64, 32 × 64 for per-point k > 128; CPU 32 × 32;
/// BK 16), shrinking BK and then BN until the local memory fits `local_mem_size`. Returns an
/// empty string, or why no geometry exists for this tau (tau must divide BM·BN, tau ≥ BM).
std::string gemm_geometry(KernelConfig& cfg, const OpenCLTuning& t, bool gpu, std::size_t local_mem_size);

/// Checks the OpenCL tuning fields (BackendOptions::opencl): modes_per_pu 0..16, segments
/// 0..2^20. Throws InvalidArgument naming the field.
void validate_tuning(const OpenCLTuning& t);

/// Default r for f_vppu == 1, from the registers one mode's state needs (measured on the H200:
/// k = 3 gives r = 4 for a shared H, and for per-point H r = 2 with preloading, 4 without).
int default_modes_per_pu(int k, bool per_point, bool preload);

/// CPU shape: float vector width from CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT (4, 8
/// or 16 lanes; 0 below 4) and the default r: the tile sums of the r modes, r · (NS0 + k)
/// vectors, within half the vector registers (16 of AVX-512's 32 at 16 lanes, 8 of AVX2's 16).
int cpu_vector_width(unsigned preferred_float_width);
int default_cpu_modes_per_pu(int k, bool per_point, int vw);
int cpu_dims_per_chunk(int k, bool per_point, int vw, int modes_per_pu);

/// Local memory a default batch leaves for what the OpenCL compiler adds to the declared arrays.
constexpr std::size_t kImplicitLocalBytes = 256;

/// Largest preload batch (points) of at most `want` whose records fit in `local_mem_size` bytes
/// (less kImplicitLocalBytes) next to the reduction buffer of `cfg` (cfg.tile is ignored): a power
/// of two when it has to shrink; 0 when not even one record fits.
int largest_fitting_batch(const KernelConfig& cfg, int want, std::size_t local_mem_size);

/// Checks `cfg` against the device: work-group size ≤ max_work_group_size, local memory ≤
/// local_mem_size, private memory ≤ kMaxPrivateBytes. Throws InvalidArgument naming the limit and the device value.
void check_against_device(const KernelConfig& cfg, std::size_t max_work_group_size, std::size_t local_mem_size,
                          const std::string& device_name);

}  // namespace meanshift::detail
