// openmp: Alg. 3/4 of Malysiak & Handmann on CPU threads and SIMD lanes, float32.
//   PPU  = one OpenMP thread (z = topology.ppus, BackendOptions::threads or all of them);
//   PU   = one float32 SIMD lane (τ = 16 for AVX-512, 8 for AVX2, 4 for SSE2/generic);
//   vPPU = f_vppu consecutive lanes; f_load of them share the n-loop.
// Threads take blocks of modes dynamically; the SIMD kernels (kernel_*.cpp) advance one block.
// See docs/backend-openmp.md.
#include "backends/common/host_binding.hpp"
#include "backends/common/partial_sums.hpp"
#include "backends/factory.hpp"
#include "backends/openmp/calibration_openmp.hpp"
#include "backends/openmp/cpu_features.hpp"
#include "backends/openmp/gemm_step.hpp"
#include "skeleton/src/core/host_nearest.hpp"

#include <meanshift/errors.hpp>

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace meanshift {
namespace {

using openmp_detail::KernelData;
using openmp_detail::KernelTable;

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
/// Smallest run (points) that measures an uncalibrated configuration (~0.1-0.3 s once per machine,
/// build, threads and k bucket); smaller runs take the fixed rule until a larger one or
/// `meanshift calibrate` has measured it.
constexpr Index kCalibrateMinPoints = 4096;

/// amx: the GEMM form's products run on AMX tiles (gemm_step_amx.cpp), "AVX-512+AMX".
std::string isa_label(const KernelTable& t, bool amx)
{
    return std::string(t.isa) + (amx ? "+AMX" : "") + " (" + std::to_string(t.width) + " float lanes)";
}

std::size_t physical_memory()
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : 0;
}

DeviceInfo host_device(int threads, const KernelTable& widest, bool amx)
{
    DeviceInfo d;
    d.name = std::to_string(threads) + (threads == 1 ? " thread, " : " threads, ") + isa_label(widest, amx);
    d.kind = "cpu";
    d.compute_units = threads;
    d.pus_per_ppu = widest.width;
    d.global_memory = physical_memory();
    return d;
}

/// The bound data in the SIMD kernels' float32 layout (simd_kernel.hpp) and the per-thread
/// scratch; the modes themselves are kept by HostBinding in float64.
class OpenMPBinding final : public detail::HostBinding {
public:
    /// amx: the backend's isa allows AMX and amx_usable(); taken with the 16-lane (AVX-512) kernels.
    /// auto_gemm: whether PairForm::Auto takes the GEMM form at this k, as calibrated
    /// (calibration_openmp.hpp); nullopt: the unit's fixed crossover GemmTable::min_k.
    OpenMPBinding(std::shared_ptr<const PreparedData> data, const Topology& t, PairForm form, bool amx,
                  std::optional<bool> auto_gemm = std::nullopt)
        : HostBinding(std::move(data), t)
    {
        const PreparedData& D = *data_;
        const Index n = D.n();
        const int k = D.k();
        const bool per_point = D.model == KernelModel::PerPoint;
        if (per_point && (D.precision.rows() != n || D.precision.cols() != k || D.log_weight.size() != n))
            throw InvalidArgument("openmp backend: per-point model needs precision (n x k) and log_weight (n)");
        table_ = openmp_detail::kernel_for_width(t.pus_per_ppu);
        kd_.per_point = per_point;
        kd_.n = n;
        kd_.k = k;
        kd_.f_vppu = t.f_vppu;
        kd_.f_load = t.f_load;
        // The truncated kernel's threshold on −Σ (kernel-unit distance)² = −½·log2(e)·D².
        kd_.cut = std::isfinite(D.cutoff2) ? static_cast<float>(-0.5 * kLog2e * D.cutoff2)
                                           : -std::numeric_limits<float>::infinity();
        // The kernels' profile (simd_kernel.hpp): vMF weighs as the Gaussian; a compact profile's
        // support q <= 1 is the mask a >= c2 + cut, so cut is at least −½·log2(e).
        compact_ = is_compact(D.profile);
        kd_.profile = compact_ ? static_cast<int>(D.profile) : 0;
        if (compact_) kd_.cut = std::max(kd_.cut, static_cast<float>(-0.5 * kLog2e));
        // Very wide data (k > kMaxSimdK) take the plain per-mode loop: the SIMD kernels keep k
        // sums per lane, which would need gigabytes of scratch for k = 10^6.
        // The GEMM form: asked for, or Auto at k ≥ the measured crossover with the default one-mode-per-
        // lane topology (an explicit f_vppu > 1 asks for the direct kernels' lane sharing); Auto then
        // also keeps the direct layout for steps with too few active modes to fill a block per thread.
        // Per-point weights spanning beyond float32's range (detail::needs_log2_shift): the SIMD kernels
        // weigh every point relative to one global maximum, so whole clusters would underflow. Auto then
        // takes the GEMM form for every step (its per-mode shift of the exponent is exact at any k); the
        // direct kernels asked for (pair_form = direct, or f_vppu > 1) give way to the float64 loop.
        wide_weights_ = detail::needs_log2_shift(D);
        const openmp_detail::GemmTable* unit =
            t.pus_per_ppu == 16  ? (amx ? openmp_detail::gemm_table_amx() : openmp_detail::gemm_table_avx512())
            : t.pus_per_ppu == 8 ? openmp_detail::gemm_table_avx2()
                                 : openmp_detail::gemm_table_generic();
        // Coordinates beyond kFloat32MaxExtent (an outlier 1e8 bandwidths away, a bandwidth of 1e-20
        // on data of extent 10) lose the digits that tell nearby points apart in float32, and near
        // 1e19 the GEMM form's squares overflow (NaN): the float64 sums instead, for every step.
        // (Per point: in units of the narrowest bandwidth, √max w.)
        const double extent =
            n > 0 ? D.points.cwiseAbs().maxCoeff() * (per_point ? std::sqrt(D.precision.maxCoeff()) : 1.0) : 0.0;
        float64_ = !(extent <= kFloat32MaxExtent);
        // The GEMM forms expand the Gaussian's exponent: compact profiles always take the direct form.
        const bool gemm =
            !compact_ && !float64_ && k <= kMaxSimdK &&
            (form == PairForm::Gemm ||
             (form == PairForm::Auto && (auto_gemm.value_or(k >= unit->min_k) || wide_weights_) && t.f_vppu == 1));
        if (gemm) {
            gemm_always_ = form == PairForm::Gemm || wide_weights_;
            gemm_ = unit;
            gd_.per_point = per_point;
            gd_.n = n;
            gd_.k = k;
            gd_.x = D.points_f.data();
            gd_.w = per_point ? D.precision_f.data() : nullptr;
            gd_.c = per_point ? D.log_weight_f.data() : nullptr;
            gd_.cutoff2 = D.cutoff2;
            gd_.modes_per_block = gemm_->modes_per_block;
            gd_.rows_per_tile = kGemmRowsPerTile;
            // The units' rounding bounds of u = −½D² per unit of ½|x'|²_w + max w·½|q'|²
            // (gemm_step_impl.hpp: 2k + 8 float32 roundings, doubled; gemm_amx_step.hpp: six bf16
            // limb terms over the padded columns), and the largest w of any point.
            const int acols = per_point ? 2 * k : k;
            gemm_err_ =
                (amx && unit == openmp_detail::gemm_table_amx() ? 6.0 * ((acols + 31) / 32 * 32) + 16 : 2.0 * k + 8) *
                0x1p-23;
            gemm_wmax_ = per_point && n > 0 ? static_cast<double>(D.precision_f.maxCoeff()) : 1.0;
        }
        if (k <= kMaxSimdK && !gemm_always_ && !wide_weights_ && !float64_) {
            build_layout(D);
            direct_ready_ = true;
        }
        if (const CellGrid* G = search().cell_grid()) {
            fine_cells_ = true;
            for (int j = 0; j < G->g(); ++j)
                fine_cells_ = fine_cells_ && G->side[std::size_t(j)] < G->radius[std::size_t(j)];
        }
    }

private:
    void advance(const double* in, double* out, unsigned char* supported, Index count) override
    {
        if (float64_) {
            advance_float64(in, out, supported, count);
            return;
        }
        // Auto: the GEMM form only when every thread gets a full block of modes (measured, 2 threads,
        // n = 2048, k = 64: GEMM/direct = 0.28, 0.43, 0.98, 1.17 at 16, 64, 256, 1024 active modes).
        if (gemm_ && (gemm_always_ || count >= static_cast<Index>(gd_.modes_per_block) * topology_.ppus)) {
            advance_gemm(in, out, supported, count);
            return;
        }
        if (kd_.k > kMaxSimdK || wide_weights_) {
            advance_wide(in, out, supported, count);
            return;
        }
        advance_simd(in, out, supported, count);
    }

    /// Binding::accumulate by the SIMD kernels for a shared bandwidth (their float64 sums of float32
    /// terms, as a step makes them); per-point data (whose kernels scale S0 and S1 by a common
    /// factor: only their ratio is the step's) and where the kernels are not built (k > kMaxSimdK,
    /// pair_form = gemm) by the float64 loop.
    double accumulate(const double* positions, Index count, double* sums) override
    {
        if (float64_ || gemm_always_ || kd_.k > kMaxSimdK || kd_.per_point)
            return HostBinding::accumulate(positions, count, sums);
        detail::check_accumulate(*data_, positions, count, sums);
        if (count == 0) return 0;
        std::vector<double> out(static_cast<std::size_t>(count) * static_cast<std::size_t>(kd_.k));
        std::vector<unsigned char> supported(static_cast<std::size_t>(count));
        struct Reset {  // kd_ must not keep the caller's pointers
            KernelData& kd;
            ~Reset() { kd.sums = nullptr, kd.sums_out = nullptr; }
        } reset{kd_};
        kd_.sums = sums;
        kd_.sums_out = out.data();
        kd_.sums_width = sum_width();
        pairs_ = -1;
        advance_simd(positions, out.data(), supported.data(), count);
        return pairs_ >= 0 ? pairs_ : static_cast<double>(count) * static_cast<double>(data_->n());
    }

    /// The SIMD kernels (simd_kernel.hpp): blocks of modes shared among the threads.
    void advance_simd(const double* in, double* out, unsigned char* supported, Index count)
    {
        const int z = topology_.ppus;
        KernelData kd = kd_;
        // Two vectors of modes per block hide the exp2 latency best; drop to one when that
        // would leave threads without a block (few active modes near convergence), or when the
        // grid's cells are finer than the search radius (the pixel lattice): a block's box is then
        // the union of its modes' windows, and a 4 x 4 tile of 16 modes visits 784 pixels per mode
        // where an 8 x 4 tile of 32 visits 896 (radius 12 px): 10 % faster on china.jpg.
        kd.regs = 2;
        if (kd.f_vppu == 1 && (count + 2 * table_->width - 1) / (2 * table_->width) < z) kd.regs = 1;
        if (kd.f_vppu == 1 && fine_cells_) kd.regs = 1;
        const openmp_detail::RunBlockFn run = table_->select(kd);
        if (!run) throw Error("openmp backend: no kernel for " + topology_.to_string());
        const Index per_block = table_->modes_per_block(kd);
        const Index blocks = (count + per_block - 1) / per_block;
        const std::size_t scratch_bytes = table_->scratch_bytes(kd);
        scratch_.resize(scratch_bytes * static_cast<std::size_t>(z));  // before the parallel region: may throw

        const int k = kd.k;
        const bool sparse = sparse_search();
        double pairs = 0;
#pragma omp parallel num_threads(z) reduction(+ : pairs)
        {
            unsigned char* scratch = scratch_.data() + scratch_bytes * static_cast<std::size_t>(omp_get_thread_num());
            KernelData kb = kd;
            std::vector<std::int64_t> ranges;
#pragma omp for schedule(dynamic, 1)
            for (Index b = 0; b < blocks; ++b) {
                const Index first = b * per_block;
                const int m = static_cast<int>(std::min(per_block, count - first));
                if (sparse) {  // the block's modes visit their cell boxes or kd-tree leaves only
                    ranges.clear();
                    pairs += static_cast<double>(m) * static_cast<double>(block_ranges(in + first * k, m, ranges));
                    kb.ranges = ranges.data();
                    kb.nranges = static_cast<int>(ranges.size() / 2);
                }
                run(kb, in + first * k, m, out + first * k, supported + first, scratch);
            }
        }
        if (sparse) pairs_ = pairs;
    }

    /// The GEMM form (gemm_step.hpp): threads take blocks of up to gd_.modes_per_block modes, fewer
    /// when that would leave threads idle (few active modes near convergence). The blocks are formed
    /// from nearby modes (group_modes), since a block's float32 error grows with its modes' spread
    /// around their mean (and a grid's or kd-tree's ranges with their bounding box); within a group
    /// the modes keep the active set's cell/leaf order.
    void advance_gemm(const double* in, double* out, unsigned char* supported, Index count)
    {
        const int z = topology_.ppus;
        const int k = gd_.k;
        const Index per_block = std::max<Index>(1, std::min<Index>(gd_.modes_per_block, (count + z - 1) / z));
        const std::size_t scratch_bytes = gemm_->scratch_bytes(gd_);
        // Zero-filled once (the step relies on finite pad values), before the parallel region: may throw.
        // (Its own buffer: the direct kernels of the far modes below write into scratch_.)
        if (gemm_scratch_.size() < scratch_bytes * static_cast<std::size_t>(z))
            gemm_scratch_.assign(scratch_bytes * static_cast<std::size_t>(z), 0);
        const bool sparse = sparse_search();
        const bool grouped = count > per_block;
        const std::size_t block_doubles = static_cast<std::size_t>(per_block) * static_cast<std::size_t>(k);
        if (grouped) {
            group_modes(in, count, z);
            // Each thread gathers its block's modes into its own slice and scatters the results
            // back (no count × k copies, which the first step would also pay in page faults).
            if (g_in_.size() < block_doubles * static_cast<std::size_t>(z)) {
                g_in_.resize(block_doubles * static_cast<std::size_t>(z));
                g_out_.resize(block_doubles * static_cast<std::size_t>(z));
                g_sup_.resize(static_cast<std::size_t>(per_block) * static_cast<std::size_t>(z));
            }
        }
        // Blocks of at most per_block modes that never straddle two groups (a block spanning two
        // clusters would centre between them).
        block_first_.clear();
        const std::vector<Index> whole = {0, count};
        const std::vector<Index>& bounds = grouped ? group_start_ : whole;
        for (std::size_t g = 0; g + 1 < bounds.size(); ++g)
            for (Index f = bounds[g]; f < bounds[g + 1]; f += per_block) block_first_.push_back(f);
        block_first_.push_back(count);
        std::vector<Index> block_end(block_first_.size() - 1);
        for (std::size_t b = 0; b + 1 < block_first_.size(); ++b)
            block_end[b] = std::min(block_first_[b] + per_block, block_first_[b + 1]);
        const Index blocks = static_cast<Index>(block_end.size());
        const openmp_detail::GemmBlockFn run = gemm_->run;
        // Far modes (spread_modes) go to the direct SIMD kernels after the blocks, as the direct form
        // would weigh them (float32 differences, no expansion around a centre): the float64 per-pair
        // loop was ~20x slower, and at high k with a small bandwidth every mode is far (bench blobs,
        // σ = h, k = 384: ½|q'|² ≈ 192 against limits of 37 (AMX) and 112 (Eigen): 1.8e6 pairs/s
        // against 4.6e7 direct on 2 Zen 3 cores). Per-point weights beyond float32's range keep the loop.
        const bool far_direct = !wide_weights_ && !float64_ && k <= kMaxSimdK;
        far_modes_.resize(static_cast<std::size_t>(z));
        for (std::vector<Index>& f : far_modes_) f.clear();
        double pairs = 0;
#pragma omp parallel num_threads(z) reduction(+ : pairs)
        {
            const std::size_t thread = static_cast<std::size_t>(omp_get_thread_num());
            unsigned char* scratch = gemm_scratch_.data() + scratch_bytes * thread;
            std::vector<std::int64_t> ranges;
            std::vector<Index> direct_ranges;  // the float64 direct form of spread_modes()
            std::vector<Index>& far_here = far_modes_[thread];
            std::vector<double> s0(static_cast<std::size_t>(k)), s1(static_cast<std::size_t>(k));
            std::vector<float> centre(static_cast<std::size_t>(k));
            std::vector<unsigned char> far;
#pragma omp for schedule(dynamic, 1)
            for (Index b = 0; b < blocks; ++b) {
                const Index first = block_first_[std::size_t(b)];
                const int m = static_cast<int>(block_end[std::size_t(b)] - first);
                const double* yin = in + first * k;
                double* yout = out + first * k;
                unsigned char* sup = supported + first;
                if (grouped) {
                    double* gin = g_in_.data() + block_doubles * thread;
                    for (int j = 0; j < m; ++j) {
                        const Index q = order_[std::size_t(first + j)];
                        std::copy(in + q * k, in + (q + 1) * k, gin + static_cast<Index>(j) * k);
                    }
                    yin = gin;
                    yout = g_out_.data() + block_doubles * thread;
                    sup = g_sup_.data() + static_cast<std::size_t>(per_block) * thread;
                }
                int nranges = -1;  // all rows
                if (sparse) {
                    ranges.clear();
                    pairs += static_cast<double>(m) * static_cast<double>(block_ranges(yin, m, ranges));
                    nranges = static_cast<int>(ranges.size() / 2);
                }
                const int spread = spread_modes(yin, m, centre, far);
                if (spread < m) run(gd_, yin, m, ranges.data(), nranges, yout, sup, scratch);
                for (int j = 0; j < m && spread > 0; ++j) {
                    if (!far[std::size_t(j)]) continue;
                    if (far_direct) {
                        far_here.push_back(grouped ? order_[std::size_t(first + j)] : first + j);
                        continue;
                    }
                    const double* y = yin + static_cast<Index>(j) * k;
                    mode_sums(y, direct_ranges, s0.data(), s1.data());
                    sup[j] =
                        detail::finish_mode(s0.data(), 1, s1.data(), 1, 1.0, y, yout + static_cast<Index>(j) * k, k)
                            ? 1
                            : 0;
                }
                if (grouped) {
                    for (int j = 0; j < m; ++j) {
                        const Index q = order_[std::size_t(first + j)];
                        std::copy(yout + static_cast<Index>(j) * k, yout + static_cast<Index>(j + 1) * k, out + q * k);
                        supported[q] = sup[j];
                    }
                }
            }
        }
        if (far_direct) advance_far(in, out, supported);
        if (sparse) pairs_ = pairs;
    }

    /// The far modes of a GEMM step (far_modes_, indices into in) by the direct SIMD kernels, gathered
    /// into one batch; their layout is built on first use where the GEMM form was forced.
    void advance_far(const double* in, double* out, unsigned char* supported)
    {
        std::vector<Index> idx;
        for (const std::vector<Index>& f : far_modes_) idx.insert(idx.end(), f.begin(), f.end());
        if (idx.empty()) return;
        if (!direct_ready_) {
            build_layout(*data_);
            direct_ready_ = true;
        }
        const int k = gd_.k;
        const Index nf = static_cast<Index>(idx.size());
        std::vector<double> fin(static_cast<std::size_t>(nf) * static_cast<std::size_t>(k)), fout(fin.size());
        std::vector<unsigned char> fsup(static_cast<std::size_t>(nf));
        for (Index j = 0; j < nf; ++j)
            std::copy(in + idx[std::size_t(j)] * k, in + (idx[std::size_t(j)] + 1) * k, fin.data() + j * k);
        advance_simd(fin.data(), fout.data(), fsup.data(), nf);  // pairs_ is the caller's (set after)
        for (Index j = 0; j < nf; ++j) {
            std::copy(fout.data() + j * k, fout.data() + (j + 1) * k, out + idx[std::size_t(j)] * k);
            supported[idx[std::size_t(j)]] = fsup[std::size_t(j)];
        }
    }

    /// The GEMM form's rounding bound for each of a block's m modes (y: m × k): a unit expands
    /// −½D² = q'·x' − ½|q'|² − ½|x'|² around the block's centre c (gemm_step_common.hpp), off by up
    /// to gemm_err_·(½|x'|²_w + wmax·½|q'|² + 1). The points that weigh on a mode lie within a few
    /// bandwidths D of it, so ½|x'|² ≤ 2·½|q'|² + D²: a mode far from c (an outlier 1e6 bandwidths
    /// from the others moves c far from all of them) loses the digits that tell its neighbours apart,
    /// and merged clusters that serial exact keeps apart. Sets far[j] where
    /// gemm_err_·(3·wmax·½|q'_j|² + 1) > kGemmMaxRounding (those modes take the float64 direct form,
    /// the serial oracle's sums); returns their count. centre: k floats of scratch (c as the units
    /// round it).
    int spread_modes(const double* y, int m, std::vector<float>& centre, std::vector<unsigned char>& far) const
    {
        const int k = gd_.k;
        for (int d = 0; d < k; ++d) {
            double s = 0;
            for (int j = 0; j < m; ++j) s += y[static_cast<Index>(j) * k + d];
            centre[std::size_t(d)] = static_cast<float>(s / m);
        }
        const double limit = (kGemmMaxRounding / gemm_err_ - 1) / (3 * gemm_wmax_);  // on ½|q'|²
        far.assign(static_cast<std::size_t>(m), 0);
        int count = 0;
        for (int j = 0; j < m; ++j) {
            const double* q = y + static_cast<Index>(j) * k;
            double h = 0;
            for (int d = 0; d < k; ++d) h += (q[d] - centre[std::size_t(d)]) * (q[d] - centre[std::size_t(d)]);
            if (!(0.5 * h <= limit)) far[std::size_t(j)] = 1, ++count;
        }
        return count;
    }

    /// order_ = the count modes grouped by their nearest of up to kGemmPivots pivots (farthest-point
    /// sampling from mode 0), i.e. by a coarse Voronoi partition: consecutive blocks of the order hold
    /// nearby modes. O(count · pivots · k), a few per cent of a step's count · n · k.
    void group_modes(const double* in, Index count, int z)
    {
        const int k = gd_.k;
        const int pivots = static_cast<int>(std::min<Index>(kGemmPivots, count));
        near_d2_.assign(static_cast<std::size_t>(count), std::numeric_limits<double>::infinity());
        near_p_.assign(static_cast<std::size_t>(count), 0);
        Index pivot = 0;
        for (int p = 0; p < pivots; ++p) {
            const double* c = in + pivot * k;
            double far_d2 = -1;
            Index far_q = 0;
#pragma omp parallel num_threads(z)
            {
                double my_d2 = -1;
                Index my_q = 0;
#pragma omp for
                for (Index q = 0; q < count; ++q) {
                    const double* y = in + q * k;
                    double d2 = 0;
                    for (int d = 0; d < k; ++d) d2 += (y[d] - c[d]) * (y[d] - c[d]);
                    if (d2 < near_d2_[std::size_t(q)]) {
                        near_d2_[std::size_t(q)] = d2;
                        near_p_[std::size_t(q)] = p;
                    }
                    if (near_d2_[std::size_t(q)] > my_d2) {
                        my_d2 = near_d2_[std::size_t(q)];
                        my_q = q;
                    }
                }
#pragma omp critical
                if (my_d2 > far_d2 || (my_d2 == far_d2 && my_q < far_q)) {
                    far_d2 = my_d2;
                    far_q = my_q;
                }
            }
            pivot = far_q;
        }
        // Counting sort by pivot, stable; group_start_ = where each pivot's group begins (+ count).
        std::vector<Index> start(static_cast<std::size_t>(pivots) + 1, 0);
        for (Index q = 0; q < count; ++q) ++start[std::size_t(near_p_[std::size_t(q)]) + 1];
        for (int p = 0; p < pivots; ++p) start[std::size_t(p) + 1] += start[std::size_t(p)];
        group_start_ = start;
        order_.resize(static_cast<std::size_t>(count));
        for (Index q = 0; q < count; ++q) order_[std::size_t(start[std::size_t(near_p_[std::size_t(q)])]++)] = q;
    }

    /// Data beyond float32's resolution (kFloat32MaxExtent): the serial oracle's float64 sums
    /// (HostBinding::mode_sums), one mode per thread at a time.
    void advance_float64(const double* in, double* out, unsigned char* supported, Index count)
    {
        const int k = data_->k();
        double pairs = 0;
#pragma omp parallel num_threads(topology_.ppus) reduction(+ : pairs)
        {
            std::vector<double> s0(static_cast<std::size_t>(k)), s1(static_cast<std::size_t>(k));
            std::vector<Index> ranges;
#pragma omp for schedule(dynamic, 16)
            for (Index q = 0; q < count; ++q) {
                const double* y = in + q * k;
                pairs += static_cast<double>(mode_sums(y, ranges, s0.data(), s1.data()));
                supported[q] = detail::finish_mode(s0.data(), 1, s1.data(), 1, 1.0, y, out + q * k, k) ? 1 : 0;
            }
        }
        pairs_ = pairs;
    }

    /// k > kMaxSimdK, or per-point weights beyond float32's range with the direct form: one mode per
    /// thread at a time, float32 data, float64 weights and sums (O(k) memory), brute force.
    void advance_wide(const double* in, double* out, unsigned char* supported, Index count)
    {
        const PreparedData& D = *data_;
        const Index n = D.n();
        const int k = D.k();
        const bool per_point = D.model == KernelModel::PerPoint;
#pragma omp parallel num_threads(topology_.ppus)
        {
            std::vector<double> s0(static_cast<std::size_t>(k)), s1(static_cast<std::size_t>(k));
            std::vector<float> y(static_cast<std::size_t>(k));
#pragma omp for schedule(dynamic, 1)
            for (Index q = 0; q < count; ++q) {
                const double* yq = in + q * k;
                for (int d = 0; d < k; ++d) y[d] = static_cast<float>(yq[d]);
                std::fill(s0.begin(), s0.end(), 0.0);
                std::fill(s1.begin(), s1.end(), 0.0);
                for (Index i = 0; i < n; ++i) {
                    const float* x = D.points_f.data() + i * k;
                    const float* w = per_point ? D.precision_f.data() + i * k : nullptr;
                    double d2 = 0.0;
                    for (int d = 0; d < k; ++d) {
                        const double t = static_cast<double>(y[d]) - x[d];
                        d2 += (per_point ? w[d] : 1.0f) * t * t;
                    }
                    if (d2 > D.cutoff2) continue;
                    const double c = per_point ? D.log_weight_f[i] : 0.0;
                    const double e = compact_ ? std::exp(c) * profile_weight(D.profile, d2) : std::exp(c - 0.5 * d2);
                    if (e == 0.0) continue;
                    for (int d = 0; d < k; ++d) {
                        const double ew = per_point ? e * w[d] : e;
                        s0[d] += ew;
                        s1[d] += ew * x[d];
                    }
                }
                supported[q] = detail::finish_mode(s0.data(), 1, s1.data(), 1, 1.0, yq, out + q * k, k) ? 1 : 0;
            }
        }
    }

    /// Converts the prepared data into the kernel's float32 layout and units (simd_kernel.hpp).
    void build_layout(const PreparedData& data)
    {
        const Index n = data.n();
        const int k = data.k();
        const bool per_point = kd_.per_point;
        const double sigma = std::sqrt(0.5 * kLog2e);  // exp(-r²/2) = exp2(-(σr)²)
        const double x_scale = per_point ? 1.0 : sigma;
        kd_.y_scale = x_scale;

        // Per point: the distance is formed as Σ (√w_d y_d - √w_d x_d)², so x is stored as √w_d x_d.
        auto w_at = [&](Index i, int d) { return 0.5 * kLog2e * data.precision(i, d); };
        auto x_at = [&](Index i, int d) { return data.points(i, d) * x_scale; };
        auto dist_x_at = [&](Index i, int d) { return per_point ? std::sqrt(w_at(i, d)) * x_at(i, d) : x_at(i, d); };
        // c_i ≤ 0 by construction; the min() guarantees the kernel's exp2 precondition (exponent ≤ 0).
        auto c_at = [&](Index i) { return std::min(0.0, kLog2e * data.log_weight[i]); };

        if (kd_.f_vppu == 1) {  // row-major: one point's coordinates are broadcast together
            const std::size_t nk = static_cast<std::size_t>(n) * static_cast<std::size_t>(k);
            x_.resize(nk);
            if (per_point) {
                sw_.resize(nk);
                w_.resize(nk);
                wx_.resize(nk);
                c2_.resize(static_cast<std::size_t>(n));
            }
            for (Index i = 0; i < n; ++i) {
                for (int d = 0; d < k; ++d) {
                    const std::size_t o = static_cast<std::size_t>(i * k + d);
                    x_[o] = static_cast<float>(dist_x_at(i, d));
                    if (per_point) {
                        sw_[o] = static_cast<float>(std::sqrt(w_at(i, d)));
                        w_[o] = static_cast<float>(w_at(i, d));
                        wx_[o] = static_cast<float>(w_at(i, d) * x_at(i, d));
                    }
                }
                if (per_point) c2_[static_cast<std::size_t>(i)] = static_cast<float>(c_at(i));
            }
            if (per_point && compact_) {  // 2^c2 per point: the compact profiles' prior weight
                p2_.resize(static_cast<std::size_t>(n));
                for (Index i = 0; i < n; ++i) p2_[std::size_t(i)] = static_cast<float>(std::exp2(c_at(i)));
            }
            kd_.p2 = per_point && compact_ ? p2_.data() : nullptr;
            kd_.p2s = nullptr;
            kd_.x = x_.data();
            kd_.sw = per_point ? sw_.data() : nullptr;
            kd_.w = per_point ? w_.data() : nullptr;
            kd_.wx = per_point ? wx_.data() : nullptr;
            kd_.c2 = per_point ? c2_.data() : nullptr;
            kd_.stride = 0;
            kd_.xs = kd_.sws = kd_.ws = kd_.wxs = kd_.c2s = nullptr;
        } else {  // dimension-major, zero-padded: the lanes of a vPPU load consecutive points
            // Rows of a multiple of 16 floats starting on 64-byte boundaries: the f_vppu = τ loop's
            // vector loads then never straddle two cache lines.
            const Index stride = (n + 2 * table_->width + 15) / 16 * 16;
            const std::size_t sk = static_cast<std::size_t>(stride) * static_cast<std::size_t>(k);
            float* xs = zeroed_aligned(x_, sk);
            float* sws = per_point ? zeroed_aligned(sw_, sk) : nullptr;
            float* ws = per_point ? zeroed_aligned(w_, sk) : nullptr;
            float* wxs = per_point ? zeroed_aligned(wx_, sk) : nullptr;
            float* c2s = per_point ? zeroed_aligned(c2_, static_cast<std::size_t>(stride)) : nullptr;
            for (int d = 0; d < k; ++d)
                for (Index i = 0; i < n; ++i) {
                    const std::size_t o = static_cast<std::size_t>(d * stride + i);
                    xs[o] = static_cast<float>(dist_x_at(i, d));
                    if (per_point) {
                        sws[o] = static_cast<float>(std::sqrt(w_at(i, d)));
                        ws[o] = static_cast<float>(w_at(i, d));
                        wxs[o] = static_cast<float>(w_at(i, d) * x_at(i, d));
                    }
                }
            if (per_point)
                for (Index i = 0; i < n; ++i) c2s[i] = static_cast<float>(c_at(i));
            float* p2s = per_point && compact_ ? zeroed_aligned(p2_, static_cast<std::size_t>(stride)) : nullptr;
            if (p2s)
                for (Index i = 0; i < n; ++i) p2s[i] = static_cast<float>(std::exp2(c_at(i)));
            kd_.p2s = p2s;
            kd_.p2 = nullptr;
            kd_.stride = stride;
            kd_.xs = xs;
            kd_.sws = sws;
            kd_.ws = ws;
            kd_.wxs = wxs;
            kd_.c2s = c2s;
            kd_.x = kd_.sw = kd_.w = kd_.wx = kd_.c2 = nullptr;
        }
    }

    /// Resizes v to hold `count` zeros starting at a 64-byte boundary; returns that start.
    static float* zeroed_aligned(std::vector<float>& v, std::size_t count)
    {
        v.assign(count + 16, 0.0f);
        const auto misalign = reinterpret_cast<std::uintptr_t>(v.data()) % 64;
        return v.data() + (misalign ? (64 - misalign) / sizeof(float) : 0);
    }

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

class OpenMPBackend final : public Backend {
public:
    explicit OpenMPBackend(const BackendOptions& options) : options_(options)
    {
        if (options.threads < 0)
            throw InvalidArgument("openmp backend: threads must be >= 0 (0 = all), got " +
                                  std::to_string(options.threads));
        // 100,000 threads overflowed libgomp's stack in GOMP_parallel: refuse up front.
        check_thread_count("openmp backend", "threads", options.threads);
        widest_ = widest_allowed(options.openmp.isa);
        // AMX: by default where usable (it needs the AVX-512 kernels); "amx" insists, any other isa forbids it.
        amx_ = (options.openmp.isa == "auto" || options.openmp.isa == "amx") && widest_->width == 16 &&
               openmp_detail::amx_usable();
        if (options.openmp.isa == "amx" && !amx_)
            throw InvalidArgument("openmp backend: isa 'amx' is not compiled in or this CPU / OS does not run it");
    }

    std::string name() const override { return "openmp"; }

    std::vector<DeviceInfo> devices() const override { return {host_device(default_threads(), *widest_, amx_)}; }

    Topology resolve_topology(const Topology& requested, const PreparedData& data) const override
    {
        if (data.n() < 1 || data.k() < 1)
            throw InvalidArgument("openmp backend: data must have n >= 1 points and k >= 1 dimensions");
        Topology t = requested;
        if (t.ppus == 0) {
            t.ppus = default_threads();
        } else if (t.ppus > max_threads()) {
            // z is the number of OpenMP threads here: the same limit as BackendOptions::threads.
            check_thread_count("openmp backend", "z (ppus)", t.ppus);
        } else if (options_.threads > 0 && options_.threads != t.ppus) {
            throw InvalidArgument("openmp backend: z (ppus) = " + std::to_string(t.ppus) +
                                  " conflicts with threads = " + std::to_string(options_.threads) +
                                  "; both name the number of OpenMP threads, set only one");
        }
        if (t.pus_per_ppu == 0) t.pus_per_ppu = widest_->width;
        if (t.f_vppu == 0) t.f_vppu = 1;  // one mode per lane: the fast path
        if (t.f_load == 0) t.f_load = t.f_vppu;
        validate_topology(t, name());
        if (!openmp_detail::kernel_for_width(t.pus_per_ppu)) {
            std::string widths;
            for (const KernelTable* k : openmp_detail::usable_kernels())
                widths += (widths.empty() ? "" : ", ") + std::to_string(k->width) + " (" + k->isa + ")";
            throw InvalidArgument("invalid topology for backend 'openmp' (" + t.to_string() +
                                  "): tau must be a SIMD width in float32 lanes that this CPU runs: " + widths +
                                  ", or 0 for the widest");
        }
        return t;
    }

    bool supports_cutoff() const override { return true; }
    /// Every profile: the compact ones in the direct SIMD kernels (never the GEMM forms), vMF as the
    /// Gaussian with the sphere projection of HostBinding::step.
    bool supports_profile(KernelProfile) const override { return true; }

    int max_neighbours() const override { return std::numeric_limits<int>::max(); }
    /// The host search (kd-tree or brute force, detail::HostNearest) with the queries shared
    /// among the threads in chunks.
    MatrixD nearest_distances(const MatrixF& points, const MatrixF& queries, int count) override
    {
        detail::check_nearest_arguments(points, queries, count, max_neighbours(), "openmp backend");
        const detail::HostNearest search(points);
        MatrixD out(queries.rows(), count);
        const Index m = queries.rows(), chunk = 256;
#pragma omp parallel for schedule(dynamic, 1) num_threads(default_threads())
        for (Index b = 0; b < m; b += chunk) search.query_rows(queries, count, b, std::min(m, b + chunk), out);
        return out;
    }

    std::unique_ptr<Binding> bind(std::shared_ptr<const PreparedData> data, const Topology& topology) override
    {
        if (!data) throw InvalidArgument("openmp backend: bind() without data");
        // Resolving is idempotent for a resolved topology and fills defaults for a partial one.
        const Topology t = resolve_topology(topology, *data);
        // PairForm::Auto with the default lanes: the form (and AMX or Eigen products) measured on this
        // machine (calibration_openmp.hpp), first measured by a run of >= kCalibrateMinPoints points.
        // (Compact profiles run the direct form only: nothing to calibrate.)
        if (options_.pair_form == PairForm::Auto && t.f_vppu == 1 && t.pus_per_ppu == widest_->width &&
            data->k() <= kMaxSimdK && !is_compact(data->profile)) {
            const openmp_detail::AutoForm f =
                auto_form(t.ppus, data->model == KernelModel::PerPoint, data->k(), data->n() >= kCalibrateMinPoints);
            return std::make_unique<OpenMPBinding>(std::move(data), t, options_.pair_form, f.amx, f.gemm);
        }
        return std::make_unique<OpenMPBinding>(std::move(data), t, options_.pair_form, amx_);
    }

    /// openmp_detail::calibrate(): the calibration at k with this backend's threads and isa.
    std::optional<CalibrationEntry> calibration(int k, bool per_point) const
    {
        if (k < 1 || k > kMaxSimdK) return std::nullopt;  // the direct SIMD kernels stop there
        return auto_form(default_threads(), per_point, k, true).entry;
    }

private:
    /// What PairForm::Auto takes with `threads` threads at k (the calibration, or the unit's min_k).
    openmp_detail::AutoForm auto_form(int threads, bool per_point, int k, bool may_measure) const
    {
        const openmp_detail::GemmTable* unit =
            widest_->width == 16  ? (amx_ ? openmp_detail::gemm_table_amx() : openmp_detail::gemm_table_avx512())
            : widest_->width == 8 ? openmp_detail::gemm_table_avx2()
                                  : openmp_detail::gemm_table_generic();
        return openmp_detail::calibrated_auto_form(options_, isa_label(*widest_, amx_), threads, per_point, k,
                                                   k >= unit->min_k, amx_, may_measure);
    }

    /// threads, else OpenMP's default (OMP_NUM_THREADS), never above max_threads().
    int default_threads() const
    {
        return options_.threads > 0 ? options_.threads : std::min(omp_get_max_threads(), max_threads());
    }

    /// The kernel table OpenMPTuning::isa names ("auto" = the widest this CPU runs).
    static const KernelTable* widest_allowed(const std::string& isa)
    {
        const auto& usable = openmp_detail::usable_kernels();
        if (isa == "auto") return usable.front();
        if (isa == "amx")
            return openmp_detail::kernel_for_width(16) ? openmp_detail::kernel_table_avx512() : usable.front();
        const KernelTable* want = isa == "avx512"    ? openmp_detail::kernel_table_avx512()
                                  : isa == "avx2"    ? openmp_detail::kernel_table_avx2()
                                  : isa == "generic" ? openmp_detail::kernel_table_generic()
                                                     : nullptr;
        if (!want)
            throw InvalidArgument("openmp backend: unknown isa '" + isa + "' (auto, amx, avx512, avx2, generic)");
        if (std::find(usable.begin(), usable.end(), want) == usable.end())
            throw InvalidArgument("openmp backend: isa '" + isa + "' is not compiled in or this CPU does not run it");
        return want;
    }

    BackendOptions options_;
    const KernelTable* widest_ = nullptr;
    bool amx_ = false;  // the GEMM form's AVX-512 unit with AMX products (gemm_step_amx.cpp)
};

}  // namespace

std::optional<CalibrationEntry> openmp_detail::calibrate(const BackendOptions& options, int k, bool per_point)
{
    return OpenMPBackend(options).calibration(k, per_point);
}

namespace detail {
BackendFactory openmp_factory()
{
    BackendFactory f;
    f.name = "openmp";
    // Always usable: the generic kernel runs on any CPU.
    f.probe = [] {
        return usable_status("openmp", {host_device(omp_get_max_threads(), *openmp_detail::usable_kernels().front(),
                                                    openmp_detail::amx_usable())});
    };
    f.create = [](const BackendOptions& o) { return std::unique_ptr<Backend>(new OpenMPBackend(o)); };
    return f;
}
}  // namespace detail

}  // namespace meanshift
