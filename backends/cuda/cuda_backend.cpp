// cuda: the skeleton's step (Alg. 3 / Alg. 7) on NVIDIA GPUs.
//   PPU = SM / thread block, PU = thread, vPPU = f_vppu consecutive threads.
//   f_vppu = 1 and k ≤ 8: the fast kernels (fast_kernel.cuh), each PU carries r modes.
//   otherwise: the topology kernels (topology_kernels.cu), Alg. 3 exactly, any power-of-two f_vppu.
//   truncated kernel (finite Options::cutoff): the range kernels (range_kernel.cu), the candidate
//   loop over the cell grid's block-sparse ranges, f_vppu ≤ 32.
//   BackendOptions::pair_form = gemm: the GEMM kernels (gemm_kernel.cu), exponents and sums through
//   tensor-core matrix products, exact or truncated (Auto: from kGemmCrossover / kGemmCrossoverTruncated on).
//   Per-point weights beyond float32's range (detail::needs_log2_shift): a max pass first (the GEMM
//   kernel's own, or launch_log2_max for the others) finds each mode's largest log2 weight, and the
//   topology, range and GEMM kernels subtract it (kernel_params.hpp); the fast kernels' data run the
//   topology kernels then.
// The modes live on the device for the whole run (mode_kernels.hpp): a step gathers the active
// modes, accumulates, finishes them in place and compacts the active list there; only
// (index, shift², status) of each advanced mode crosses to the host. Several GPUs: every device
// holds the points and a contiguous share of the modes, and is driven by its own persistent
// worker thread (device_worker.hpp); one GPU runs inline. Queries are processed in chunks; points
// that do not fit one device's memory are streamed in chunks whose partial sums add up in the
// accumulators.
#include "backends/cuda/cuda_check.hpp"
#include "backends/cuda/device_buffer.hpp"
#include "backends/cuda/device_worker.hpp"
#include "backends/cuda/kernel_params.hpp"
#include "backends/cuda/knn_kernel.hpp"
#include "backends/cuda/mode_kernels.hpp"
#include "backends/cuda/staged_upload.hpp"
#include "backends/factory.hpp"
#include "backends/gpu/knn_limits.hpp"
#include "backends/gpu/range_grid.hpp"
#include "backends/gpu/rebindable.hpp"
#include "backends/gpu/step_report.hpp"
#include "backends/gpu/tile_layout.hpp"
#include "backends/common/partial_sums.hpp"
#include "skeleton/src/core/parallel.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

namespace meanshift {
namespace cuda {
namespace {

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

/// One device as the backend and its bindings share it (std::shared_ptr): a binding stays valid
/// after the Backend is gone. With several devices each has a persistent worker thread.
struct DeviceContext {
    int device = 0;
    cudaDeviceProp prop{};
    std::unique_ptr<DeviceWorker> worker;  // null for a single device: work runs inline
};

/// The process's pool of pinned staging blocks for `device`: every cluster() call makes its own
/// backend, so a pool per backend would never be reused. The pools themselves are never destroyed
/// (a static's destructor could run after the CUDA runtime has shut down); their blocks are freed
/// by an exit handler registered at the first pool's creation, i.e. after the runtime registered
/// its own, so it runs before the runtime's teardown (memcheck's leak check sees no pinned blocks).
PinnedPool& pinned_pool(int device)
{
    static std::mutex mutex;
    static auto* pools = new std::vector<std::unique_ptr<PinnedPool>>();
    std::lock_guard<std::mutex> lock(mutex);
    static const bool registered = [] {
        return std::atexit([] {
                   for (auto& p : *pools)
                       if (p) p->release_all();
               }) == 0;
    }();
    (void)registered;
    const std::size_t d = static_cast<std::size_t>(device);
    if (pools->size() <= d) pools->resize(d + 1);
    if (!(*pools)[d]) (*pools)[d] = std::make_unique<PinnedPool>();
    return *(*pools)[d];
}
using Contexts = std::vector<std::shared_ptr<DeviceContext>>;

/// Runs f(i) for every device i with that device current: inline for one device, else on the
/// devices' workers in parallel. Waits for all of them, then rethrows the first failure.
template <class F>
void on_devices(const Contexts& ctx, F&& f)
{
    if (ctx.size() == 1) {
        DeviceScope scope(ctx[0]->device);
        f(std::size_t{0});
        return;
    }
    std::vector<std::future<void>> done;
    done.reserve(ctx.size());
    std::exception_ptr error;
    try {
        for (std::size_t i = 0; i < ctx.size(); ++i) {
            const int device = ctx[i]->device;
            done.push_back(ctx[i]->worker->submit([&f, i, device] {
                DeviceScope scope(device);
                f(i);
            }));
        }
    } catch (...) {
        error = std::current_exception();
    }
    for (auto& d : done) {
        try {
            d.get();
        } catch (...) {
            if (!error) error = std::current_exception();
        }
    }
    if (error) std::rethrow_exception(error);
}

/// Resident blocks per SM of `plan` with `threads` per block, without changing any device state:
/// the occupancy API for the register and thread limits (no dynamic shared memory, so no
/// cudaFuncSetAttribute is needed), the shared-memory limit computed from the device's figures.
int blocks_per_sm(const DeviceContext& c, const Plan& plan, int threads)
{
    DeviceScope scope(c.device);
    int by_regs = 0;
    MS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&by_regs, plan.kernel, threads, 0));
    cudaFuncAttributes fa{};
    MS_CUDA_CHECK(cudaFuncGetAttributes(&fa, plan.kernel));
    const std::size_t smem = plan.smem + fa.sharedSizeBytes;
    if (smem == 0) return by_regs;
    if (smem > static_cast<std::size_t>(c.prop.sharedMemPerBlockOptin)) return 0;
    const std::size_t per_block = smem + c.prop.reservedSharedMemPerBlock;
    const int by_smem = static_cast<int>(c.prop.sharedMemPerMultiprocessor / per_block);
    return std::min(by_regs, by_smem);
}

/// What one device holds for a binding: its stream and events, the points (resident or one
/// chunk), its share [m0, m0 + m) of the modes and its active list, the query/accumulator buffers
/// of one chunk, and the pinned staging buffers. Every member owns its resource (RAII).
struct Part {
    std::shared_ptr<DeviceContext> ctx;
    Stream stream;
    Event start, stop;

