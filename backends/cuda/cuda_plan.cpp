// The CUDA backend's plan (cuda_plan.hpp): default tables and kernel choice.
#include "backends/cuda/cuda_plan.hpp"

#include "backends/gpu/tile_layout.hpp"

#include <meanshift/errors.hpp>

#include <string>

namespace meanshift::cuda {

/// Preload::Auto = the faster variant measured on the H200 (docs/tuning.md, CUDA): preloading on
/// for the fast kernels (+17 % isotropic, +47 % per-point) and for the topology kernels up to
/// f_vppu = 32; off for the topology kernels with f_vppu ≥ 64, where one block's modes are few
/// and staging the tile costs more than it saves (isotropic 0.85 vs 0.61e12, per-point 0.37 vs
/// 0.34e12 at f_vppu = 64).
bool preload_on(const BackendOptions& o, bool fast, int f_vppu)
{
    if (o.preload != Preload::Auto) return o.preload == Preload::On;
    return fast || f_vppu < 64;
}

DeviceInfo describe(int index, const cudaDeviceProp& p)
{
    DeviceInfo d;
    d.index = index;
    d.name = p.name;
    d.kind = "gpu";
    d.compute_units = p.multiProcessorCount;
    d.pus_per_ppu = kDefaultThreads;
    d.global_memory = p.totalGlobalMem;
    d.local_memory = p.sharedMemPerBlockOptin;
    return d;
}

/// Modes per PU of the fast kernels (register blocking): CudaTuning::modes_per_pu, else the table
/// from the sweeps in docs/performance-gpu.md: isotropic k ≤ 3: 4 with preloading, 8 without (each
/// point read from global memory then serves more modes); per-point k ≤ 4 and isotropic k = 4: 4;
/// else 2. Falls back to the largest instantiated r ≤ the wish (k·r ≤ 32).
int modes_per_pu(const CudaTuning& tuning, int k, bool per_point, bool preload)
{
    int r = per_point ? (k <= 4 ? 4 : 2) : (k <= 3 && !preload ? 8 : k <= 4 ? 4 : 2);
    if (tuning.modes_per_pu > 0) r = tuning.modes_per_pu;
    for (int c : {8, 4, 2, 1}) {
        if (c > r) continue;
        if ((per_point ? fast_kernel_per_point(k, c, false) : fast_kernel_shared(k, c, false)) != nullptr) return c;
    }
    return 1;
}

bool is_pow2(int v)
{
    return v > 0 && (v & (v - 1)) == 0;
}

/// Whether a requested topology leaves the GEMM kernels their own block shape (τ = their block,
/// f_vppu = f_load = 4; 0 = the backend's choice).
bool gemm_shape(const Topology& t, const GemmKernel& gk)
{
    return (t.pus_per_ppu == 0 || t.pus_per_ppu == gk.threads) && (t.f_vppu == 0 || t.f_vppu == 4) &&
           (t.f_load == 0 || t.f_load == 4);
}

/// Whether the GEMM kernels run: PairForm::Gemm, or Auto from the crossover on when the topology
/// is the backend's choice (or already theirs: a resolved GEMM topology binds to them again); an
/// explicit other topology keeps Alg. 3's kernels.
/// Compact profiles never: the GEMM kernels form Gaussian exponents (the plan runs the range kernels).
bool gemm_chosen(const BackendOptions& o, const Topology& t, int k, bool pp, bool truncated, const GemmTarget& gt,
                 KernelProfile profile)
{
    if (is_compact(profile)) return false;
    const GemmKernel gk = gemm_kernel(k, pp, truncated, gt);
    if (!gk.fn || o.pair_form == PairForm::Direct) return false;
    if (o.pair_form == PairForm::Gemm) return true;
    const int from = truncated ? (pp ? kGemmCrossoverTruncatedPerPoint : kGemmCrossoverTruncated) : kGemmCrossover;
    return k >= from && gemm_shape(t, gk);
}

/// `shift`: per-point weights beyond float32's range (needs_log2_shift); `gt`: what the devices run.
/// `profile`: compact profiles (finite cutoff = their support) run the range kernels of that profile;
/// the Gaussian and vMF (Gaussian weights) every kernel.
Plan make_plan(const BackendOptions& o, const Topology& t, int k, bool pp, bool truncated, bool shift,
               const GemmTarget& gt, KernelProfile profile)
{
    Plan p;
    p.shift = shift;
    const GemmKernel gk = gemm_kernel(k, pp, truncated, gt);
    const bool gemm = gemm_chosen(o, t, k, pp, truncated, gt, profile);
    if (gemm && gk.fn) {
        p.gemm = true;
        p.preload = true;  // the point tiles are staged in shared memory (Alg. 7)
        p.gemm_kernel = gk;
        p.kernel = gk.fn;
        p.smem = gk.smem;
        p.tile = gk.points;
        if (shift) p.max_kernel = gemm_log2_max_kernel(k, truncated);
        if (shift && !p.max_kernel)
            throw Error("cuda backend: no GEMM max pass instantiated for k = " + std::to_string(k));
        return p;
    }
    if (o.pair_form == PairForm::Gemm && is_compact(profile))
        throw InvalidArgument(std::string("cuda backend: pair_form=gemm evaluates Gaussian weights only; the ") +
                              profile_name(profile) + " profile runs the range kernels: use pair_form=direct or auto");
    if (o.pair_form == PairForm::Gemm)
        throw InvalidArgument("cuda backend: pair_form=gemm takes k <= " + std::string(pp ? "128" : "1024") +
                              " dimensions (and the device's shared memory), got k = " + std::to_string(k));
    if (truncated) {
        p.range = true;
        p.preload = false;
        p.kernel = range_kernel(k, pp, static_cast<int>(profile));
        if (!p.kernel)
            throw InvalidArgument("cuda backend: the truncated kernel takes k <= " + std::to_string(kMaxRangeK) +
                                  " dimensions, got " + std::to_string(k) + "; set Options::exact (or cutoff = inf)");
        return p;
    }
    // The fast kernels have no log2 shift: per-point weights beyond float32's range run the topology
    // kernels (the same topology, direct form) instead.
    p.fast = !shift && t.f_vppu == 1 && k <= 8 && t.pus_per_ppu <= kMaxFastThreads;
    p.preload = preload_on(o, p.fast, t.f_vppu);
    if (p.fast) {
        p.tile = o.preload_size > 0 ? o.preload_size : kDefaultFastTile;
        p.r = modes_per_pu(o.cuda, k, pp, p.preload);
        const int v = o.cuda.kernel_variant > 0 ? o.cuda.kernel_variant
                                                : (pp ? kDefaultFastVariantPerPoint : kDefaultFastVariantShared);
        p.kernel =
            pp ? fast_kernel_per_point(k, p.r, p.preload, p.tile, v) : fast_kernel_shared(k, p.r, p.preload, p.tile, v);
        p.smem = p.preload ? gpu::tile_bytes(k, pp, p.tile) : 0;
    } else {
        p.tile = o.preload_size > 0 ? o.preload_size : topology_tile(k, pp, t.pus_per_ppu, gt.smem);
        if (p.tile == 0) p.preload = false, p.tile = t.pus_per_ppu;  // not one point fits: Alg. 3 unstaged
        p.kernel = topology_kernel(k, pp, p.preload, shift);
        p.smem = topology_smem_bytes(k, pp, p.preload, p.tile, t.pus_per_ppu);
    }
    if (!p.kernel) throw Error("cuda backend: no kernel instantiated for this configuration");
    return p;
}

/// Checks the typed tuning once, when the backend is created.
void validate_options(const BackendOptions& o)
{
    auto bad = [](const std::string& what) { throw InvalidArgument("cuda backend: " + what); };
    if (o.preload_size < 0) bad("preload_size must be >= 0 (0 = default), got " + std::to_string(o.preload_size));
    const int r = o.cuda.modes_per_pu;
    if (r != 0 && r != 1 && r != 2 && r != 4 && r != 8)
        bad("cuda.modes_per_pu must be 0 (default), 1, 2, 4 or 8, got " + std::to_string(r));
    if (o.cuda.kernel_variant < 0 || o.cuda.kernel_variant > 3)
        bad("cuda.kernel_variant must be 0 (default), 1, 2 or 3, got " + std::to_string(o.cuda.kernel_variant));
    if (o.cuda.max_queries < 0)
        bad("cuda.max_queries must be >= 0 (0 = default), got " + std::to_string(o.cuda.max_queries));
    if (o.cuda.max_points < 0)
        bad("cuda.max_points must be >= 0 (0 = no limit), got " + std::to_string(o.cuda.max_points));
}

}  // namespace meanshift::cuda
