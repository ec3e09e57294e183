// cuda: the skeleton's step (Alg. 3 / Alg. 7) on NVIDIA GPUs.
//   PPU = SM / thread block, PU = thread, vPPU = f_vppu consecutive threads.
//   f_vppu = 1 and k ≤ 8: the fast kernels (fast_kernel.cuh), each PU carries r modes.
//   otherwise: the topology kernels (topology_kernels.cu), Alg. 3 exactly, any power-of-two f_vppu.
// Several GPUs: the queries of a step are split across the devices (one host thread each), every
// device holds the points. Queries are processed in chunks; points that do not fit one device's
// memory are streamed in chunks whose partial sums add up in the accumulators.
#include "backends/cuda/cuda_check.hpp"
#include "backends/cuda/device_buffer.hpp"
#include "backends/cuda/kernel_params.hpp"
#include "backends/cuda/kernel_timing.hpp"
#include "backends/cuda/tiled_layout.hpp"
#include "backends/factory.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

namespace meanshift {
namespace cuda {
namespace {

constexpr int kDefaultThreads = 256;
constexpr int kDefaultFastTile = 1024;  // preload width W of the fast kernels (same-run A/B: +1 % over 512)
constexpr int kMaxFastThreads = 256;     // launch bounds of the fast kernels
// Point loop of the fast kernels (kernel_params.hpp), from the same-run A/B in performance-gpu.md:
// compile-time tile width, unrolled 4x (isotropic) / 8x (per-point).
constexpr int kDefaultFastVariantShared = 2;
constexpr int kDefaultFastVariantPerPoint = 3;

/// Internal knobs (environment, read at bind()): force small chunks in tests, pick r in sweeps.
long long env_value(const char* name, long long fallback)
{
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    const long long x = std::strtoll(v, &end, 10);
    return (end && *end == '\0' && x > 0) ? x : fallback;
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

/// Modes per PU of the fast kernels (register blocking), from the sweeps in
/// docs/performance-gpu.md: isotropic k ≤ 3 r = 4 with preloading, 8 without (each point read
/// from global memory then serves more modes); per-point k ≤ 4 and isotropic k = 4: 4; else 2.
/// Falls back to the largest instantiated r ≤ the wish.
int modes_per_pu(int k, bool per_point, bool preload)
{
    int r = per_point ? (k <= 4 ? 4 : 2) : (k <= 3 && !preload ? 8 : k <= 4 ? 4 : 2);
    r = static_cast<int>(env_value("MEANSHIFT_CUDA_MODES_PER_PU", r));
    for (int c : {8, 4, 2, 1}) {
        if (c > r) continue;
        if ((per_point ? fast_kernel_per_point(k, c, false) : fast_kernel_shared(k, c, false)) != nullptr)
            return c;
    }
    return 1;
}

bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

/// Everything one device holds for the bound data.
struct DeviceState {
    int device = 0;
    cudaDeviceProp prop{};
    cudaStream_t stream = nullptr;
    bool resident = true;       // all points uploaded at bind()
    Index chunk_points = 0;     // points per chunk (multiple of the tile width for the fast family)
    DeviceBuffer points, precision, log_weight, centres, radii;  // resident data or one chunk
    DeviceBuffer queries, acc, scratch;
    Index query_capacity = 0;
    float* host_queries = nullptr;  // pinned staging buffers (fast, truly asynchronous copies)
    float* host_acc = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    double kernel_seconds = 0;      // kernels of the last step
};

class CudaBackend final : public Backend {
public:
    explicit CudaBackend(const BackendOptions& options) : options_(options)
    {
        int count = 0;
        MS_CUDA_CHECK(cudaGetDeviceCount(&count));
        std::vector<int> ids = options.devices;
        if (ids.empty())
            for (int i = 0; i < count; ++i) ids.push_back(i);
        if (ids.empty()) throw BackendUnavailable("cuda backend: no CUDA device");
        for (int id : ids) {
            if (id < 0 || id >= count)
                throw InvalidArgument("cuda backend: device index " + std::to_string(id) + " out of range (" +
                                      std::to_string(count) + " CUDA devices)");
            auto s = std::make_unique<DeviceState>();
            s->device = id;
            MS_CUDA_CHECK(cudaGetDeviceProperties(&s->prop, id));
            MS_CUDA_CHECK(cudaSetDevice(id));
            MS_CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
            MS_CUDA_CHECK(cudaEventCreate(&s->start));
            MS_CUDA_CHECK(cudaEventCreate(&s->stop));
            states_.push_back(std::move(s));
        }
        if (options.preload_size < 0)
            throw InvalidArgument("cuda backend: preload_size must be ≥ 0 (0 = default), got " +
                                  std::to_string(options.preload_size));
    }

    ~CudaBackend() override
    {
        for (auto& s : states_) {
            cudaSetDevice(s->device);
            s->points.release();
            s->precision.release();
            s->log_weight.release();
            s->centres.release();
            s->radii.release();
            s->queries.release();
            s->acc.release();
            s->scratch.release();
            if (s->host_queries) cudaFreeHost(s->host_queries);
            if (s->host_acc) cudaFreeHost(s->host_acc);
            if (s->start) cudaEventDestroy(s->start);
            if (s->stop) cudaEventDestroy(s->stop);
            if (s->stream) cudaStreamDestroy(s->stream);
        }
    }

    std::string name() const override { return "cuda"; }

    double last_kernel_seconds() const
    {
        double t = 0;
        for (const auto& s : states_) t = std::max(t, s->kernel_seconds);
        return t;
    }

    std::vector<DeviceInfo> devices() const override
    {
        std::vector<DeviceInfo> out;
        for (const auto& s : states_) out.push_back(describe(s->device, s->prop));
        return out;
    }

    Topology resolve_topology(const Topology& req, const PreparedData& data) const override
    {
        const cudaDeviceProp& prop = states_.front()->prop;
        const int k = data.k();
        const bool pp = data.model == KernelModel::PerPoint;
        Topology t = req;
        if (t.pus_per_ppu == 0) t.pus_per_ppu = kDefaultThreads;
        if (t.f_vppu == 0) t.f_vppu = 1;
        if (t.f_load == 0) t.f_load = t.f_vppu;
        if (t.pus_per_ppu % 32 != 0 || t.pus_per_ppu > prop.maxThreadsPerBlock)
            throw InvalidArgument("cuda backend: tau (threads per block) must be a multiple of 32 and ≤ " +
                                  std::to_string(prop.maxThreadsPerBlock) + ", got " +
                                  std::to_string(t.pus_per_ppu));
        if (!is_pow2(t.f_vppu))
            throw InvalidArgument("cuda backend: f_vppu must be a power of two (warp shuffle / tree "
                                  "reduction), got " + std::to_string(t.f_vppu));
        const Plan plan = make_plan(t, k, pp);
        if (plan.smem > static_cast<std::size_t>(prop.sharedMemPerBlockOptin))
            throw InvalidArgument("cuda backend: preload tile of " + std::to_string(plan.tile) + " points needs " +
                                  std::to_string(plan.smem) + " bytes of shared memory, the device allows " +
                                  std::to_string(prop.sharedMemPerBlockOptin) + "; lower preload_size");
        MS_CUDA_CHECK(cudaSetDevice(states_.front()->device));
        allow_smem(plan);
        int per_sm = 0;
        MS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, plan.kernel, t.pus_per_ppu, plan.smem));
        if (per_sm < 1)
            throw InvalidArgument("cuda backend: a block of " + std::to_string(t.pus_per_ppu) +
                                  " threads does not fit on one SM with this kernel (registers or shared "
                                  "memory); lower tau or preload_size");
        if (t.ppus == 0) t.ppus = prop.multiProcessorCount * per_sm;  // one full wave of resident blocks
        validate_topology(t, name());
        return t;
    }