    bool resident = true;  // all points uploaded at bind()
    Index chunk_points = 0;  // points (records) per chunk, a multiple of the tile width for the fast family
    DeviceBuffer points, precision, log_weight, centres, radii, scratch;
    DeviceBuffer grid_start, grid_i, grid_f;  // range kernels: the cell grid (g = 0: none)
    gpu::RangeGridArrays grid_host;  // its host form, kept for rebind()
    DeviceBuffer pairs;  // range kernels: candidate pairs of a step (u64)
    PinnedBuffer<unsigned long long> host_pairs;
    double step_pairs = -1;  // candidate pairs of the last step (< 0: not counted)

    Index m0 = 0, m = 0, active = 0, capacity = 0;
    bool has_metric = false;
    DeviceBuffer pos, metric, act, act_next, keep, records, selected, cub_temp;
    std::size_t cub_bytes = 0;
    DeviceBuffer queries, acc;
    DeviceBuffer sphere;  // vMF: [origin, radius] for the finish (FinishParams::sphere), else unallocated
    bool has_sphere = false;
    DeviceBuffer shift;  // Plan::shift: per query, the ordered maximum of its log2 weights (max pass)
    Index query_capacity = 0;
    Index query_room = 0;  // queries of one chunk that bind_part left device memory for
    PinnedBuffer<ModeRecord> host_records;
    PinnedBuffer<float> host_stage;

    Index reported = 0;  // records of the last step
    double kernel_seconds = 0;  // kernels of the last step

    explicit Part(std::shared_ptr<DeviceContext> c)
        : ctx(std::move(c)), stream(ctx->device), start(ctx->device), stop(ctx->device)
    {
    }
};

class CudaBinding final : public Binding, public gpu::Rebindable {
public:
    CudaBinding(Contexts ctx, std::shared_ptr<const PreparedData> data, const Topology& topology,
                const BackendOptions& options, const Plan& plan)
        : ctx_(std::move(ctx)),
          data_(std::move(data)),
          topo_(topology),
          plan_(plan),
          k_(data_->k()),
          pp_(data_->model == KernelModel::PerPoint),
          max_queries_(options.cuda.max_queries > 0 ? options.cuda.max_queries : kDefaultMaxQueries),
          max_points_(options.cuda.max_points > 0 ? options.cuda.max_points : kNoPointLimit)
    {
        if (plan_.fast) {
            layout_ = gpu::build_tile_layout(*data_, plan_.tile, ExponentForm::Expanded);
            tiles_ = layout_.tiles;
        }
        if (plan_.range) {
            if (data_->n() > INT32_MAX)
                throw InvalidArgument("cuda backend: the truncated kernel indexes points with 32 bits; n = " +
                                      std::to_string(data_->n()) + " is too large");
            // More grid dims than the kernels' box holds: one range [0, n) (still truncated).
            if (data_->grid && data_->grid->g() <= kMaxRangeGridDims) g_ = data_->grid->g();
        }
        parts_.resize(ctx_.size());
        on_devices(ctx_, [&](std::size_t i) {
            parts_[i] = std::make_unique<Part>(ctx_[i]);
            bind_part(*parts_[i]);
        });
        // The host copy of the records is needed again only to stream point chunks.
        if (std::all_of(parts_.begin(), parts_.end(), [](const auto& p) { return p->resident; }))
            layout_ = gpu::TileLayout{};
    }

    const PreparedData& data() const noexcept override { return *data_; }
    const Topology& topology() const noexcept override { return topo_; }
    Index mode_count() const noexcept override { return m_; }
    Index active_count() const noexcept override
    {
        Index a = 0;
        for (const auto& p : parts_) a += p->active;
        return a;
    }

    void set_modes(const double* positions, Index m, const double* metric) override
    {
        if (m < 1) throw InvalidArgument("cuda backend: set_modes needs at least one mode, got " + std::to_string(m));
        if (!positions) throw InvalidArgument("cuda backend: set_modes without positions");
        const Index parts = static_cast<Index>(parts_.size());
        const Index per = (m + parts - 1) / parts;
        if (per > INT32_MAX)
            throw InvalidArgument("cuda backend: at most 2^31 - 1 modes per device, got " + std::to_string(per));
        has_modes_ = false;
        m_ = 0;
        on_devices(ctx_, [&](std::size_t i) {
            const Index m0 = std::min<Index>(m, static_cast<Index>(i) * per);
            const Index m1 = std::min<Index>(m, m0 + per);
            set_part_modes(*parts_[i], m0, m1 - m0, positions + m0 * k_, metric ? metric + m0 * k_ : nullptr);
        });
        m_ = m;
        has_modes_ = true;
    }

    void step(double tol2, bool retire, StepReport& report) override
    {
        if (!has_modes_) throw Error("cuda backend: step() before set_modes()");
        const float t2 = static_cast<float>(tol2);
        on_devices(ctx_, [&](std::size_t i) { step_part(*parts_[i], t2, retire); });
        Index total = 0;
        double seconds = 0, pairs = 0;
        for (const auto& p : parts_) {
            total += p->reported;
            seconds = std::max(seconds, p->kernel_seconds);
            pairs = p->step_pairs < 0 || pairs < 0 ? -1.0 : pairs + p->step_pairs;
        }
        gpu::resize_report(report, total);
        Index o = 0;
        static_assert(sizeof(ModeRecord) == 3 * sizeof(std::int32_t), "records are read as 3 words");
        for (const auto& p : parts_) {
            const Index still = gpu::unpack_records(reinterpret_cast<const std::int32_t*>(p->host_records.get()),
                                                    p->reported, p->m0, p->m, report, o, "cuda backend");
            if (retire) p->active = still;
            o += p->reported;
        }
        report.pairs = pairs;
        report.kernel_seconds = seconds;
    }

    void read_modes(double* out) const override
    {
        if (!has_modes_) throw Error("cuda backend: read_modes() before set_modes()");
        on_devices(ctx_, [&](std::size_t i) {
            Part& s = *parts_[i];
            if (s.m == 0) return;
            const std::size_t floats = static_cast<std::size_t>(s.m) * k_;
            MS_CUDA_CHECK(cudaMemcpyAsync(s.host_stage.get(), s.pos.f(), floats * sizeof(float), cudaMemcpyDeviceToHost,
                                          s.stream.get()));
            MS_CUDA_CHECK(cudaStreamSynchronize(s.stream.get()));
            double* o = out + s.m0 * k_;
            const float* stage = s.host_stage.get();
            MS_PARALLEL_FOR(floats)
            for (std::size_t j = 0; j < floats; ++j) o[j] = stage[j];
        });
    }

