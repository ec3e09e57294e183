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
// This file: the backend (device selection, topology, bind, k-NN); the plan is cuda_plan.cpp, the
// devices cuda_devices.cpp, the binding cuda_binding.cpp (on the GPU binding lifecycle,
// backends/gpu/gpu_binding.hpp). The modes live on the device for the whole run
// (mode_kernels.hpp): a step gathers the active modes, accumulates, finishes them in place; only
// (index, shift², status) of each advanced mode crosses to the host. Several GPUs: every device
// holds the points and a contiguous share of the modes, and is driven by its own persistent
// worker thread (device_worker.hpp); one GPU runs inline. Queries are processed in chunks; points
// that do not fit one device's memory are streamed in chunks whose partial sums add up in the
// accumulators.
#include "backends/cuda/cuda_binding.hpp"
#include "backends/cuda/cuda_check.hpp"
#include "backends/cuda/cuda_devices.hpp"
#include "backends/cuda/cuda_plan.hpp"
#include "backends/cuda/knn_kernel.hpp"
#include "backends/factory.hpp"
#include "backends/gpu/knn_limits.hpp"
#include "backends/common/partial_sums.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cmath>
#include <future>
#include <memory>
#include <vector>

namespace meanshift {
namespace cuda {
namespace {

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
        return make_binding(contexts_, std::move(data), t, options_, plan);
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