    void bind(const PreparedData& data, const Topology& topology) override
    {
        data_ = &data;
        topo_ = topology;
        k_ = data.k();
        pp_ = data.model == KernelModel::PerPoint;
        plan_ = make_plan(topo_, k_, pp_);
        layout_ = TiledLayout{};
        if (plan_.fast) layout_ = build_tiled_layout(data, plan_.tile);
        max_queries_ = env_value("MEANSHIFT_CUDA_MAX_QUERIES", Index(1) << 24);
        const Index max_points = env_value("MEANSHIFT_CUDA_MAX_POINTS", Index(1) << 62);

        // Failures inside the per-device threads are rethrown here.
        for_each_device([&](DeviceState& s) { bind_device(s, max_points); });
    }

    void step(const StepRequest& req) override
    {
        if (!data_) throw Error("cuda backend: step() before bind()");
        if (req.candidates) throw NotSupported("cuda backend: candidate lists are not supported (exact Gaussian only)");
        if (req.count <= 0) return;
        // Split the queries into one contiguous part per device.
        const Index parts = static_cast<Index>(states_.size());
        const Index per = (req.count + parts - 1) / parts;
        std::vector<std::exception_ptr> errors(states_.size());
        auto work = [&](std::size_t dev) {
            try {
                const Index q0 = std::min<Index>(req.count, static_cast<Index>(dev) * per);
                const Index q1 = std::min<Index>(req.count, q0 + per);
                if (q1 > q0) step_device(*states_[dev], req.positions + q0 * k_, req.out + q0 * k_, q1 - q0);
            } catch (...) {
                errors[dev] = std::current_exception();
            }
        };
        run_parallel(work);
        for (auto& e : errors)
            if (e) std::rethrow_exception(e);
    }

private:
    struct Plan {
        bool fast = false;
        int tile = 0;
        int r = 1;
        std::size_t smem = 0;
        const void* kernel = nullptr;
    };