    bool rebind(std::shared_ptr<const PreparedData> data) override
    {
        // Where the device holds only the points (and grid) bind() uploads: not the fast kernels'
        // tile layout nor streamed chunks; the plan bind() would make for `data` is this one.
        if (!data || plan_.fast || data->n() < 1 || data->n() > INT32_MAX || data->k() != k_ ||
            (data->model == KernelModel::PerPoint) != pp_ ||
            std::isfinite(data->cutoff2) != std::isfinite(data_->cutoff2) ||
            detail::needs_log2_shift(*data) != plan_.shift || data->profile != data_->profile)
            return false;
        const auto n = static_cast<std::size_t>(data->n()), kk = static_cast<std::size_t>(k_);
        for (const auto& p : parts_)
            if (!p->resident || p->points.bytes() < n * kk * sizeof(float) ||
                (pp_ && (p->precision.bytes() < n * kk * sizeof(float) || p->log_weight.bytes() < n * sizeof(float))))
                return false;
        data_ = std::move(data);
        g_ = plan_.range && data_->grid && data_->grid->g() <= kMaxRangeGridDims ? data_->grid->g() : 0;
        has_modes_ = false;
        m_ = 0;
        const Index parts = static_cast<Index>(parts_.size());
        on_devices(ctx_, [&](std::size_t i) {
            Part& s = *parts_[i];
            s.chunk_points = data_->n();
            s.m = s.active = s.reported = 0;
            s.query_room = std::min<Index>(max_queries_, (data_->n() + parts - 1) / parts);
            upload_grid(s);
            if (pp_ || s.host_stage.size() == 0) return upload_chunk(s, 0);
            staged_upload(s.points.f(), data_->points_f.data(), n * kk * sizeof(float), s.host_stage.get(),
                          s.host_stage.size() * sizeof(float), s.stream.get());  // the modes' pinned block
        });
        return true;
    }

    /// The step's kernels on the query and accumulator buffers, which hold nothing between steps, so
    /// the modes and active lists of set_modes() are untouched; the positions are split over the
    /// devices as set_modes() splits modes.
    double accumulate(const double* positions, Index count, double* sums) override
    {
        detail::check_accumulate(*data_, positions, count, sums);
        const Index parts = static_cast<Index>(parts_.size());
        const Index per = (count + parts - 1) / parts;
        std::vector<double> pairs(parts_.size(), 0.0);
        on_devices(ctx_, [&](std::size_t i) {
            const Index q0 = std::min<Index>(count, static_cast<Index>(i) * per);
            const Index q1 = std::min<Index>(count, q0 + per);
            pairs[i] = accumulate_part(*parts_[i], positions + q0 * k_, q1 - q0, sums + q0 * sum_width());
        });
        double total = 0;
        for (double p : pairs) total += p;
        return total;
    }

private:
    /// Bytes per point (record) of the bound layout on the device.
    std::size_t point_bytes() const
    {
        if (plan_.fast) return static_cast<std::size_t>(gpu::record_stride(k_, pp_)) * sizeof(float);
        return static_cast<std::size_t>(pp_ ? 2 * k_ + 1 : k_) * sizeof(float);
    }

    /// Points the kernels run over: whole tiles (padding included) for the fast family.
    Index total_points() const { return plan_.fast ? tiles_ * plan_.tile : data_->n(); }

    void bind_part(Part& s)
    {
        if (plan_.smem > 48 * 1024) {  // opt in to more than 48 KiB of dynamic shared memory (this device)
            MS_CUDA_CHECK(cudaFuncSetAttribute(plan_.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(plan_.smem)));
            if (plan_.max_kernel)
                MS_CUDA_CHECK(cudaFuncSetAttribute(plan_.max_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                   static_cast<int>(plan_.smem)));
        }
        const Index n = total_points();
        std::size_t free_b = 0, total_b = 0;
        MS_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
        const std::size_t scratch_b =
            plan_.fast || plan_.range || plan_.gemm || k_ <= 8
                ? 0
                : static_cast<std::size_t>(topo_.ppus) * topo_.pus_per_ppu * 3 * k_ * sizeof(float);
        // Room for the modes, assuming as many as points (the usual run: every point a seed).
        const Index share = (data_->n() + static_cast<Index>(parts_.size()) - 1) / static_cast<Index>(parts_.size());
        const Index qcap = std::min<Index>(max_queries_, share);
        s.query_room = qcap;
        const std::size_t query_b =
            static_cast<std::size_t>(qcap) * (k_ + accumulator_stride(k_, pp_) + (plan_.shift ? 1 : 0)) * sizeof(float);
        const std::size_t mode_b = static_cast<std::size_t>(share) *
                                   (2 * k_ * sizeof(float) + 2 * sizeof(std::int32_t) + 1 + sizeof(ModeRecord));
        // Keep a quarter of the free memory for the runtime and other users of the device.
        const std::size_t budget = free_b / 4 * 3;
        const std::size_t reserve = scratch_b + query_b + mode_b;
        if (reserve >= budget)
            throw DeviceError("cuda backend: device " + std::to_string(s.ctx->device) + " has " +
                              std::to_string(free_b) + " bytes free, too little for the mode and query buffers");
        const Index fit = static_cast<Index>((budget - reserve) / (point_bytes() + sizeof(float)));
        Index chunk = std::min({n, max_points_, fit});
        if (plan_.fast) chunk = std::max<Index>(1, chunk / plan_.tile) * plan_.tile;
        chunk = std::max<Index>(1, chunk);
        s.resident = chunk >= n;
        s.chunk_points = std::min(chunk, n);

        if (scratch_b) s.scratch.allocate(scratch_b);
        const std::size_t cp = static_cast<std::size_t>(s.chunk_points);
        if (plan_.fast) {
            s.points.allocate(cp * point_bytes());
            s.centres.allocate(cp / plan_.tile * k_ * sizeof(float));
            s.radii.allocate(cp / plan_.tile * sizeof(float));
        } else {
            s.points.allocate(cp * k_ * sizeof(float));
            if (pp_) {
                s.precision.allocate(cp * k_ * sizeof(float));
                s.log_weight.allocate(cp * sizeof(float));
            }
        }
        if (plan_.range) {
            if (!s.resident)
                throw DeviceError("cuda backend: the truncated kernel needs all " + std::to_string(n) +
                                  " points on device " + std::to_string(s.ctx->device) +
                                  ", which has too little free memory (" + std::to_string(free_b) + " bytes)");
            upload_grid(s);
            s.pairs.allocate(sizeof(unsigned long long));
            s.host_pairs.allocate(1);
        }
        if (s.resident) upload_chunk(s, 0);
        MS_CUDA_CHECK(warm_up_mode_kernels(s.stream.get()));
    }

