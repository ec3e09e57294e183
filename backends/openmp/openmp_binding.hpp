#pragma once
// Internal to the openmp backend: its binding (openmp_binding.cpp: construction, data layout, the
// float64 and wide loops; openmp_dispatch.cpp: each step's dispatch to the SIMD kernels and the
// GEMM form) and the constants they share.

#include "backends/common/host_binding.hpp"
#include "backends/openmp/gemm_step.hpp"
#include "backends/openmp/simd_kernel.hpp"

#include <meanshift/backend.hpp>

#include <memory>
#include <optional>
#include <vector>

namespace meanshift::openmp_detail {

constexpr double kLog2e = 1.44269504088896340736;
/// Widest k the SIMD kernels take; wider data use a plain per-mode loop with O(k) memory.
constexpr int kMaxSimdK = 4096;
/// PairForm::Auto takes the GEMM form (gemm_step.hpp) from the unit's GemmTable::min_k on. Measured on
/// the 2-core AMD EPYC (Zen 3, AVX2) development machine, 2026-11-23, one exact step of n = 16384
/// bench blobs, 1 thread, CPU time (docs/backend-openmp.md "GEMM form"): GEMM / direct
/// pairs per second = 0.51, 1.02, 0.72, 0.91, 0.97, 0.97, 1.25, 1.98 (shared) and 0.71, 1.03, 0.98,
/// 0.90, 0.91, 1.05, 1.66, 2.90 (per point) at k = 4, 8, 12, 16, 24, 32, 64, 128: even at 32, ahead
/// from 64 on: 32 for the Eigen units. The AMX unit's (2-core Sapphire Rapids, 2026-11-24, CLI
/// seconds, 2 threads, n = 16384, GEMM / direct speed at k = 8, 12, 16, 24): 0.63, 0.83, 1.10, 1.33
/// (shared) and 0.95, 1.07, 1.40, 1.47 (per point): 16.
/// GEMM form: points per product tile (multiple of 32, the AMX unit's K-step); the modes per block
/// are the unit's (GemmTable::modes_per_block: 128 × 256 keeps a tile's products and weights in L2
/// and was within noise of 128-256 × 256-1024; the AMX pipeline 256 × 256, 1.15× its 128 × 256).
constexpr int kGemmRowsPerTile = 256;
/// Largest |x| (prepared units, bandwidths from the data's centre) of the float32 layouts: float32
/// resolves 2^16 to 1/128 and 1e8 to 8 bandwidths, so an outlier that far moves the centre far from
/// the other points and rounds their coordinates together (different clusters than serial's float64
/// from 1e8; at 1e6 the direct kernels' modes were 0.3 bandwidths off along the outlier's axis).
/// Wider data take the float64 sums of the serial oracle on the threads (advance_float64).
constexpr double kFloat32MaxExtent = 0x1p16;
/// GEMM form: the largest rounding bound of −½D² (in squared bandwidths, so a weight factor of up
/// to e^(1/32)) that a mode of a block may have before it takes the float64 direct form
/// (OpenMPBinding::spread_modes): a mode up to 36 bandwidths from its block's centre at k = 64, 15 at
/// k = 384 (ordinary blocks of grouped modes are far tighter).
constexpr double kGemmMaxRounding = 1.0 / 32;
/// GEMM form, brute force: pivots of the partition that groups nearby modes into blocks.
constexpr int kGemmPivots = 16;

/// The bound data in the SIMD kernels' float32 layout (simd_kernel.hpp) and the per-thread
/// scratch; the modes themselves are kept by HostBinding in float64.
class OpenMPBinding final : public detail::HostBinding {
public:
    /// amx: the backend's isa allows AMX and amx_usable(); taken with the 16-lane (AVX-512) kernels.
    /// auto_gemm: whether PairForm::Auto takes the GEMM form at this k, as calibrated
    /// (calibration_openmp.hpp); nullopt: the unit's fixed crossover GemmTable::min_k.
    OpenMPBinding(std::shared_ptr<const PreparedData> data, const Topology& t, PairForm form, bool amx,
                  std::optional<bool> auto_gemm = std::nullopt);

private:
    void advance(const double* in, double* out, unsigned char* supported, Index count) override;

    /// Binding::accumulate by the SIMD kernels for a shared bandwidth (their float64 sums of float32
    /// terms, as a step makes them); per-point data (whose kernels scale S0 and S1 by a common
    /// factor: only their ratio is the step's) and where the kernels are not built (k > kMaxSimdK,
    /// pair_form = gemm) by the float64 loop.
    double accumulate(const double* positions, Index count, double* sums) override;

    /// The SIMD kernels (simd_kernel.hpp): blocks of modes shared among the threads.
    void advance_simd(const double* in, double* out, unsigned char* supported, Index count);

