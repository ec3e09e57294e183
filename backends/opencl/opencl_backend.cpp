// opencl: Alg. 3 (approx_mode.cl) and Alg. 7 (approx_modes_preload.cl) on an OpenCL 1.2 device.
// PPU = work-group, PU = work-item, vPPU = f_vppu consecutive work-items; with f_vppu = 1 each
// PU carries r modes (register blocking). The binding keeps the modes on the device.
#include "backends/opencl/opencl_backend.hpp"

#include "backends/factory.hpp"
#include "backends/opencl/cpu_plan.hpp"
#include "backends/opencl/embedded_sources.hpp"
#include "backends/opencl/program_cache.hpp"
#include "backends/gpu/knn_limits.hpp"
#include "backends/gpu/step_report.hpp"
#include "backends/gpu/tile_layout.hpp"
#include "backends/common/partial_sums.hpp"
#include "skeleton/src/core/parallel.hpp"

#include "meanshift_device.h"  // MS_SHIFT_EMPTY: the log2 shift buffer's "no candidate" bytes

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <climits>
#include <cstring>

namespace meanshift::detail {
namespace {

/// CPU shape defaults (issue 12, docs/backend-opencl.md "CPU devices"): work-items per group and
/// work-groups per compute unit.
constexpr std::size_t kCpuShapeTau = 8;
constexpr int kCpuShapeGroupsPerCu = 16;

}  // namespace

// ---- backend ---------------------------------------------------------------------------------

OpenCLBackend::OpenCLBackend(const BackendOptions& options) : options_(options)
{
    if (options_.preload_size < 0)
        throw InvalidArgument("opencl: preload_size must be >= 0 (0 = default), got " +
                              std::to_string(options_.preload_size));
    if (options_.preload_size > (1 << 20))
        throw InvalidArgument("opencl: preload_size must be <= 1048576, got " + std::to_string(options_.preload_size));
    validate_tuning(options_.opencl);
    auto dev = std::make_shared<ClDeviceState>();
    dev->device = select_cl_device(options.device_spec);
    dev->context = shared_cl_context(dev->device.handle);
    dev->queue = cl_call("creating an OpenCL command queue",
                         [&] { return cl::CommandQueue(dev->context, dev->device.handle, CL_QUEUE_PROFILING_ENABLE); });
    dev->max_work_group_size = dev->device.handle.getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>();
    dev->max_alloc = static_cast<std::size_t>(dev->device.handle.getInfo<CL_DEVICE_MAX_MEM_ALLOC_SIZE>());
    dev->preferred_float_width = dev->device.handle.getInfo<CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT>();
    dev->hardware_fma = (dev->device.handle.getInfo<CL_DEVICE_SINGLE_FP_CONFIG>() & CL_FP_FMA) != 0;
    dev_ = std::move(dev);
}

bool OpenCLBackend::preload() const noexcept
{
    switch (options_.preload) {
    case Preload::On: return true;
    case Preload::Off: return false;
    case Preload::Auto: break;
    }
    // Measured defaults (docs/tuning.md): GPUs faster with preloading (H200, n = 2^20, k = 3:
    // 2.02e12 -> 2.47e12 pairs/s isotropic, 1.35e12 -> 1.66e12 per-point); CPU devices (PoCL)
    // faster without.
    return dev_->is_gpu();
}

KernelConfig OpenCLBackend::make_config(const Topology& t, const PreparedData& data) const
{
    const OpenCLTuning& tune = options_.opencl;
    KernelConfig c;
    c.k = data.k();
    c.per_point = data.model == KernelModel::PerPoint;
    c.form = tune.exponent;
    c.log2_shift = needs_log2_shift(data);  // per-point weights beyond float32's range: per-mode shift
    c.profile = static_cast<int>(data.profile);
    c.sphere = data.sphere_radius > 0;  // vMF: modes projected onto the sphere in the step's finish
    if (gemm_for(t, data)) {
        // The GEMM kernel: every point against a block of modes, the cutoff as a mask.
        c.gemm = true;
        c.gemm_cut = std::isfinite(data.cutoff2);
        c.form = ExponentForm::Expanded;  // its records: [p', -L/2|p'|²] / [A, B, C]
        c.tau = t.pus_per_ppu;
        c.f_vppu = c.f_load = c.modes_per_pu = 1;
        c.extra_build_options = tune.extra_build_options;
        c.nv_ex2 = tune.nv_ex2 && dev_->device.platform_name.find("NVIDIA") != std::string::npos;
        gemm_geometry(c, tune, dev_->is_gpu(), dev_->device.info.local_memory);  // resolve_topology reports failures
        return c;
    }
    c.cpu_vw = cpu_shape_width(t, data);
    c.cpu_fma = c.cpu_vw > 0 && dev_->hardware_fma;
    c.preload = c.cpu_vw == 0 && preload();
    c.ranges = std::isfinite(data.cutoff2);
    if (c.ranges) {
        c.preload = false;  // the candidate ranges are short: read from global memory (cached)
        if (c.cpu_vw > 0) apply_cpu_range_plan(c);  // CPU devices: modes or candidates in the lanes
        // The 32-PU variant needs τ a multiple of 32 (and ≥ 64) and its reduction buffer in local memory.
        const std::size_t wide_bytes = static_cast<std::size_t>(t.pus_per_ppu) * c.accumulators() * sizeof(float) + 128;
        c.range_wide = c.cpu_vw == 0 && t.pus_per_ppu >= 64 && t.pus_per_ppu % 32 == 0 && t.f_vppu < 32 &&
                       wide_bytes + kImplicitLocalBytes <= dev_->device.info.local_memory;
    }
    c.tau = t.pus_per_ppu;
    c.f_vppu = t.f_vppu;
    c.f_load = t.f_load;
    c.modes_per_pu = 1;
    c.extra_build_options = tune.extra_build_options;
    c.nv_ex2 = tune.nv_ex2 && dev_->device.platform_name.find("NVIDIA") != std::string::npos;
    if (c.f_vppu == 1 && !c.ranges)
        c.modes_per_pu = tune.modes_per_pu > 0 ? tune.modes_per_pu
                         : c.cpu_vw > 0        ? default_cpu_modes_per_pu(c.k, c.per_point, c.cpu_vw)
                                               : default_modes_per_pu(c.k, c.per_point, c.preload);
    if (c.cpu_vw > 0 && !c.ranges) c.cpu_dc = cpu_dims_per_chunk(c.k, c.per_point, c.cpu_vw, c.modes_per_pu);
    if (options_.preload_size > 0) {
        c.tile = options_.preload_size;  // explicit: checked against the device, never changed
    } else if (c.preload) {
        // Default batch: 512 points on a GPU (measured best on the H200 with tau = 256,
        // docs/backend-opencl.md), 128 on a CPU; the largest that fits local memory when that
        // is too large (large k).
        c.tile = std::max(1, largest_fitting_batch(c, dev_->is_gpu() ? 512 : 128, dev_->device.info.local_memory));
    } else {
        c.tile = 128;  // reference tiles of the expanded exponent
    }
    return c;
}

bool OpenCLBackend::cpu_shape_possible(const Topology& t, const PreparedData& data) const
{
    // GPUs keep their shape (and defaults) unchanged: the CPU shape is gated on the device type.
    if (dev_->is_gpu() || t.f_vppu > 1 || t.f_load > 1) return false;
    if (std::isfinite(data.cutoff2)) {
        if (t.pus_per_ppu > 1) return false;  // range_modes_cpu: one work-item per group
    } else if (options_.preload == Preload::On || options_.opencl.exponent != ExponentForm::Expanded) {
        return false;
    }
    KernelConfig c;
    c.k = data.k();
    c.per_point = data.model == KernelModel::PerPoint;
    c.cpu_vw = cpu_vector_width(dev_->preferred_float_width);
    c.modes_per_pu = options_.opencl.modes_per_pu > 0 ? options_.opencl.modes_per_pu
                                                      : default_cpu_modes_per_pu(c.k, c.per_point, c.cpu_vw);
    const int tile = options_.preload_size > 0 ? options_.preload_size : 128;
    // Its vectors of tile sums live in private memory: very large k keeps the GPU shape's limits.
    return c.cpu_vw > 0 && tile % c.cpu_vw == 0 && c.private_bytes() <= kMaxPrivateBytes;
}

int OpenCLBackend::cpu_shape_width(const Topology& t, const PreparedData& data) const
{
    return cpu_shape_possible(t, data) && !gemm_for(t, data) ? cpu_vector_width(dev_->preferred_float_width) : 0;
}

bool OpenCLBackend::gemm_for(const Topology& t, const PreparedData& data) const
{
    // The GEMM kernels form Gaussian exponents (expanded form): compact profiles run the range
    // kernels, whose direct-form D² the profile's polynomial takes (resolve_topology refuses
    // pair_form=gemm for them).
    if (is_compact(data.profile)) return false;
    switch (options_.pair_form) {
    case PairForm::Direct: return false;
    case PairForm::Gemm: return true;
    case PairForm::Auto: break;
    }
    // From the crossover k on, unless the caller asks for vPPUs (the direct kernels' mapping) or
    // a work-group size the tiles cannot use.
    const int min_k = options_.opencl.gemm_min_k > 0        ? options_.opencl.gemm_min_k
                      : !dev_->is_gpu()                     ? kGemmMinKCpu
                      : data.model == KernelModel::PerPoint ? kGemmMinKGpuPerPoint
                                                            : kGemmMinKGpuShared;
    if (data.k() < min_k || t.f_vppu > 1 || t.f_load > 1) return false;
    // CPU devices: the CPU shape beats the GEMM kernel at every k measured (16..256 on PoCL,
    // docs/backend-opencl.md "CPU devices"), so Auto takes it whenever it applies.
    if (!dev_->is_gpu() && options_.opencl.gemm_min_k == 0 && cpu_shape_possible(t, data)) return false;
    if (t.pus_per_ppu == 0) return true;
    KernelConfig c;
    c.k = data.k();
    c.per_point = data.model == KernelModel::PerPoint;
    c.gemm = true;
    c.tau = t.pus_per_ppu;
    return gemm_geometry(c, options_.opencl, dev_->is_gpu(), dev_->device.info.local_memory).empty();
}

Topology OpenCLBackend::resolve_gemm_topology(const Topology& requested, const PreparedData& data) const
{
    if (requested.f_vppu > 1 || requested.f_load > 1)
        throw InvalidArgument(
            "opencl: pair_form=gemm runs with f_vppu = f_load = 1 (its work-group tiles modes x points; "
            "requested f_vppu = " +
            std::to_string(requested.f_vppu) + ", f_load = " + std::to_string(requested.f_load) + ")");
    const bool gpu = dev_->is_gpu();
    Topology t = requested;
    t.f_vppu = t.f_load = 1;
    // 256 PUs on a GPU (a 64 x 64 tile in 4 x 4 blocks), 64 on a CPU device.
    if (t.pus_per_ppu == 0)
        t.pus_per_ppu = static_cast<int>(
            std::min<std::size_t>(gemm_default_tau(data.k(), data.model == KernelModel::PerPoint, options_.opencl, gpu),
                                  dev_->max_work_group_size));
    if (t.ppus == 0) {
        // Resident work-groups: a GPU compute unit holds a few of these (local memory ~30 KB each).
        const int per_cu = gpu ? std::max(1, 1024 / t.pus_per_ppu) : 4;
        t.ppus = std::max(1, dev_->device.info.compute_units) * per_cu;
    }
    validate_topology(t, name());
    KernelConfig c = make_config(t, data);
    const std::string why = gemm_geometry(c, options_.opencl, gpu, dev_->device.info.local_memory);
    if (!why.empty()) throw InvalidArgument("opencl: " + why);
    check_against_device(c, dev_->max_work_group_size, dev_->device.info.local_memory, dev_->device.info.name);
    return t;
}

int OpenCLBackend::max_neighbours() const
{
    return gpu::kKnnMaxCount;
}

MatrixD OpenCLBackend::nearest_distances(const MatrixF& points, const MatrixF& queries, int count)
{
    gpu::check_knn_arguments(points, queries, count, name());
    const int k = static_cast<int>(points.cols());
    const cl::Program program = cached_cl_program(
        dev_->context, dev_->device.handle,
        {opencl_sources::device_header(), "\n", opencl_sources::knn_header(), "\n", opencl_sources::knn()},
        "-cl-std=CL1.2");
    const Index m = queries.rows();
    // Results of a chunk of queries take at most 256 MB (and the device's largest allocation).
    const std::size_t cap = std::min<std::size_t>(std::size_t(256) << 20, dev_->max_alloc);
    const Index chunk = gpu::knn_chunk(m, count, cap);
    const std::size_t local = std::min<std::size_t>(128, dev_->max_work_group_size);
    MatrixF host(chunk, count);
    MatrixD result(m, count);
    cl_call("the nearest-neighbour search", [&] {
        cl::Kernel kernel(program, "knn_distances");
        cl::Buffer p(dev_->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, std::size_t(points.size()) * sizeof(float),
                     const_cast<float*>(points.data()));
        cl::Buffer q(dev_->context, CL_MEM_READ_ONLY, std::size_t(chunk * k) * sizeof(float));
        cl::Buffer out(dev_->context, CL_MEM_WRITE_ONLY, std::size_t(chunk * count) * sizeof(float));
        for (Index b = 0; b < m; b += chunk) {
            const Index c = std::min(chunk, m - b);
            dev_->queue.enqueueWriteBuffer(q, CL_FALSE, 0, std::size_t(c * k) * sizeof(float), queries.data() + b * k);
            kernel.setArg(0, p);
            kernel.setArg(1, static_cast<cl_int>(points.rows()));
            kernel.setArg(2, q);
            kernel.setArg(3, static_cast<cl_long>(c));
            kernel.setArg(4, static_cast<cl_int>(k));
            kernel.setArg(5, static_cast<cl_int>(count));
            kernel.setArg(6, out);
            dev_->queue.enqueueNDRangeKernel(
                kernel, cl::NullRange, cl::NDRange((std::size_t(c) + local - 1) / local * local), cl::NDRange(local));
            dev_->queue.enqueueReadBuffer(out, CL_TRUE, 0, std::size_t(c * count) * sizeof(float), host.data());
            result.middleRows(b, c) = host.topRows(c).cast<double>();
        }
        return 0;
    });
    return result;
}

Topology OpenCLBackend::resolve_topology(const Topology& requested, const PreparedData& data) const
{
    if (data.k() > kMaxDimensions)
        throw InvalidArgument("opencl: k = " + std::to_string(data.k()) +
                              " dimensions exceeds the largest k the OpenCL kernels support, " +
                              std::to_string(kMaxDimensions) +
                              " (each PU keeps its modes' state in private memory; docs/backend-opencl.md)");
    if (is_compact(data.profile) && !(data.cutoff2 <= 1.0))  // the range kernels run them, within the support
        throw InvalidArgument(std::string("opencl: the ") + profile_name(data.profile) +
                              " profile needs PreparedData::cutoff2 <= 1 (its support; the driver sets 1), got " +
                              std::to_string(data.cutoff2));
    if (is_compact(data.profile) && options_.pair_form == PairForm::Gemm)
        throw InvalidArgument(std::string("opencl: pair_form=gemm evaluates Gaussian weights only; the ") +
                              profile_name(data.profile) +
                              " profile runs the direct (range) kernels: use pair_form=direct or auto");
    if (gemm_for(requested, data)) return resolve_gemm_topology(requested, data);
    const ClDeviceEntry& device = dev_->device;
    const bool gpu = dev_->is_gpu();
    Topology t = requested;
    // Truncated kernel: vPPUs of 4 PUs share a mode's candidates (H100, china.jpg: 18 ms for 5
    // iterations against 26 ms with f_vppu = 1 at τ = 32; docs/truncated-kernel-gpu.md).
    // CPU devices: the CPU shapes, f_vppu = 1, tau = 8 (range_modes_cpu: 1).
    const bool cpu_shape = cpu_shape_width(t, data) > 0;
    if (t.f_vppu == 0) t.f_vppu = std::isfinite(data.cutoff2) && !cpu_shape ? 4 : 1;
    if (cpu_shape && t.pus_per_ppu == 0)
        t.pus_per_ppu = std::isfinite(data.cutoff2)
                            ? 1
                            : static_cast<int>(std::min<std::size_t>(kCpuShapeTau, dev_->max_work_group_size));
    if (t.pus_per_ppu == 0) {
        // A multiple of f_vppu near 256 work-items (GPU, preloading, shared H: larger batches per
        // barrier), 128 (GPU otherwise: per-point with preloading measured 1.81e12 pairs/s at
        // τ = 128 vs 1.66e12 at 256 on the H200, docs/tuning.md) or 64 (CPU), within the limit.
        const bool per_point = data.model == KernelModel::PerPoint;
        // Truncated kernel: 64 modes per group keep the union box of their neighbourhoods small.
        const int want = std::isfinite(data.cutoff2) ? 64 : gpu ? (preload() && !per_point ? 256 : 128) : 64;
        const int limit = static_cast<int>(std::min<std::size_t>(dev_->max_work_group_size, 1024));
        t.pus_per_ppu = std::max(t.f_vppu, std::min(want, limit) / t.f_vppu * t.f_vppu);
        // Shrink (by whole vPPUs) while the preload batch and reduction buffer overflow local memory.
        Topology probe = t;
        if (probe.f_load == 0) probe.f_load = probe.f_vppu;
        while (t.pus_per_ppu > t.f_vppu && make_config(probe, data).local_bytes() > device.info.local_memory) {
            t.pus_per_ppu = std::max(t.f_vppu, t.pus_per_ppu / 2 / t.f_vppu * t.f_vppu);
            probe.pus_per_ppu = t.pus_per_ppu;
        }
    }
    if (t.f_load == 0) t.f_load = t.f_vppu;
    if (t.ppus == 0) {
        // Work-groups launched per step: enough to fill every compute unit several times over
        // (GPU: 2048 resident work-items per compute unit), each looping over blocks of modes.
        const int per_cu = gpu ? std::max(1, 2048 / t.pus_per_ppu) : cpu_shape ? kCpuShapeGroupsPerCu : 4;
        t.ppus = std::max(1, device.info.compute_units) * per_cu;
    }
    validate_topology(t, name());
    if (t.f_load >= 2048) throw InvalidArgument("opencl: f_load must be < 2048, got " + std::to_string(t.f_load));
    check_against_device(make_config(t, data), dev_->max_work_group_size, device.info.local_memory, device.info.name);
    return t;
}

std::unique_ptr<Binding> OpenCLBackend::bind(std::shared_ptr<const PreparedData> data, const Topology& topology)
{
    return bind_opencl(std::move(data), topology);
}

std::unique_ptr<OpenCLBinding> OpenCLBackend::bind_opencl(std::shared_ptr<const PreparedData> data,
                                                          const Topology& topology)
{
    if (!data) throw InvalidArgument("opencl: bind() without data");
    if (data->n() < 1) throw InvalidArgument("opencl: bind() with no points");
    if (data->model == KernelModel::PerPoint &&
        (data->precision.rows() != data->n() || data->log_weight.size() != data->n()))
        throw InvalidArgument("opencl: per-point model without precision/log_weight of n rows");
    const Topology t = resolve_topology(topology, *data);
    const KernelConfig config = make_config(t, *data);
    return std::make_unique<OpenCLBinding>(dev_, std::move(data), t, config, options_.opencl.segments);
}

}  // namespace meanshift::detail

namespace meanshift::detail {

BackendFactory opencl_factory()
{
    BackendFactory f;
    f.name = "opencl";
    f.probe = [] {
        BackendStatus s;
        s.name = "opencl";
        s.compiled_in = true;
        try {
            for (auto& e : enumerate_cl_devices()) s.devices.push_back(e.info);
            s.usable = !s.devices.empty();
            if (!s.usable) s.reason = "the OpenCL platforms have no devices";
        } catch (const std::exception& e) {
            s.usable = false;
            s.reason = e.what();
        }
        return s;
    };
    f.create = [](const BackendOptions& o) { return std::unique_ptr<Backend>(new OpenCLBackend(o)); };
    return f;
}

}  // namespace meanshift::detail