    /// The cell grid in the range kernels' layout (kernels/meanshift_ranges.h: gi, gf, start).
    void upload_grid(Part& s) const
    {
        if (g_ == 0) return;
        gpu::range_grid_arrays(*data_->grid, g_, s.grid_host);
        const auto& [gi, gf, start] = s.grid_host;
        s.grid_i.reserve(gi.size() * sizeof(std::int32_t));
        s.grid_f.reserve(gf.size() * sizeof(float));
        s.grid_start.reserve(start.size() * sizeof(std::int32_t));
        const cudaStream_t st = s.stream.get();
        MS_CUDA_CHECK(
            cudaMemcpyAsync(s.grid_i.f(), gi.data(), gi.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice, st));
        MS_CUDA_CHECK(cudaMemcpyAsync(s.grid_f.f(), gf.data(), gf.size() * sizeof(float), cudaMemcpyHostToDevice, st));
        if (s.host_stage.size() > 0)  // rebind(): the modes' pinned block is free
            return staged_upload(s.grid_start.f(), start.data(), start.size() * sizeof(std::int32_t),
                                 s.host_stage.get(), s.host_stage.size() * sizeof(float), st);
        MS_CUDA_CHECK(cudaMemcpyAsync(s.grid_start.f(), start.data(), start.size() * sizeof(std::int32_t),
                                      cudaMemcpyHostToDevice, st));
        MS_CUDA_CHECK(cudaStreamSynchronize(st));  // pageable sources, refilled by the next rebind()
    }

    /// Copies the points [first, first + chunk_points) (clipped) into the device buffers.
    void upload_chunk(Part& s, Index first) const
    {
        const Index cnt = std::min(s.chunk_points, total_points() - first);
        const cudaStream_t st = s.stream.get();
        if (plan_.fast) {
            const std::size_t stride = static_cast<std::size_t>(layout_.stride);
            MS_CUDA_CHECK(cudaMemcpyAsync(s.points.f(), layout_.records.data() + first * stride,
                                          cnt * stride * sizeof(float), cudaMemcpyHostToDevice, st));
            const Index t0 = first / plan_.tile, nt = cnt / plan_.tile;
            MS_CUDA_CHECK(cudaMemcpyAsync(s.centres.f(), layout_.centres.data() + t0 * k_, nt * k_ * sizeof(float),
                                          cudaMemcpyHostToDevice, st));
            MS_CUDA_CHECK(cudaMemcpyAsync(s.radii.f(), layout_.radii.data() + t0, nt * sizeof(float),
                                          cudaMemcpyHostToDevice, st));
        } else {
            MS_CUDA_CHECK(cudaMemcpyAsync(s.points.f(), data_->points_f.data() + first * k_, cnt * k_ * sizeof(float),
                                          cudaMemcpyHostToDevice, st));
            if (pp_) {
                MS_CUDA_CHECK(cudaMemcpyAsync(s.precision.f(), data_->precision_f.data() + first * k_,
                                              cnt * k_ * sizeof(float), cudaMemcpyHostToDevice, st));
                MS_CUDA_CHECK(cudaMemcpyAsync(s.log_weight.f(), data_->log_weight_f.data() + first, cnt * sizeof(float),
                                              cudaMemcpyHostToDevice, st));
            }
        }
        // Pageable host memory: the copy may still read it after return; finish before reuse.
        MS_CUDA_CHECK(cudaStreamSynchronize(st));
    }

    void set_part_modes(Part& s, Index m0, Index m, const double* positions, const double* metric)
    {
        s.m0 = m0;
        s.m = 0;
        s.active = 0;
        s.reported = 0;
        if (m == 0) return;
        const cudaStream_t st = s.stream.get();
        const std::size_t floats = static_cast<std::size_t>(m) * k_;
        if (s.capacity < m) {
            s.capacity = 0;
            s.pos.allocate(floats * sizeof(float));
            s.metric.allocate(floats * sizeof(float));
            s.act.allocate(static_cast<std::size_t>(m) * sizeof(std::int32_t));
            s.act_next.allocate(static_cast<std::size_t>(m) * sizeof(std::int32_t));
            s.keep.allocate(static_cast<std::size_t>(m));
            s.records.allocate(static_cast<std::size_t>(m) * sizeof(ModeRecord));
            s.selected.allocate(sizeof(std::int32_t));
            MS_CUDA_CHECK(compact_temp_bytes(m, s.cub_bytes));
            s.cub_temp.allocate(std::max<std::size_t>(s.cub_bytes, 16));
            s.host_records.allocate(static_cast<std::size_t>(m), &pinned_pool(s.ctx->device));
            s.host_stage.allocate(floats, &pinned_pool(s.ctx->device));
            s.capacity = m;
        }
        reserve_queries(s, std::min<Index>(max_queries_, m));
        float* stage = s.host_stage.get();
        MS_PARALLEL_FOR(floats)
        for (std::size_t j = 0; j < floats; ++j) stage[j] = static_cast<float>(positions[j]);
        MS_CUDA_CHECK(cudaMemcpyAsync(s.pos.f(), stage, floats * sizeof(float), cudaMemcpyHostToDevice, st));
        s.has_metric = metric != nullptr;
        if (metric) {
            MS_CUDA_CHECK(cudaStreamSynchronize(st));  // the staging buffer is reused
            MS_PARALLEL_FOR(floats)
            for (std::size_t j = 0; j < floats; ++j) stage[j] = static_cast<float>(metric[j]);
            MS_CUDA_CHECK(cudaMemcpyAsync(s.metric.f(), stage, floats * sizeof(float), cudaMemcpyHostToDevice, st));
        }
        s.has_sphere = data_->sphere_radius > 0;
        if (s.has_sphere) {
            if (data_->sphere_origin.size() != k_)
                throw InvalidArgument("cuda backend: the vMF sphere's origin has " +
                                      std::to_string(data_->sphere_origin.size()) +
                                      " values for k = " + std::to_string(k_));
            std::vector<float> sphere(static_cast<std::size_t>(k_) + 1);
            for (int d = 0; d < k_; ++d)
                sphere[static_cast<std::size_t>(d)] = static_cast<float>(data_->sphere_origin[d]);
            sphere[static_cast<std::size_t>(k_)] = static_cast<float>(data_->sphere_radius);
            s.sphere.allocate(sphere.size() * sizeof(float));
            MS_CUDA_CHECK(
                cudaMemcpy(s.sphere.f(), sphere.data(), sphere.size() * sizeof(float), cudaMemcpyHostToDevice));
        }
        MS_CUDA_CHECK(launch_iota(s.act.as<std::int32_t>(), m, st));
        MS_CUDA_CHECK(cudaStreamSynchronize(st));
        s.m = m;
        s.active = m;
    }