    Plan make_plan(const Topology& t, int k, bool pp) const
    {
        Plan p;
        p.fast = t.f_vppu == 1 && k <= 8 && t.pus_per_ppu <= kMaxFastThreads;
        if (p.fast) {
            p.tile = options_.preload_size > 0 ? options_.preload_size : kDefaultFastTile;
            p.r = modes_per_pu(k, pp, options_.preload);
            // Variant of the point loop (kernel_params.hpp); MEANSHIFT_CUDA_FAST_VARIANT overrides (A/B benchmarks).
            const int v = static_cast<int>(env_value("MEANSHIFT_CUDA_FAST_VARIANT", pp ? kDefaultFastVariantPerPoint
                                                                                        : kDefaultFastVariantShared));
            p.kernel = pp ? fast_kernel_per_point(k, p.r, options_.preload, p.tile, v)
                          : fast_kernel_shared(k, p.r, options_.preload, p.tile, v);
            p.smem = options_.preload ? static_cast<std::size_t>(p.tile) * fast_stride(k, pp) * sizeof(float) : 0;
        } else {
            p.tile = options_.preload_size > 0 ? options_.preload_size : t.pus_per_ppu;
            p.kernel = topology_kernel(k, pp, options_.preload);
            p.smem = topology_smem_bytes(k, pp, options_.preload, p.tile, t.pus_per_ppu);
        }
        if (!p.kernel) throw Error("cuda backend: no kernel instantiated for this configuration");
        return p;
    }

    static void allow_smem(const Plan& p)
    {
        if (p.smem > 48 * 1024)
            MS_CUDA_CHECK(cudaFuncSetAttribute(p.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(p.smem)));
    }

    template <class F>
    void run_parallel(F&& work)
    {
        if (states_.size() == 1) {
            work(0);
            return;
        }
        std::vector<std::thread> threads;
        for (std::size_t d = 0; d < states_.size(); ++d) threads.emplace_back([&, d] { work(d); });
        for (auto& th : threads) th.join();
    }

    template <class F>
    void for_each_device(F&& f)
    {
        std::vector<std::exception_ptr> errors(states_.size());
        run_parallel([&](std::size_t d) {
            try {
                MS_CUDA_CHECK(cudaSetDevice(states_[d]->device));
                f(*states_[d]);
            } catch (...) {
                errors[d] = std::current_exception();
            }
        });
        for (auto& e : errors)
            if (e) std::rethrow_exception(e);
    }

    /// Bytes per point of the bound layout on the device.
    std::size_t point_bytes() const
    {
        if (plan_.fast) return static_cast<std::size_t>(layout_.stride) * sizeof(float);
        return static_cast<std::size_t>(pp_ ? 2 * k_ + 1 : k_) * sizeof(float);
    }

    Index total_points() const { return plan_.fast ? layout_.tiles * layout_.tile : data_->n(); }

