#pragma once
// Internal: the CUDA backend's plan: the default tables (threads, tiles, modes per PU, crossovers,
// measured on the H200) and which kernel runs a bound configuration (Plan, make_plan).

#include "backends/cuda/kernel_params.hpp"

#include <meanshift/backend.hpp>

#include <cuda_runtime_api.h>

namespace meanshift::cuda {

constexpr int kDefaultThreads = 256;
// Defaults of the fast kernels = the fastest configuration measured on the H200 (docs/tuning.md,
// docs/performance-gpu.md "Point-loop variants", same run): preloading (Preload::Auto), W = 1024,
// r = 4 at k ≤ 4, point loop variant 2 (isotropic) / 3 (per-point).
constexpr int kDefaultFastTile = 1024;
constexpr int kMaxFastThreads = 256;  // launch bounds of the fast kernels
constexpr int kDefaultFastVariantShared = 2;
constexpr int kDefaultFastVariantPerPoint = 3;
constexpr Index kDefaultMaxQueries = Index(1) << 24;
constexpr Index kNoPointLimit = Index(1) << 62;
/// Range kernels (truncated kernel): 64 threads per block in vPPUs of 4 (16 modes per block keep
/// the union box of their neighbourhoods small; 4 PUs per mode share its candidates). H100,
/// china.jpg, 5 iterations: 15 ms at τ = 64, f_vppu = f_load = 4, against 24 / 28 / 32 ms at
/// τ = 32 / 64 / 128 with f_vppu = 1 (docs/truncated-kernel-gpu.md).
constexpr int kDefaultRangeThreads = 64;
constexpr int kDefaultRangeVppu = 4;
/// PairForm::Auto takes the GEMM kernels for the exact kernel from the first k the fast kernels
/// (k <= 8) do not take. H200, n = 262,144, one exact step (docs/high-dimensional.md, 2026-11-23):
/// GEMM 3.4e11 / 2.0e11 / 1.3e11 pairs/s at k = 16 / 32 / 64 against 3.2e9 / 1.6e9 / 0.9e9 for the
/// topology kernels that ran there before (100-150x), per-point 1.7e11 vs 1.8e9 at k = 16.
constexpr int kGemmCrossover = 9;
/// Truncated kernel: the range kernels visit only the candidate ranges, the GEMM kernels every
/// point with the cutoff as a mask; from this k on the masked tensor-core product is the faster
/// (the range kernels' per-pair cost grows with k like the topology kernels'). Shared model (the
/// fp16 kernel), H200, 262,144 points in 8 blobs, 3 iterations (docs/high-dimensional.md,
/// 2026-11-24): GEMM 0.19 s at every k = 7..16; range kernels 0.37-0.56 s where the grid prunes
/// nothing (k = 7-10, 13, 15), 0.15-0.23 s where it prunes 8x (k = 11, 12, 14, 16), 0.09 s at k = 6.
/// Per-point (the TF32 kernel): measured from k = 16 only.
constexpr int kGemmCrossoverTruncated = 7;
constexpr int kGemmCrossoverTruncatedPerPoint = 16;

/// Preload::Auto = the faster variant measured on the H200 (docs/tuning.md, CUDA): preloading on
/// for the fast kernels (+17 % isotropic, +47 % per-point) and for the topology kernels up to
/// f_vppu = 32; off for the topology kernels with f_vppu ≥ 64, where one block's modes are few
/// and staging the tile costs more than it saves (isotropic 0.85 vs 0.61e12, per-point 0.37 vs
/// 0.34e12 at f_vppu = 64).
bool preload_on(const BackendOptions& o, bool fast, int f_vppu);

DeviceInfo describe(int index, const cudaDeviceProp& p);

/// Modes per PU of the fast kernels (register blocking): CudaTuning::modes_per_pu, else the table
/// from the sweeps in docs/performance-gpu.md: isotropic k ≤ 3: 4 with preloading, 8 without (each
/// point read from global memory then serves more modes); per-point k ≤ 4 and isotropic k = 4: 4;
/// else 2. Falls back to the largest instantiated r ≤ the wish (k·r ≤ 32).
int modes_per_pu(const CudaTuning& tuning, int k, bool per_point, bool preload);

bool is_pow2(int v);

/// Which kernel runs a bound configuration, and with what.
struct Plan {
    bool fast = false;
    bool gemm = false;  // GEMM form
    GemmKernel gemm_kernel;
    bool shift = false;  // per-mode log2 shift of the per-point weights (a max pass before each step)
    const void* max_kernel = nullptr;  // the GEMM kernel's max pass (shift with gemm)
    bool range = false;  // truncated kernel over the grid's ranges
    bool preload = true;
    int tile = 0;
    int r = 1;
    std::size_t smem = 0;
    const void* kernel = nullptr;
};

/// Whether a requested topology leaves the GEMM kernels their own block shape (τ = their block,
/// f_vppu = f_load = 4; 0 = the backend's choice).
bool gemm_shape(const Topology& t, const GemmKernel& gk);

/// Whether the GEMM kernels run: PairForm::Gemm, or Auto from the crossover on when the topology
/// is the backend's choice (or already theirs: a resolved GEMM topology binds to them again); an
/// explicit other topology keeps Alg. 3's kernels.
/// Compact profiles never: the GEMM kernels form Gaussian exponents (the plan runs the range kernels).
bool gemm_chosen(const BackendOptions& o, const Topology& t, int k, bool pp, bool truncated, const GemmTarget& gt,
                 KernelProfile profile);

/// `shift`: per-point weights beyond float32's range (needs_log2_shift); `gt`: what the devices run.
/// `profile`: compact profiles (finite cutoff = their support) run the range kernels of that profile;
/// the Gaussian and vMF (Gaussian weights) every kernel.
Plan make_plan(const BackendOptions& o, const Topology& t, int k, bool pp, bool truncated, bool shift,
               const GemmTarget& gt, KernelProfile profile);

/// Checks the typed tuning once, when the backend is created.
void validate_options(const BackendOptions& o);

}  // namespace meanshift::cuda