    /// Query and accumulator buffers for chunks of up to `qcap` queries.
    void reserve_queries(Part& s, Index qcap) const
    {
        if (s.query_capacity >= qcap) return;
        s.query_capacity = 0;
        s.queries.allocate(static_cast<std::size_t>(qcap) * k_ * sizeof(float));
        s.acc.allocate(static_cast<std::size_t>(qcap) * accumulator_stride(k_, pp_) * sizeof(float));
        if (plan_.shift) s.shift.allocate(static_cast<std::size_t>(qcap) * sizeof(int));
        s.query_capacity = qcap;
    }

    /// Alg. 3's sums of the `qn` queries in s.queries over all points into s.acc (zeroed first;
    /// point chunks streamed when not resident): what a step and accumulate() share.
    void sum_queries(Part& s, Index qn) const
    {
        const Index n = total_points();
        if (plan_.shift) {
            // The max pass over every point chunk first: bytes 0x80 (MS_SHIFT_EMPTY) are "no candidate".
            MS_CUDA_CHECK(
                cudaMemsetAsync(s.shift.f(), 0x80, static_cast<std::size_t>(qn) * sizeof(int), s.stream.get()));
            for (Index p0 = 0; p0 < n; p0 += s.chunk_points) {
                if (!s.resident) upload_chunk(s, p0);
                launch_max(s, std::min(s.chunk_points, n - p0), qn);
            }
        }
        MS_CUDA_CHECK(cudaMemsetAsync(
            s.acc.f(), 0, static_cast<std::size_t>(qn) * accumulator_stride(k_, pp_) * sizeof(float), s.stream.get()));
        for (Index p0 = 0; p0 < n; p0 += s.chunk_points) {
            if (!s.resident) upload_chunk(s, p0);
            launch(s, std::min(s.chunk_points, n - p0), qn);
        }
    }

    /// accumulate() for `count` positions on one device: chunks of the queries bind_part made room
    /// for, converted to float32, summed by the step's kernels, read back and made absolute.
    double accumulate_part(Part& s, const double* positions, Index count, double* sums)
    {
        if (count == 0) return 0;
        const cudaStream_t st = s.stream.get();
        const int stride = accumulator_stride(k_, pp_);
        const Index chunk = std::min(count, std::max(s.query_capacity, s.query_room));
        reserve_queries(s, chunk);
        std::vector<float> q(static_cast<std::size_t>(chunk) * k_), acc(static_cast<std::size_t>(chunk) * stride);
        std::vector<std::int32_t> shifts(plan_.shift ? static_cast<std::size_t>(chunk) : 0);
        if (plan_.range) MS_CUDA_CHECK(cudaMemsetAsync(s.pairs.f(), 0, sizeof(unsigned long long), st));
        for (Index q0 = 0; q0 < count; q0 += chunk) {
            const Index qn = std::min(chunk, count - q0);
            const double* y = positions + q0 * k_;
            for (std::size_t j = 0; j < static_cast<std::size_t>(qn) * k_; ++j) q[j] = static_cast<float>(y[j]);
            MS_CUDA_CHECK(cudaMemcpyAsync(s.queries.f(), q.data(), static_cast<std::size_t>(qn) * k_ * sizeof(float),
                                          cudaMemcpyHostToDevice, st));
            sum_queries(s, qn);
            MS_CUDA_CHECK(cudaMemcpyAsync(acc.data(), s.acc.f(), static_cast<std::size_t>(qn) * stride * sizeof(float),
                                          cudaMemcpyDeviceToHost, st));
            if (plan_.shift)  // each query's log2 shift, undone in float64
                MS_CUDA_CHECK(cudaMemcpyAsync(shifts.data(), s.shift.f(),
                                              static_cast<std::size_t>(qn) * sizeof(std::int32_t),
                                              cudaMemcpyDeviceToHost, st));
            MS_CUDA_CHECK(cudaStreamSynchronize(st));
            // The fast kernels' per-point records are in the expanded form (a common factor L).
            detail::add_relative_sums(acc.data(), 1, y, qn, k_, pp_,
                                      plan_.fast && pp_ ? detail::kExpandedPerPointSumScale : 1.0, sums + q0 * stride,
                                      plan_.shift ? shifts.data() : nullptr);
        }
        if (!plan_.range) return static_cast<double>(count) * static_cast<double>(data_->n());
        MS_CUDA_CHECK(
            cudaMemcpyAsync(s.host_pairs.get(), s.pairs.f(), sizeof(unsigned long long), cudaMemcpyDeviceToHost, st));
        MS_CUDA_CHECK(cudaStreamSynchronize(st));
        return static_cast<double>(*s.host_pairs.get());
    }