    /// The GEMM form (gemm_step.hpp): threads take blocks of up to gd_.modes_per_block modes, fewer
    /// when that would leave threads idle (few active modes near convergence). The blocks are formed
    /// from nearby modes (group_modes), since a block's float32 error grows with its modes' spread
    /// around their mean (and a grid's or kd-tree's ranges with their bounding box); within a group
    /// the modes keep the active set's cell/leaf order.
    void advance_gemm(const double* in, double* out, unsigned char* supported, Index count);

    /// The far modes of a GEMM step (far_modes_, indices into in) by the direct SIMD kernels, gathered
    /// into one batch; their layout is built on first use where the GEMM form was forced.
    void advance_far(const double* in, double* out, unsigned char* supported);

    /// The GEMM form's rounding bound for each of a block's m modes (y: m × k): a unit expands
    /// −½D² = q'·x' − ½|q'|² − ½|x'|² around the block's centre c (gemm_step_common.hpp), off by up
    /// to gemm_err_·(½|x'|²_w + wmax·½|q'|² + 1). The points that weigh on a mode lie within a few
    /// bandwidths D of it, so ½|x'|² ≤ 2·½|q'|² + D²: a mode far from c (an outlier 1e6 bandwidths
    /// from the others moves c far from all of them) loses the digits that tell its neighbours apart,
    /// and merged clusters that serial exact keeps apart. Sets far[j] where
    /// gemm_err_·(3·wmax·½|q'_j|² + 1) > kGemmMaxRounding (those modes take the float64 direct form,
    /// the serial oracle's sums); returns their count. centre: k floats of scratch (c as the units
    /// round it).
    int spread_modes(const double* y, int m, std::vector<float>& centre, std::vector<unsigned char>& far) const;

    /// order_ = the count modes grouped by their nearest of up to kGemmPivots pivots (farthest-point
    /// sampling from mode 0), i.e. by a coarse Voronoi partition: consecutive blocks of the order hold
    /// nearby modes. O(count · pivots · k), a few per cent of a step's count · n · k.
    void group_modes(const double* in, Index count, int z);

    /// Data beyond float32's resolution (kFloat32MaxExtent): the serial oracle's float64 sums
    /// (HostBinding::mode_sums), one mode per thread at a time.
    void advance_float64(const double* in, double* out, unsigned char* supported, Index count);

    /// k > kMaxSimdK, or per-point weights beyond float32's range with the direct form: one mode per
    /// thread at a time, float32 data, float64 weights and sums (O(k) memory), brute force.
    void advance_wide(const double* in, double* out, unsigned char* supported, Index count);

    /// Converts the prepared data into the kernel's float32 layout and units (simd_kernel.hpp).
    void build_layout(const PreparedData& data);

    /// Resizes v to hold `count` zeros starting at a 64-byte boundary; returns that start.
    static float* zeroed_aligned(std::vector<float>& v, std::size_t count);

    const KernelTable* table_ = nullptr;
    KernelData kd_;
    const openmp_detail::GemmTable* gemm_ = nullptr;  // set: the GEMM form may run the steps
    bool gemm_always_ = false;  // PairForm::Gemm: every step, whatever the count
    openmp_detail::GemmData gd_;
    double gemm_err_ = 0, gemm_wmax_ = 1;  // spread_modes(): the unit's rounding factor, the largest w
    bool float64_ = false;  // data beyond kFloat32MaxExtent: every step by advance_float64
    std::vector<Index> order_;  // GEMM form: modes grouped into blocks (group_modes)
    std::vector<Index> group_start_, block_first_;  // group boundaries in order_; first mode of each block
    std::vector<double> near_d2_, g_in_, g_out_;  // group_modes scratch; each thread's block of modes in and out
    std::vector<int> near_p_;
    std::vector<unsigned char> g_sup_;
    bool fine_cells_ = false;  // grid cells smaller than the search radius in every grid dim
    bool wide_weights_ = false;  // per-point log2 weights beyond [-64, 64]: GEMM form or the float64 loop
    std::vector<float> x_, sw_, w_, wx_, c2_, p2_;  // kernel layout, see build_layout()
    bool compact_ = false;  // a compact profile: direct form only, kd_.profile set
    std::vector<unsigned char> scratch_;  // per-thread kernel scratch
    std::vector<unsigned char> gemm_scratch_;  // the GEMM units' per-thread scratch (zero-filled once)
    std::vector<std::vector<Index>> far_modes_;  // GEMM form: each thread's far modes (advance_far)
    bool direct_ready_ = false;  // the direct kernels' layout is built (build_layout)
};

}  // namespace meanshift::openmp_detail