    void bind_device(DeviceState& s, Index max_points)
    {
        const Index n = total_points();
        s.points.release();
        s.precision.release();
        s.log_weight.release();
        s.centres.release();
        s.radii.release();
        s.scratch.release();
        s.queries.release();
        s.acc.release();
        s.query_capacity = 0;
        allow_smem(plan_);

        std::size_t free_b = 0, total_b = 0;
        MS_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
        const std::size_t scratch_b = plan_.fast || k_ <= 8
            ? 0 : static_cast<std::size_t>(topo_.ppus) * topo_.pus_per_ppu * 3 * k_ * sizeof(float);
        const Index qcap = std::min<Index>(max_queries_, data_->n());
        const std::size_t query_b = static_cast<std::size_t>(qcap) * (k_ + accumulator_stride(k_, pp_)) * sizeof(float);
        // Keep a quarter of the free memory for the runtime and other users of the device.
        const std::size_t budget = free_b / 4 * 3;
        if (scratch_b + query_b >= budget)
            throw DeviceError("cuda backend: device " + std::to_string(s.device) + " has " +
                              std::to_string(free_b) + " bytes free, too little for the query buffers");
        Index fit = static_cast<Index>((budget - scratch_b - query_b) / (point_bytes() + sizeof(float)));
        Index chunk = std::min({n, max_points, fit});
        if (plan_.fast) chunk = std::max<Index>(1, chunk / layout_.tile) * layout_.tile;
        chunk = std::max<Index>(1, chunk);
        s.resident = chunk >= n;
        s.chunk_points = std::min(chunk, n);

        if (scratch_b) s.scratch.allocate(scratch_b);
        const Index cp = s.chunk_points;
        if (plan_.fast) {
            s.points.allocate(static_cast<std::size_t>(cp) * layout_.stride * sizeof(float));
            s.centres.allocate(static_cast<std::size_t>(cp / layout_.tile) * k_ * sizeof(float));
            s.radii.allocate(static_cast<std::size_t>(cp / layout_.tile) * sizeof(float));
        } else {
            s.points.allocate(static_cast<std::size_t>(cp) * k_ * sizeof(float));
            if (pp_) {
                s.precision.allocate(static_cast<std::size_t>(cp) * k_ * sizeof(float));
                s.log_weight.allocate(static_cast<std::size_t>(cp) * sizeof(float));
            }
        }
        if (s.resident) upload_chunk(s, 0);
    }

    /// Copies the points [first, first + chunk_points) (clipped to n) into the device buffers.
    void upload_chunk(DeviceState& s, Index first)
    {
        const Index cnt = std::min(s.chunk_points, total_points() - first);
        if (plan_.fast) {
            const std::size_t st = static_cast<std::size_t>(layout_.stride);
            MS_CUDA_CHECK(cudaMemcpyAsync(s.points.f(), layout_.data.data() + first * st, cnt * st * sizeof(float),
                                          cudaMemcpyHostToDevice, s.stream));
            const Index t0 = first / layout_.tile, nt = cnt / layout_.tile;
            MS_CUDA_CHECK(cudaMemcpyAsync(s.centres.f(), layout_.centres.data() + t0 * k_, nt * k_ * sizeof(float),
                                          cudaMemcpyHostToDevice, s.stream));
            MS_CUDA_CHECK(cudaMemcpyAsync(s.radii.f(), layout_.radii.data() + t0, nt * sizeof(float),
                                          cudaMemcpyHostToDevice, s.stream));
        } else {
            MS_CUDA_CHECK(cudaMemcpyAsync(s.points.f(), data_->points_f.data() + first * k_, cnt * k_ * sizeof(float),
                                          cudaMemcpyHostToDevice, s.stream));
            if (pp_) {
                MS_CUDA_CHECK(cudaMemcpyAsync(s.precision.f(), data_->precision_f.data() + first * k_,
                                              cnt * k_ * sizeof(float), cudaMemcpyHostToDevice, s.stream));
                MS_CUDA_CHECK(cudaMemcpyAsync(s.log_weight.f(), data_->log_weight_f.data() + first,
                                              cnt * sizeof(float), cudaMemcpyHostToDevice, s.stream));
            }
        }
        // Pageable host memory: the copy may still read it after return; finish before reuse.
        MS_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    }