    void step_part(Part& s, float tol2, bool retire)
    {
        s.reported = 0;
        s.kernel_seconds = 0;
        s.step_pairs = plan_.range ? 0.0 : -1.0;
        const Index count = s.active;
        if (count == 0) return;
        const cudaStream_t st = s.stream.get();
        const Index qchunk = std::min<Index>(count, max_queries_);
        std::int32_t* act = s.act.as<std::int32_t>();
        ModeRecord* rec = s.records.as<ModeRecord>();
        unsigned char* keep = s.keep.as<unsigned char>();
        MS_CUDA_CHECK(cudaEventRecord(s.start.get(), st));
        if (plan_.range) MS_CUDA_CHECK(cudaMemsetAsync(s.pairs.f(), 0, sizeof(unsigned long long), st));
        for (Index q0 = 0; q0 < count; q0 += qchunk) {
            const Index qn = std::min(qchunk, count - q0);
            MS_CUDA_CHECK(launch_gather(s.pos.f(), act + q0, qn, k_, s.queries.f(), st));
            sum_queries(s, qn);
            FinishParams f;
            f.positions = s.pos.f();
            f.metric = s.has_metric ? s.metric.f() : nullptr;
            f.active = act + q0;
            f.count = qn;
            f.k = k_;
            f.per_point = pp_ ? 1 : 0;
            f.acc = s.acc.f();
            f.tol2 = tol2;
            f.records = rec + q0;
            f.keep = keep + q0;
            f.sphere = s.has_sphere ? s.sphere.f() : nullptr;
            MS_CUDA_CHECK(launch_finish(f, st));
        }
        MS_CUDA_CHECK(cudaEventRecord(s.stop.get(), st));
        if (retire) {
            MS_CUDA_CHECK(launch_compact(s.cub_temp.as<void>(), s.cub_bytes, act, keep, s.act_next.as<std::int32_t>(),
                                         s.selected.as<std::int32_t>(), count, st));
            std::swap(s.act, s.act_next);
        }
        MS_CUDA_CHECK(cudaMemcpyAsync(s.host_records.get(), rec, static_cast<std::size_t>(count) * sizeof(ModeRecord),
                                      cudaMemcpyDeviceToHost, st));
        if (plan_.range)
            MS_CUDA_CHECK(cudaMemcpyAsync(s.host_pairs.get(), s.pairs.f(), sizeof(unsigned long long),
                                          cudaMemcpyDeviceToHost, st));
        MS_CUDA_CHECK(cudaStreamSynchronize(st));
        s.step_pairs = plan_.range ? static_cast<double>(*s.host_pairs.get()) : -1.0;
        float ms = 0;
        MS_CUDA_CHECK(cudaEventElapsedTime(&ms, s.start.get(), s.stop.get()));
        s.kernel_seconds = 1e-3 * ms;
        s.reported = count;  // step() unpacks the records and, when retiring, sets s.active
    }

    /// The point-buffer fields the GEMM, range and topology kernels' parameters share.
    template <class Params>
    void set_points(Params& p, const Part& s, Index npoints) const
    {
        p.points = s.points.f();
        p.precision = pp_ ? s.precision.f() : nullptr;
        p.log_weight = pp_ ? s.log_weight.f() : nullptr;
        p.n = static_cast<decltype(p.n)>(npoints);
        p.k = k_;
    }

    /// One launch of a GEMM-family kernel `fn` (the step's or its max pass: the same shape) over
    /// `npoints` device-resident points for the nq queries. Point slices (blockIdx.y) until the blocks
    /// fill every SM twice: few modes (bin seeds, the last active ones) still spread over the GPU.
    void launch_gemm(const void* fn, Part& s, Index npoints, Index nq, int* shift) const
    {
        const GemmKernel& gk = plan_.gemm_kernel;
        GemmParams p;
        set_points(p, s, npoints);
        p.cut_log2 =
            std::isfinite(data_->cutoff2) ? static_cast<float>(-0.5 * 1.4426950408889634 * data_->cutoff2) : -INFINITY;
        p.queries = s.queries.f();
        p.acc = s.acc.f();
        p.count = nq;
        p.log2_shift = shift;
        const Index bx = (nq + gk.modes - 1) / gk.modes;
        const Index want = 2 * static_cast<Index>(s.ctx->prop.multiProcessorCount);
        const Index tiles = (npoints + gk.points - 1) / gk.points;
        const Index slices = std::max<Index>(1, std::min<Index>({(want + bx - 1) / bx, tiles, 65535}));
        void* args[] = {&p};
        MS_CUDA_CHECK(cudaLaunchKernel(fn, dim3(static_cast<unsigned>(bx), static_cast<unsigned>(slices)),
                                       dim3(gk.threads), args, gk.smem, s.stream.get()));
    }

    /// Plan::shift: the max pass over `npoints` device-resident points for the nq queries, into s.shift
    /// (atomic max): the GEMM kernel's own on the step's grid, else the direct-form pass.
    void launch_max(Part& s, Index npoints, Index nq) const
    {
        if (plan_.gemm) {
            launch_gemm(plan_.max_kernel, s, npoints, nq, s.shift.as<int>());  // acc is not written
        } else {
            MS_CUDA_CHECK(launch_log2_max(
                s.points.f(), s.precision.f(), s.log_weight.f(), static_cast<long long>(npoints), k_,
                static_cast<float>(std::min(data_->cutoff2, 3.0e38)), s.queries.f(), static_cast<long long>(nq),
                s.shift.as<int>(), 4 * s.ctx->prop.multiProcessorCount, s.stream.get()));
        }
    }

