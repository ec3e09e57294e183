#include "backends/opencl/kernel_config.hpp"

#include "backends/gpu/tile_layout.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <sstream>

namespace meanshift::detail {

int KernelConfig::stride() const noexcept
{
    return gpu::record_stride(k, per_point);
}

std::size_t KernelConfig::reduction_bytes() const noexcept
{
    return f_load > 1 ? static_cast<std::size_t>(reduction_floats()) * sizeof(float) : 0;
}

std::size_t KernelConfig::private_bytes() const noexcept
{
    if (gemm_wide)  // acc 16·tnh, acc2 16·tdh, the staged values, operands: no term in k
        return static_cast<std::size_t>(16 * gw_tnh + 16 * gw_tdh + (64 + tile) * gemm_bk / tau +
                                        gw_jc * (tau / 4) * gw_tdh / tau + 4 + 4 * gw_tnh + 8) *
               sizeof(float);
    if (gemm) {  // acc TM·TN, operands, S1 (+ S0, T0 per-point) TM·TK2
        const int dgrp = tile / std::max(1, gemm_tn);
        const int tk2 = (k + dgrp - 1) / std::max(1, dgrp);
        return static_cast<std::size_t>(gemm_tm * gemm_tn + 2 * (gemm_tm + gemm_tn) +
                                        gemm_tm * tk2 * (per_point ? 3 : 1) + 2 * gemm_tm) *
               sizeof(float);
    }
    const int ns0 = per_point ? k : 1;
    if (cpu_vw > 0)  // vectors S0, S1, s0, s1 of cpu_vw lanes, scalars q, qx (cq), the lane sums
        return static_cast<std::size_t>(modes_per_pu) *
               static_cast<std::size_t>(2 * (ns0 + k) * cpu_vw + 2 * k + 2 * (ns0 + k) + 2) * sizeof(float);
    const std::size_t per_mode = static_cast<std::size_t>(2 * ns0 + 4 * k + 2);  // S0, s0, S1, s1, q, qx, cq, idx
    return (static_cast<std::size_t>(modes_per_pu) * per_mode + static_cast<std::size_t>(stride())) * sizeof(float);
}

std::size_t KernelConfig::local_bytes() const noexcept
{
    if (gemm_wide) {  // gemm_wide.cl: the stage (max of its three uses), the weights, qnl, s0l, midx
        const int ni = tau / 16, bn = 4 * ni * gw_tnh;
        const int stage4 = std::max({gemm_bk * (64 / 4 + 1 + bn / 4 + 1), gw_jc * (ni * gw_tdh + 1), ni * 64 / 4});
        return static_cast<std::size_t>(4 * stage4 + bn * 64 + 3 * 64) * sizeof(float);
    }
    if (gemm)  // Qs, Ps (+ Cs), Es, qnl, midx of gemm_modes.cl
        return static_cast<std::size_t>(gemm_bk * (gemm_bm + 1) + (per_point ? 2 : 1) * gemm_bk * (tile + 1) +
                                        gemm_bm * (tile + 1) + 2 * gemm_bm) *
               sizeof(float);
    // range_modes adds the group's box: 2 · 16 ints (MS_MAX_GRID_DIMS of meanshift_ranges.h).
    return (preload ? gpu::tile_bytes(k, per_point, tile) : 0) + reduction_bytes() + (ranges ? 128 : 0);
}

std::string KernelConfig::build_options() const
{
    std::ostringstream o;
    o << "-D K=" << k << " -D STRIDE=" << stride() << " -D TILE=" << tile << " -D TAU=" << tau
      << " -D F_VPPU=" << f_vppu << " -D F_LOAD=" << f_load << " -D MODES_PER_PU=" << modes_per_pu
      << " -D MODEL_PER_POINT=" << (per_point ? 1 : 0) << " -D EXPANDED=" << (form == ExponentForm::Expanded ? 1 : 0)
      << (nv_ex2 ? " -D MS_NV_EX2=1" : "") << (range_wide ? " -D MS_RANGE_WIDE=1" : "")
      << (log2_shift ? " -D MS_LOG2_SHIFT=1" : "") << (gemm_maxpass ? " -D GEMM_MAXPASS=1" : "");
    if (profile != 0) o << " -D MS_PROFILE=" << profile;  // absent: the Gaussian (the programs as before)
    if (sphere) o << " -D MS_SPHERE=1";
    if (cpu_vw > 0) o << " -D MS_CPU_VW=" << cpu_vw << " -D MS_CPU_FMA=" << (cpu_fma ? 1 : 0);
    if (cpu_vw > 0 && cpu_dc > 0) o << " -D MS_CPU_DC=" << cpu_dc;
    if (cpu_vw > 0 && cpu_range_modes > 0) o << " -D MS_CPU_RANGE_MODES=" << cpu_range_modes;
    if (cpu_vw > 0 && cpu_range_block) o << " -D MS_CPU_RANGE_BLOCK=1";
    if (gemm_wide)
        o << " -D GW_BK=" << gemm_bk << " -D GW_JC=" << gw_jc << " -D GW_TNH=" << gw_tnh << " -D GW_TDH=" << gw_tdh;
    if (gemm)
        o << " -D GEMM_BM=" << gemm_bm << " -D GEMM_TM=" << gemm_tm << " -D GEMM_TN=" << gemm_tn
          << " -D GEMM_BK=" << gemm_bk << " -D GEMM_CUT=" << (gemm_cut ? 1 : 0);
    o
        // exp2 through the hardware unit, denormals flushed (weights below 2^-126 are noise);
        // the padding records use a finite log-weight, so finite-math is safe.
        << " -cl-fast-relaxed-math -cl-mad-enable -cl-denorms-are-zero";
    if (!extra_build_options.empty()) o << ' ' << extra_build_options;
    return o.str();
}

void validate_tuning(const OpenCLTuning& t)
{
    if (t.modes_per_pu < 0 || t.modes_per_pu > 16)
        throw InvalidArgument("opencl: tuning opencl.modes_per_pu must be 0 (automatic) .. 16, got " +
                              std::to_string(t.modes_per_pu));
    if (t.segments < 0 || t.segments > (1 << 20))
        throw InvalidArgument("opencl: tuning opencl.segments must be 0 (automatic) .. 1048576, got " +
                              std::to_string(t.segments));
    if (t.gemm_modes < 0 || t.gemm_modes > 256 || t.gemm_points < 0 || t.gemm_points > 256 || t.gemm_dim_chunk < 0 ||
        t.gemm_dim_chunk > 64 || t.gemm_min_k < 0 || t.gemm_wide_min_k < 0)
        throw InvalidArgument("opencl: tuning opencl.gemm_modes / gemm_points must be 0..256, gemm_dim_chunk 0..64, "
                              "gemm_min_k >= 0");
    if (t.exponent != ExponentForm::Expanded && t.exponent != ExponentForm::Direct)
        throw InvalidArgument("opencl: tuning opencl.exponent must be Expanded or Direct");
}

bool gemm_wide_for(const KernelConfig& c, const OpenCLTuning& t, bool gpu)
{
    if (c.per_point || (c.tau != 256 && c.tau != 128) || t.gemm_modes > 0 || t.gemm_points > 0) return false;
    if (t.gemm_dim_chunk > 0 && t.gemm_dim_chunk % 4 != 0) return false;
    const int min_k = t.gemm_wide_min_k > 0 ? t.gemm_wide_min_k : gpu ? kGemmWideMinKGpu : 0;
    return min_k > 0 && c.k >= min_k;
}

int gemm_default_tau(int k, bool per_point, const OpenCLTuning& t, bool gpu)
{
    KernelConfig c;
    c.k = k;
    c.per_point = per_point;
    c.tau = 256;
    const bool wide = gemm_wide_for(c, t, gpu);
    if (gpu && wide && k <= kGemmWideTau128MaxKGpu) return 128;
    return gpu || wide ? 256 : 64;
}

namespace {

// gemm_wide.cl's geometry: 64 modes × 128 points, the exponents' dims 16 at a time, the sums'
// 128 at a time (64 where k ≤ 64), 16 points a phase-2 stage; tau 256 (4 × 8 blocks) or 128
// (4 × 16 blocks; GPUs' default up to kGemmWideTau128MaxKGpu); the defaults shrink (BK, then the
// tile, then the stage) until local memory fits, so that no default fails on a device with less
// than NVIDIA's 48 KiB.
std::string gemm_wide_geometry(KernelConfig& c, const OpenCLTuning& t, std::size_t local_mem_size)
{
    c.gemm_wide = true;
    c.gemm_bm = 64;
    c.gemm_tm = 4;
    c.gemm_bk = t.gemm_dim_chunk > 0 ? t.gemm_dim_chunk : 16;
    const int ni = c.tau / 16;  // work-items a mode: 16, or 8 with tau = 128 (4 x 16 blocks)
    c.gw_tnh = 128 / (4 * ni);
    c.gw_tdh = (c.k > 64 ? 128 : 64) / (4 * ni);
    c.gw_jc = 16;
    for (;;) {
        c.tile = 4 * ni * c.gw_tnh;
        c.gemm_tn = 4 * c.gw_tnh;
        if (c.local_bytes() + kImplicitLocalBytes <= local_mem_size) return {};
        if (t.gemm_dim_chunk == 0 && c.gemm_bk > 4)
            c.gemm_bk /= 2;
        else if (c.gw_tnh > 1 && 4 * ni * c.gw_tnh > 64)
            c.gw_tnh /= 2;
        else if (c.gw_jc > 4)
            c.gw_jc /= 2;
        else
            return "the dimension-tiled GEMM kernel needs " + std::to_string(c.local_bytes()) +
                   " bytes of local memory, more than CL_DEVICE_LOCAL_MEM_SIZE = " + std::to_string(local_mem_size) +
                   " less " + std::to_string(kImplicitLocalBytes) +
                   " (opencl.gemm_dim_chunk = " + std::to_string(c.gemm_bk) +
                   "; opencl.gemm_wide_min_k above k selects gemm_modes)";
    }
}

}  // namespace

std::string gemm_geometry(KernelConfig& c, const OpenCLTuning& t, bool gpu, std::size_t local_mem_size)
{
    c.gemm_wide = false;
    // Where even its smallest tiles exceed local memory (below ~24 KiB), gemm_modes.cl's smaller
    // ones take the step.
    if (gemm_wide_for(c, t, gpu) && gemm_wide_geometry(c, t, local_mem_size).empty()) return {};
    c.gemm_wide = false;
    // GPU: a 64 × 64 tile of 256 PUs with 4 × 4 blocks (the classic SGEMM shape; per-point k > 128
    // halves BM so that S0, S1 and the tile sums, 3 · TM · k/16 floats, stay in registers).
    // CPU (PoCL): 32 × 32 for its default 64 work-items.
    const int bm = t.gemm_modes > 0 ? t.gemm_modes : gpu ? (c.per_point && c.k > 128 ? 32 : 64) : 32;
    int bn = t.gemm_points > 0 ? t.gemm_points : gpu ? 64 : 32;
    int bk = t.gemm_dim_chunk > 0 ? t.gemm_dim_chunk : 16;
    const int tau = c.tau;
    auto fail = [&](const std::string& why) {
        return "the GEMM kernel needs " + why + " (BM = " + std::to_string(bm) + " modes x BN = " + std::to_string(bn) +
               " points, tau = " + std::to_string(tau) + "; opencl.gemm_modes / opencl.gemm_points)";
    };
    if (tau < bm) return fail("tau >= BM");
    for (;;) {
        if ((bm * bn) % tau != 0) return fail("tau to divide BM x BN");
        const int tmn = bm * bn / tau;
        int tm = 1;  // largest power of two <= 4 dividing both TM·TN and BM, with TN dividing BN
        for (int cand = 4; cand >= 1; cand /= 2)
            if (tmn % cand == 0 && bm % cand == 0 && bn % (tmn / cand) == 0) {
                tm = cand;
                break;
            }
        const int tn = tmn / tm;
        if (tmn % tm != 0 || bm % tm != 0 || bn % tn != 0) return fail("TM x TN blocks that tile BM x BN");
        c.gemm_bm = bm;
        c.gemm_tm = tm;
        c.gemm_tn = tn;
        c.gemm_bk = bk;
        c.tile = bn;
        if (c.local_bytes() + kImplicitLocalBytes <= local_mem_size) return {};
        if (t.gemm_dim_chunk == 0 && bk > 4) {
            bk /= 2;  // defaults shrink until the tiles fit local memory
        } else if (t.gemm_points == 0 && bn > 8 && (bm * (bn / 2)) % tau == 0) {
            bn /= 2;
        } else {
            return fail(std::to_string(c.local_bytes()) +
                        " bytes of local memory, more than CL_DEVICE_LOCAL_MEM_SIZE = " +
                        std::to_string(local_mem_size) + " less " + std::to_string(kImplicitLocalBytes));
        }
    }
}

int default_modes_per_pu(int k, bool per_point, bool preload)
{
    const int state = per_point ? 6 * k : 3 * k + 3;  // registers one mode needs, roughly
    // Without preloading every PU loads the per-point records (2 float4) from global memory
    // itself: more modes per load pay off (H200, k = 3: r = 4 1.48e12 vs r = 2 0.94e12 pairs/s).
    const int budget = per_point && !preload ? 96 : 48;
    return std::clamp(budget / state, 1, 4);
}

int cpu_vector_width(unsigned preferred_float_width)
{
    return preferred_float_width >= 16 ? 16 : preferred_float_width >= 8 ? 8 : preferred_float_width >= 4 ? 4 : 0;
}

int default_cpu_modes_per_pu(int k, bool per_point, int vw)
{
    return std::clamp((vw >= 16 ? 16 : 8) / ((per_point ? k : 1) + k), 1, 4);
}

int cpu_dims_per_chunk(int k, bool per_point, int vw, int modes_per_pu)
{
    const int budget = vw >= 16 ? 16 : 8;  // tile sums that stay in registers
    if (modes_per_pu != 1 || (per_point ? 2 * k : k + 1) <= budget) return 0;
    // sums of a chunk (per-point: 2 a dim) + e + operands within the vector registers
    const int dc = per_point ? (vw >= 16 ? 12 : 6) : (vw >= 16 ? 24 : 12);
    return std::min(dc, k);
}

int largest_fitting_batch(const KernelConfig& cfg, int want, std::size_t local_mem_size)
{
    // Compilers add a little local memory of their own (NVIDIA's OpenCL: 16 bytes on the H200, so a
    // batch that filled the 48 KiB exactly failed at bind()); the default batch leaves room for it.
    const std::size_t usable = local_mem_size > kImplicitLocalBytes ? local_mem_size - kImplicitLocalBytes : 0;
    const std::size_t red = cfg.reduction_bytes();
    if (red >= usable) return 0;
    const std::size_t record = gpu::tile_bytes(cfg.k, cfg.per_point, 1);
    const std::size_t fit = (usable - red) / record;
    if (fit >= static_cast<std::size_t>(want)) return want;
    if (fit == 0) return 0;
    int p = 1;
    while (static_cast<std::size_t>(p) * 2 <= fit) p *= 2;
    return p;
}

void check_against_device(const KernelConfig& cfg, std::size_t max_work_group_size, std::size_t local_mem_size,
                          const std::string& device_name)
{
    if (static_cast<std::size_t>(cfg.tau) > max_work_group_size)
        throw InvalidArgument("opencl: tau (work-group size) " + std::to_string(cfg.tau) +
                              " exceeds CL_DEVICE_MAX_WORK_GROUP_SIZE = " + std::to_string(max_work_group_size) +
                              " of " + device_name);
    if (cfg.private_bytes() > kMaxPrivateBytes)
        throw InvalidArgument("opencl: " + std::to_string(cfg.modes_per_pu) + " modes per PU at k = " +
                              std::to_string(cfg.k) + " need about " + std::to_string(cfg.private_bytes()) +
                              " bytes of private memory per work-item, more than the kernels' limit of " +
                              std::to_string(kMaxPrivateBytes) + "; use fewer modes per PU (opencl.modes_per_pu)");
    if (cfg.local_bytes() > local_mem_size) {
        std::ostringstream o;
        o << "opencl: the kernel needs " << cfg.local_bytes() << " bytes of local memory";
        if (cfg.gemm)
            o << " (GEMM tiles of " << cfg.gemm_bm << " modes x " << cfg.tile << " points, " << cfg.gemm_bk
              << " dims a chunk) but CL_DEVICE_LOCAL_MEM_SIZE = " << local_mem_size << " bytes on " << device_name
              << "; use smaller opencl.gemm_modes / gemm_points / gemm_dim_chunk";
        if (cfg.gemm) throw InvalidArgument(o.str());
        if (cfg.preload) o << " (preload batch " << cfg.tile << " points x " << cfg.stride() << " floats";
        if (cfg.f_load > 1)
            o << (cfg.preload ? " + " : " (") << "vPPU reduction buffer " << cfg.tau << " PUs x " << cfg.accumulators()
              << " accumulators";
        o << ") but CL_DEVICE_LOCAL_MEM_SIZE = " << local_mem_size << " bytes on " << device_name;
        const std::size_t red = cfg.reduction_bytes();
        if (cfg.preload && red < local_mem_size)
            o << "; use a smaller tau or preload_size <= " << (local_mem_size - red) / (cfg.stride() * sizeof(float));
        else
            o << "; use a smaller tau (work-group size)";
        throw InvalidArgument(o.str());
    }
}

}  // namespace meanshift::detail