    void step_device(DeviceState& s, const double* pos, double* out, Index count)
    {
        MS_CUDA_CHECK(cudaSetDevice(s.device));
        const int stride = accumulator_stride(k_, pp_);
        const Index qchunk = std::min<Index>(count, max_queries_);
        if (s.query_capacity < qchunk) {
            s.queries.allocate(static_cast<std::size_t>(qchunk) * k_ * sizeof(float));
            s.acc.allocate(static_cast<std::size_t>(qchunk) * stride * sizeof(float));
            if (s.host_queries) MS_CUDA_CHECK(cudaFreeHost(s.host_queries));
            if (s.host_acc) MS_CUDA_CHECK(cudaFreeHost(s.host_acc));
            s.host_queries = s.host_acc = nullptr;
            s.query_capacity = 0;
            MS_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&s.host_queries), static_cast<std::size_t>(qchunk) * k_ * sizeof(float)));
            MS_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&s.host_acc), static_cast<std::size_t>(qchunk) * stride * sizeof(float)));
            s.query_capacity = qchunk;
        }
        float* qf = s.host_queries;
        float* acc = s.host_acc;
        const Index n = total_points();
        s.kernel_seconds = 0;
        for (Index q0 = 0; q0 < count; q0 += qchunk) {
            const Index qn = std::min(qchunk, count - q0);
            for (Index i = 0; i < qn * k_; ++i) qf[i] = static_cast<float>(pos[q0 * k_ + i]);
            MS_CUDA_CHECK(cudaMemcpyAsync(s.queries.f(), qf, qn * k_ * sizeof(float), cudaMemcpyHostToDevice,
                                          s.stream));
            MS_CUDA_CHECK(cudaMemsetAsync(s.acc.f(), 0, qn * stride * sizeof(float), s.stream));
            MS_CUDA_CHECK(cudaEventRecord(s.start, s.stream));
            for (Index p0 = 0; p0 < n; p0 += s.chunk_points) {
                if (!s.resident) upload_chunk(s, p0);
                launch(s, std::min(s.chunk_points, n - p0), qn);
            }
            MS_CUDA_CHECK(cudaEventRecord(s.stop, s.stream));
            MS_CUDA_CHECK(cudaMemcpyAsync(acc, s.acc.f(), qn * stride * sizeof(float), cudaMemcpyDeviceToHost,
                                          s.stream));
            MS_CUDA_CHECK(cudaStreamSynchronize(s.stream));
            float ms = 0;
            MS_CUDA_CHECK(cudaEventElapsedTime(&ms, s.start, s.stop));
            s.kernel_seconds += 1e-3 * ms;
            // y = y_old + S1 / S0 (the kernels accumulate the shift relative to the query).
            for (Index q = 0; q < qn; ++q) {
                const float* a = acc + q * stride;
                for (int d = 0; d < k_; ++d) {
                    const double s0 = a[pp_ ? d : 0];
                    const double y = pos[(q0 + q) * k_ + d];
                    out[(q0 + q) * k_ + d] = s0 > 0 ? y + a[(pp_ ? k_ : 1) + d] / s0 : y;
                }
            }
        }
    }

    /// One launch over `npoints` device-resident points (from the start of the buffers).
    void launch(DeviceState& s, Index npoints, Index nq)
    {
        const int T = topo_.pus_per_ppu;
        if (plan_.fast) {
            FastParams p;
            p.data = s.points.f();
            p.centres = s.centres.f();
            p.radii = s.radii.f();
            p.tiles = npoints / layout_.tile;
            p.tile = layout_.tile;
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
            MS_CUDA_CHECK(cudaLaunchKernel(plan_.kernel, dim3(grid), dim3(T), args, plan_.smem, s.stream));
        } else {
            TopologyParams p;
            p.points = s.points.f();
            p.precision = pp_ ? s.precision.f() : nullptr;
            p.log_weight = pp_ ? s.log_weight.f() : nullptr;
            p.n = npoints;
            p.k = k_;
            p.f_vppu = topo_.f_vppu;
            p.f_load = topo_.f_load;
            p.tile = plan_.tile;
            p.queries = s.queries.f();
            p.acc = s.acc.f();
            p.count = nq;
            p.scratch = s.scratch.f();
            const Index vppus = T / topo_.f_vppu;
            const unsigned grid = static_cast<unsigned>(std::min<Index>((nq + vppus - 1) / vppus, topo_.ppus));
            void* args[] = {&p};
            MS_CUDA_CHECK(cudaLaunchKernel(plan_.kernel, dim3(grid), dim3(T), args, plan_.smem, s.stream));
        }
        MS_CUDA_CHECK(cudaGetLastError());
    }

    BackendOptions options_;
    std::vector<std::unique_ptr<DeviceState>> states_;
    const PreparedData* data_ = nullptr;
    Topology topo_;
    Plan plan_;
    TiledLayout layout_;
    int k_ = 0;
    bool pp_ = false;
    Index max_queries_ = 0;
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

double last_step_kernel_seconds(const Backend& backend)
{
    const auto* c = dynamic_cast<const CudaBackend*>(&backend);
    return c ? c->last_kernel_seconds() : -1.0;
}

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