    /// One launch over `npoints` device-resident points (from the start of the buffers).
    void launch(Part& s, Index npoints, Index nq) const
    {
        int* shift = plan_.shift ? s.shift.as<int>() : nullptr;
        const int T = topo_.pus_per_ppu;
        if (plan_.gemm) {
            launch_gemm(plan_.gemm_kernel.fn, s, npoints, nq, shift);
        } else if (plan_.range) {
            RangeParams p;
            set_points(p, s, npoints);
            p.start = s.grid_start.as<int>();
            p.grid_i = s.grid_i.as<int>();
            p.grid_f = s.grid_f.f();
            p.g = g_;
            p.cut2 = static_cast<float>(data_->cutoff2);
            p.f_vppu = topo_.f_vppu;
            p.f_load = topo_.f_load;
            // The load factor at work (Theorem 2): when f_load = f_vppu and the modes are too few to
            // fill the z resident blocks (bin seeds, the last active modes), a mode's candidate loop
            // is spread over more PUs, doubling up to a warp while the blocks stay at most z.
            if (p.f_load == p.f_vppu) {
                while (p.f_vppu < 32 && p.f_vppu * 2 <= T && (nq * p.f_vppu * 2 + T - 1) / T <= topo_.ppus)
                    p.f_vppu *= 2;
                p.f_load = p.f_vppu;
            }
            p.queries = s.queries.f();
            p.acc = s.acc.f();
            p.count = nq;
            p.pairs = s.pairs.as<unsigned long long>();
            p.log2_shift = shift;
            // One block per block of modes (not z persistent blocks looping over them): the union
            // boxes differ in size from block to block, and the hardware's block scheduler then
            // balances them (H100, 1e6 2-D blobs: 0.34 s of iterations with z looping blocks,
            // against OpenCL's 0.09 s with one work-group per block).
            const Index vppus = T / p.f_vppu;
            const unsigned grid = static_cast<unsigned>(std::min<Index>((nq + vppus - 1) / vppus, INT32_MAX));
            void* args[] = {&p};
            MS_CUDA_CHECK(cudaLaunchKernel(plan_.kernel, dim3(grid), dim3(T), args, 0, s.stream.get()));
        } else if (plan_.fast) {
            FastParams p;
            p.data = s.points.f();
            p.centres = s.centres.f();
            p.radii = s.radii.f();
            p.tiles = npoints / plan_.tile;
            p.tile = plan_.tile;
            p.queries = s.queries.f();
            p.acc = s.acc.f();
            p.count = nq;
            p.groups = (nq + static_cast<Index>(T) * plan_.r - 1) / (static_cast<Index>(T) * plan_.r);
            // Work units (query group × point slice) are dealt to the z resident blocks in rounds;
            // pick the number of slices that wastes the least of the last round (fewer on ties).
            Index slices = 1;
            double best = -1;
            const Index max_slices = std::max<Index>(64, 4 * topo_.ppus / p.groups);
            for (Index sl = 1; sl <= std::min<Index>(p.tiles, max_slices); ++sl) {
                const Index tps = (p.tiles + sl - 1) / sl;
                const Index real = (p.tiles + tps - 1) / tps;
                const Index units = p.groups * real;
                const Index rounds = (units + topo_.ppus - 1) / topo_.ppus;
                const double eff = static_cast<double>(units) / static_cast<double>(rounds * topo_.ppus) *
                                   static_cast<double>(p.tiles) / static_cast<double>(real * tps);
                if (eff > best + 0.01) {
                    best = eff;
                    slices = real;
                }
            }
            p.tiles_per_slice = (p.tiles + slices - 1) / slices;
            slices = (p.tiles + p.tiles_per_slice - 1) / p.tiles_per_slice;
            p.units = p.groups * slices;
            const unsigned grid = static_cast<unsigned>(std::min<Index>(p.units, topo_.ppus));
            void* args[] = {&p};
            MS_CUDA_CHECK(cudaLaunchKernel(plan_.kernel, dim3(grid), dim3(T), args, plan_.smem, s.stream.get()));
        } else {
            TopologyParams p;
            set_points(p, s, npoints);
            p.f_vppu = topo_.f_vppu;
            p.f_load = topo_.f_load;
            p.tile = plan_.tile;
            p.queries = s.queries.f();
            p.acc = s.acc.f();
            p.count = nq;
            p.scratch = s.scratch.f();
            p.log2_shift = shift;
            const Index vppus = T / topo_.f_vppu;
            const unsigned grid = static_cast<unsigned>(std::min<Index>((nq + vppus - 1) / vppus, topo_.ppus));
            void* args[] = {&p};
            MS_CUDA_CHECK(cudaLaunchKernel(plan_.kernel, dim3(grid), dim3(T), args, plan_.smem, s.stream.get()));
        }
        MS_CUDA_CHECK(cudaGetLastError());
    }

    Contexts ctx_;
    std::shared_ptr<const PreparedData> data_;
    Topology topo_;
    Plan plan_;
    int k_ = 0;
    bool pp_ = false;
    Index max_queries_ = 0, max_points_ = 0;
    gpu::TileLayout layout_;  // host records, kept only while some device streams point chunks
    Index tiles_ = 0;
    int g_ = 0;  // grid dims the range kernels use (0: one range [0, n))
    std::vector<std::unique_ptr<Part>> parts_;
    Index m_ = 0;
    bool has_modes_ = false;
};

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

class CudaBackend final : public Backend {
public:
    explicit CudaBackend(const BackendOptions& options) : options_(options)
    {
        validate_options(options_);
        int count = 0;
        MS_CUDA_CHECK(cudaGetDeviceCount(&count));
        std::vector<int> ids = options_.devices;
        if (ids.empty())
            for (int i = 0; i < count; ++i) ids.push_back(i);
        if (ids.empty()) throw BackendUnavailable("cuda backend: no CUDA device");
        for (int id : ids)
            if (id < 0 || id >= count)
                throw InvalidArgument("cuda backend: device index " + std::to_string(id) + " out of range (" +
                                      std::to_string(count) + " CUDA devices)");
        for (int id : ids) {
            auto c = std::make_shared<DeviceContext>();
            c->device = id;
            MS_CUDA_CHECK(cudaGetDeviceProperties(&c->prop, id));
            if (ids.size() > 1) c->worker = std::make_unique<DeviceWorker>(id);
            contexts_.push_back(std::move(c));
        }
        // Creating a device's primary context takes ~0.13 s on an H200 (the first runtime call that
        // needs it pays it: resolve_topology); start it now so that it overlaps the host's
        // preparation of the data. Errors are left to the calls that need the context.
        warm_up_ = std::async(std::launch::async, [ids] {
            for (int id : ids)
                if (cudaSetDevice(id) == cudaSuccess) (void)cudaFree(nullptr);
        });
    }

    std::string name() const override { return "cuda"; }
    bool supports_cutoff() const override { return true; }
    /// Every profile: compact ones on the range kernels (never GEMM), vMF on every kernel (the finish projects).
    bool supports_profile(KernelProfile) const override { return true; }

    std::vector<DeviceInfo> devices() const override
    {
        std::vector<DeviceInfo> out;
        for (const auto& c : contexts_) out.push_back(describe(c->device, c->prop));
        return out;
    }

    Topology resolve_topology(const Topology& req, const PreparedData& data) const override
    {
        const DeviceContext& c = *contexts_.front();
        const cudaDeviceProp& prop = c.prop;
        const int k = data.k();
        const bool pp = data.model == KernelModel::PerPoint;
        const bool truncated = std::isfinite(data.cutoff2);
        if (is_compact(data.profile) && !(data.cutoff2 <= 1.0))  // the range kernels run them, within the support
            throw InvalidArgument(std::string("cuda backend: the ") + profile_name(data.profile) +
                                  " profile needs PreparedData::cutoff2 <= 1 (its support; the driver sets 1), got " +
                                  std::to_string(data.cutoff2));
        Topology t = req;
        if (gemm_chosen(options_, req, k, pp, truncated, target(), data.profile)) {
            // The GEMM kernels' fixed shape: a block of 4 or 8 warps; each mode's row is shared by the
            // 4 threads of a quad (f_vppu = f_load = 4), reduced by shuffles.
            const GemmKernel gk = gemm_kernel(k, pp, truncated, target());
            if (!gemm_shape(req, gk))
                throw InvalidArgument(
                    "cuda backend: pair_form=gemm runs its own block shape (tau = " + std::to_string(gk.threads) +
                    ", f_vppu = f_load = 4), requested " + req.to_string() + "; leave them 0 or use pair_form=direct");
            t.pus_per_ppu = gk.threads;
            t.f_vppu = t.f_load = 4;
        }
        if (t.pus_per_ppu == 0) t.pus_per_ppu = truncated ? kDefaultRangeThreads : kDefaultThreads;
        if (t.f_vppu == 0) t.f_vppu = truncated ? std::min(kDefaultRangeVppu, t.pus_per_ppu) : 1;
        if (t.f_load == 0) t.f_load = t.f_vppu;
        if (t.pus_per_ppu % 32 != 0 || t.pus_per_ppu > prop.maxThreadsPerBlock)
            throw InvalidArgument("cuda backend: tau (threads per block) must be a multiple of 32 and ≤ " +
                                  std::to_string(prop.maxThreadsPerBlock) + ", got " + std::to_string(t.pus_per_ppu));
        if (!is_pow2(t.f_vppu))
            throw InvalidArgument("cuda backend: f_vppu must be a power of two (warp shuffle / tree "
                                  "reduction), got " +
                                  std::to_string(t.f_vppu));
        const Plan plan =
            make_plan(options_, t, k, pp, truncated, detail::needs_log2_shift(data), target(), data.profile);
        if (plan.smem > static_cast<std::size_t>(prop.sharedMemPerBlockOptin))
            throw InvalidArgument("cuda backend: preload tile of " + std::to_string(plan.tile) + " points needs " +
                                  std::to_string(plan.smem) + " bytes of shared memory, the device allows " +
                                  std::to_string(prop.sharedMemPerBlockOptin) + "; lower preload_size");
        const int per_sm = blocks_per_sm(c, plan, t.pus_per_ppu);
        if (per_sm < 1)
            throw InvalidArgument("cuda backend: a block of " + std::to_string(t.pus_per_ppu) +
                                  " threads does not fit on one SM with this kernel (registers or shared "
                                  "memory); lower tau or preload_size");
        if (t.ppus == 0) t.ppus = prop.multiProcessorCount * per_sm;  // one full wave of resident blocks
        validate_topology(t, name());
        return t;
    }

    int max_neighbours() const override { return gpu::kKnnMaxCount; }
    /// Brute force on the first device (kernels/meanshift_knn.h), the queries in chunks whose
    /// results take at most 256 MB of device memory.
    MatrixD nearest_distances(const MatrixF& points, const MatrixF& queries, int count) override
    {
        gpu::check_knn_arguments(points, queries, count, name());
        const int k = static_cast<int>(points.cols());
        DeviceScope scope(contexts_.front()->device);
        const Index m = queries.rows();
        const Index chunk = gpu::knn_chunk(m, count, std::size_t(256) << 20);
        DeviceBuffer p, q, out;
        p.allocate(static_cast<std::size_t>(points.size()) * sizeof(float));
        q.allocate(static_cast<std::size_t>(chunk * k) * sizeof(float));
        out.allocate(static_cast<std::size_t>(chunk * count) * sizeof(float));
        MS_CUDA_CHECK(cudaMemcpy(p.f(), points.data(), p.bytes(), cudaMemcpyHostToDevice));
        MatrixF host(chunk, count);
        MatrixD result(m, count);
        for (Index b = 0; b < m; b += chunk) {
            const Index c = std::min(chunk, m - b);
            MS_CUDA_CHECK(cudaMemcpy(q.f(), queries.data() + b * k, static_cast<std::size_t>(c * k) * sizeof(float),
                                     cudaMemcpyHostToDevice));
            MS_CUDA_CHECK(
                cuda::launch_knn(p.f(), static_cast<int>(points.rows()), q.f(), c, k, count, out.f(), nullptr));
            MS_CUDA_CHECK(cudaMemcpy(host.data(), out.f(), static_cast<std::size_t>(c * count) * sizeof(float),
                                     cudaMemcpyDeviceToHost));
            result.middleRows(b, c) = host.topRows(c).cast<double>();
        }
        return result;
    }

    std::unique_ptr<Binding> bind(std::shared_ptr<const PreparedData> data, const Topology& topology) override
    {
        if (!data) throw InvalidArgument("cuda backend: bind() without data");
        if (data->n() < 1 || data->k() < 1)
            throw InvalidArgument("cuda backend: bind() needs n >= 1 points of k >= 1 dimensions");
        const Topology t = resolve_topology(topology, *data);
        const Plan plan =
            make_plan(options_, t, data->k(), data->model == KernelModel::PerPoint, std::isfinite(data->cutoff2),
                      detail::needs_log2_shift(*data), target(), data->profile);
        return std::make_unique<CudaBinding>(contexts_, std::move(data), t, options_, plan);
    }

private:
    /// sm_90a kernels where the tuning allows and every device is 9.0; the smallest opt-in shared memory.
    GemmTarget target() const
    {
        GemmTarget g{options_.cuda.wgmma && !contexts_.empty(), ~0ul};
        for (const auto& c : contexts_) {
            g.wgmma = g.wgmma && wgmma_device(c->prop.major, c->prop.minor);
            g.smem = std::min(g.smem, static_cast<unsigned long>(c->prop.sharedMemPerBlockOptin));
        }
        return g;
    }

    BackendOptions options_;
    std::future<void> warm_up_;  // context creation in the background; waited for on destruction
    Contexts contexts_;
};

BackendStatus probe()
{
    BackendStatus st;
    st.name = "cuda";
    st.compiled_in = true;
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();  // clear the (non-sticky) error
        st.reason = "no CUDA device: cudaGetDeviceCount failed: " + error_text(e);
        return st;
    }
    if (count == 0) {
        st.reason = "no CUDA device";
        return st;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp p{};
        const cudaError_t pe = cudaGetDeviceProperties(&p, i);
        if (pe != cudaSuccess) {
            st.reason = "no CUDA device: cudaGetDeviceProperties(" + std::to_string(i) + ") failed: " + error_text(pe);
            st.devices.clear();
            return st;
        }
        st.devices.push_back(describe(i, p));
    }
    st.usable = true;
    return st;
}

}  // namespace
}  // namespace cuda

namespace detail {
BackendFactory cuda_factory()
{
    BackendFactory f;
    f.name = "cuda";
    f.probe = [] { return cuda::probe(); };
    f.create = [](const BackendOptions& o) { return std::unique_ptr<Backend>(new cuda::CudaBackend(o)); };
    return f;
}
}  // namespace detail

}  // namespace meanshift
