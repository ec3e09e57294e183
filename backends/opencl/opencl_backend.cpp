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

/// The device header and the weight profiles' headers (kernels/profiles/, profiles.h last: it
/// includes the others only where their text is not there yet), the start of every step program.
std::string profile_sources()
{
    std::string text = opencl_sources::device_header();
    text.append("\n").append(opencl_sources::profile_gaussian());
    // Each compact profile's header, and MS_PROFILE_FACTOR_<value>(q) naming its factor (profiles.h).
#define MS_PROFILE_TEXT_ROW(E, n, N, v, c, a)                                                                          \
    MS_PROFILE_IF(c, text.append("\n").append(opencl_sources::profile_##n());                                          \
                  text.append("\n#define MS_PROFILE_FACTOR_" #v "(q) MS_FACTOR_" #N "(q)\n");)
    MS_PROFILE_LIST(MS_PROFILE_TEXT_ROW, ~)
#undef MS_PROFILE_TEXT_ROW
    text.append("\n").append(opencl_sources::profile_list()).append("\n").append(opencl_sources::profiles_header());
    return text;
}

std::vector<std::string> program_sources(const KernelConfig& c)
{
    if (c.gemm)
        return {profile_sources(), "\n", opencl_sources::approx_mode_common(), "\n",
                c.gemm_wide ? opencl_sources::gemm_wide() : opencl_sources::gemm_modes()};
    if (c.ranges)
        return {profile_sources(),
                "\n",
                opencl_sources::approx_mode_common(),
                "\n",
                opencl_sources::ranges_header(),
                "\n",
                opencl_sources::range_modes(),
                "\n",
                opencl_sources::range_modes_cpu()};
    return {profile_sources(), "\n", opencl_sources::approx_mode_common(), "\n",
            c.preload ? opencl_sources::approx_modes_preload() : opencl_sources::approx_mode()};
}

/// CPU shape defaults (issue 12, docs/backend-opencl.md "CPU devices"): work-items per group and
/// work-groups per compute unit.
constexpr std::size_t kCpuShapeTau = 8;
constexpr int kCpuShapeGroupsPerCu = 16;

/// Grid dims the range kernel's box holds (MS_MAX_GRID_DIMS of kernels/meanshift_ranges.h).
constexpr int kMaxRangeGridDims = 16;

/// accumulate(): positions per launch, so that a chunk's sums take at most 2^22 floats (16 MB) per
/// n-loop segment.
constexpr Index kAccumulateChunkFloats = Index(1) << 22;

/// accumulate(): the n-loop segments are chosen as for a call of at least this many positions, so
/// that a position's float32 sums do not depend on how many others share its call up to this many
/// (segments from the call's own count split 4,096 points in 2 for 300 positions, in 8 for 64 on
/// PoCL with AVX2 and 2 compute units: the MPI ring's chunks then differed from the one-chunk
/// ring's sums). Calls of more positions get fewer segments, as the step's do.
constexpr Index kAccumulatePlanPositions = 4096;

double event_seconds(const cl::Event& e)
{
    return 1e-9 * static_cast<double>(e.getProfilingInfo<CL_PROFILING_COMMAND_END>() -
                                      e.getProfilingInfo<CL_PROFILING_COMMAND_START>());
}

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

// ---- binding ---------------------------------------------------------------------------------

OpenCLBinding::OpenCLBinding(std::shared_ptr<ClDeviceState> device, std::shared_ptr<const PreparedData> data,
                             const Topology& topology, const KernelConfig& config, int segments)
    : dev_(std::move(device)),
      data_(std::move(data)),
      topology_(topology),
      config_(config),
      tuned_segments_(segments),
      k_(config.k)
{
    const KernelConfig& c = config_;
    const ClDeviceEntry& device_entry = dev_->device;
    check_against_device(c, dev_->max_work_group_size, device_entry.info.local_memory, device_entry.info.name);
    {
        // vMF: [origin, radius] of the sphere the finish projects the modes onto (MS_SPHERE); one
        // unused float otherwise.
        std::vector<float> sphere(1, 0.0f);
        if (c.sphere) {
            if (data_->sphere_origin.size() != k_)
                throw InvalidArgument("opencl: the vMF sphere's origin has " +
                                      std::to_string(data_->sphere_origin.size()) +
                                      " values for k = " + std::to_string(k_));
            sphere.resize(static_cast<std::size_t>(k_) + 1);
            for (int d = 0; d < k_; ++d)
                sphere[static_cast<std::size_t>(d)] = static_cast<float>(data_->sphere_origin[d]);
            sphere[static_cast<std::size_t>(k_)] = static_cast<float>(data_->sphere_radius);
        }
        sphere_ = cl_call("allocating the sphere", [&] {
            return cl::Buffer(dev_->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sphere.size() * sizeof(float),
                              sphere.data());
        });
    }
    gpu::TileLayout layout;
    if (!c.ranges) {
        layout = gpu::build_tile_layout(*data_, c.tile, c.form);
        if (c.gemm) {
            // GEMM with a cutoff, per-point H: L c_i per record slot (the mask needs D² apart from c_i).
            std::vector<float> lcw(c.gemm_cut && c.per_point ? layout.tiles * c.tile : 1, 0.0f);
            if (c.gemm_cut && c.per_point)
                for (std::size_t s = 0; s < lcw.size(); ++s)
                    lcw[s] = s < layout.original.size()
                                 ? static_cast<float>(1.4426950408889634 * data_->log_weight[layout.original[s]])
                                 : -1.0e30f;
            lcw_ = cl_call("allocating the log-weights", [&] {
                return cl::Buffer(dev_->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, lcw.size() * sizeof(float),
                                  lcw.data());
            });
        }
        if (layout.records.size() / 4 > static_cast<std::size_t>(INT_MAX))
            throw InvalidArgument("opencl: too many points for 32-bit indexing in the kernel (n · record size > 2^33)");
        ntiles_ = static_cast<int>(layout.tiles);
    } else if (data_->n() * std::max(k_, 1) > INT_MAX) {
        throw InvalidArgument("opencl: too many points for 32-bit indexing in the truncated kernel (n · k >= 2^31)");
    }

    program_ = cached_cl_program(dev_->context, device_entry.handle, program_sources(c), c.build_options());
    kernel_ = cl_call(std::string("creating kernel ") + c.kernel_name(),
                      [&] { return cl::Kernel(program_, c.kernel_name()); });
    combine_ = cl_call("creating kernel combine_segments", [&] { return cl::Kernel(program_, "combine_segments"); });
    if (c.range_wide)
        wide_kernel_ =
            cl_call("creating kernel range_modes_wide", [&] { return cl::Kernel(program_, "range_modes_wide"); });
    // Per-point weights beyond float32's range: the max pass of the per-mode log2 shift, the GEMM
    // kernel's own (the same sources built with GEMM_MAXPASS) or log2_weight_max over the prepared
    // points; log2_shift_ holds one int per slot (one, unused, without the shift).
    if (c.log2_shift && c.gemm) {
        KernelConfig mc = c;
        mc.gemm_maxpass = true;
        max_program_ = cached_cl_program(dev_->context, device_entry.handle, program_sources(mc), mc.build_options());
        max_kernel_ =
            cl_call("creating kernel gemm_modes (max pass)", [&] { return cl::Kernel(max_program_, "gemm_modes"); });
    } else if (c.log2_shift) {
        max_kernel_ =
            cl_call("creating kernel log2_weight_max", [&] { return cl::Kernel(program_, "log2_weight_max"); });
    }
    reserve_log2_shift(1);
    const std::size_t kernel_wg = kernel_.getWorkGroupInfo<CL_KERNEL_WORK_GROUP_SIZE>(device_entry.handle);
    if (static_cast<std::size_t>(c.tau) > kernel_wg)
        throw DeviceError("opencl: kernel " + std::string(c.kernel_name()) + " allows at most " +
                          std::to_string(kernel_wg) + " work-items per work-group on " + device_entry.info.name +
                          " (CL_KERNEL_WORK_GROUP_SIZE, limited by registers), but tau = " + std::to_string(c.tau) +
                          ": choose a smaller tau or fewer modes per PU");
    const std::size_t kernel_local = kernel_.getWorkGroupInfo<CL_KERNEL_LOCAL_MEM_SIZE>(device_entry.handle);
    if (kernel_local > device_entry.info.local_memory)
        throw DeviceError("opencl: kernel needs " + std::to_string(kernel_local) +
                          " bytes of local memory (CL_KERNEL_LOCAL_MEM_SIZE) but the device has " +
                          std::to_string(device_entry.info.local_memory));

    auto upload = [&](const std::vector<float>& v, const char* what) {
        return cl_call(std::string("allocating ") + what, [&] {
            return cl::Buffer(dev_->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, v.size() * sizeof(float),
                              const_cast<float*>(v.data()));
        });
    };
    if (!c.ranges) {
        if (c.cpu_vw > 0) {
            // CPU shape: point-transposed blocks of cpu_vw records (field f of slot s at
            // ((s / vw) · stride + f) · vw + s % vw), so a field of vw points is one vector load.
            const std::size_t vw = static_cast<std::size_t>(c.cpu_vw), st = static_cast<std::size_t>(c.stride());
            std::vector<float> soa(layout.records.size());
            for (std::size_t slot = 0; slot < soa.size() / st; ++slot)
                for (std::size_t f = 0; f < st; ++f)
                    soa[((slot / vw) * st + f) * vw + slot % vw] = layout.records[slot * st + f];
            layout.records.swap(soa);
        }
        records_ = upload(layout.records, "the point records");
        centres_ = upload(layout.centres, "the tile centres");
        radii_ = upload(layout.radii, "the tile radii");
        if (c.log2_shift && !c.gemm) {  // log2_weight_max reads the prepared points, row-major
            const PreparedData& D = *data_;
            const std::size_t nk = static_cast<std::size_t>(D.n()) * static_cast<std::size_t>(k_);
            points_ = upload(std::vector<float>(D.points_f.data(), D.points_f.data() + nk), "the points");
            precision_ = upload(std::vector<float>(D.precision_f.data(), D.precision_f.data() + nk), "the precisions");
            log_weight_ =
                upload(std::vector<float>(D.log_weight_f.data(), D.log_weight_f.data() + D.n()), "the log-weights");
            max_ps_ = k_;
            max_ds_ = 1;
        }
        return;
    }
    // Truncated kernel: the prepared points (sorted by cell) and the grid in the layout of
    // kernels/meanshift_ranges.h; unused buffers get one element (OpenCL has no null buffer).
    const PreparedData& D = *data_;
    auto upload_or_dummy = [&](const float* p, std::size_t count, const char* what) {
        std::vector<float> v(p ? p : nullptr, p ? p + count : nullptr);
        if (v.empty()) v.assign(1, 0.0f);
        return upload(v, what);
    };
    const std::size_t nk = static_cast<std::size_t>(D.n()) * static_cast<std::size_t>(k_);
    const bool pp = c.per_point;
    if (c.cpu_vw > 0) {
        // range_modes_cpu: dim d of point i at d · row + i, rows padded (MS_CPU_ROW of
        // range_modes.cl) so that a vector load at a range's end stays inside the buffer.
        const std::size_t n = static_cast<std::size_t>(D.n()), vw = static_cast<std::size_t>(c.cpu_vw);
        const std::size_t row = ((n + vw - 1) / vw + 1) * vw, kk = static_cast<std::size_t>(k_);
        auto transpose = [&](const float* src) {
            std::vector<float> v(kk * row, 0.0f);
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t d = 0; d < kk; ++d) v[d * row + i] = src[i * kk + d];
            return v;
        };
        points_ = upload(transpose(D.points_f.data()), "the points");
        std::vector<float> one(1, 0.0f);
        precision_ = upload(pp ? transpose(D.precision_f.data()) : one, "the precisions");
        std::vector<float> lw(pp ? row : 1, 0.0f);
        if (pp) std::copy(D.log_weight_f.data(), D.log_weight_f.data() + n, lw.begin());
        log_weight_ = upload(lw, "the log-weights");
        max_ps_ = 1;  // log2_weight_max: dim d of point i at d · row + i
        max_ds_ = static_cast<int>(row);
    } else {
        points_ = upload_or_dummy(D.points_f.data(), nk, "the points");
        precision_ = upload_or_dummy(pp ? D.precision_f.data() : nullptr, nk, "the precisions");
        log_weight_ =
            upload_or_dummy(pp ? D.log_weight_f.data() : nullptr, static_cast<std::size_t>(D.n()), "the log-weights");
        max_ps_ = k_;
        max_ds_ = 1;
    }
    g_ = D.grid && D.grid->g() <= kMaxRangeGridDims ? D.grid->g() : 0;
    std::vector<cl_int> gi(std::max(1, 2 * g_)), start(1, 0);
    std::vector<float> gf(std::max(1, 3 * g_));
    if (g_ > 0) {
        const CellGrid& G = *D.grid;
        if (G.start.back() > INT_MAX) throw InvalidArgument("opencl: grid offsets beyond 32 bits");
        for (int j = 0; j < g_; ++j) {
            const std::size_t u = static_cast<std::size_t>(j);
            gi[u] = G.dims[u];
            gi[g_ + u] = static_cast<cl_int>(G.cells[u]);
            gf[u] = static_cast<float>(G.origin[u]);
            gf[g_ + u] = static_cast<float>(G.side[u]);
            gf[2 * g_ + u] = static_cast<float>(G.radius[u]);
        }
        start.assign(G.start.begin(), G.start.end());
    }
    cl_call("allocating the grid", [&] {
        grid_i_ =
            cl::Buffer(dev_->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, gi.size() * sizeof(cl_int), gi.data());
        grid_f_ =
            cl::Buffer(dev_->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, gf.size() * sizeof(float), gf.data());
        grid_start_ = cl::Buffer(dev_->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, start.size() * sizeof(cl_int),
                                 start.data());
        return 0;
    });
}

void OpenCLBinding::set_modes(const double* positions, Index m, const double* metric)
{
    if (m < 1) throw InvalidArgument("opencl: set_modes() needs m >= 1 modes, got " + std::to_string(m));
    if (!positions) throw InvalidArgument("opencl: set_modes() without positions");
    if (m > INT_MAX / std::max(3, k_))  // 32-bit indices in the kernels: m · k and the report's 3 · m
        throw InvalidArgument("opencl: too many modes (m · max(k, 3) must be < 2^31)");
    const std::size_t values = static_cast<std::size_t>(m) * static_cast<std::size_t>(k_);
    std::vector<float> f(values);
    MS_PARALLEL_FOR(values)
    for (std::size_t i = 0; i < values; ++i) f[i] = static_cast<float>(positions[i]);
    std::vector<cl_int> list(static_cast<std::size_t>(m));
    for (std::size_t i = 0; i < list.size(); ++i) list[i] = static_cast<cl_int>(i);
    auto buffer = [&](cl_mem_flags flags, std::size_t bytes, void* host) {
        return cl::Buffer(dev_->context, flags | (host ? CL_MEM_COPY_HOST_PTR : 0), bytes, host);
    };
    cl_call("allocating the mode buffers", [&] {
        modes_ = buffer(CL_MEM_READ_WRITE, values * sizeof(float), f.data());
        if (metric) {
            MS_PARALLEL_FOR(values)
            for (std::size_t i = 0; i < values; ++i) f[i] = static_cast<float>(metric[i]);
            metric_ = buffer(CL_MEM_READ_ONLY, values * sizeof(float), f.data());
        } else {
            metric_ = buffer(CL_MEM_READ_ONLY, sizeof(float), nullptr);  // unused (has_metric = 0)
        }
        active_list_ = buffer(CL_MEM_READ_WRITE, list.size() * sizeof(cl_int), list.data());
        next_list_ = buffer(CL_MEM_READ_WRITE, list.size() * sizeof(cl_int), nullptr);
        report_ = buffer(CL_MEM_WRITE_ONLY, 3 * list.size() * sizeof(cl_int), nullptr);
        counter_ = buffer(CL_MEM_READ_WRITE, sizeof(cl_int), nullptr);
        return 0;
    });
    has_metric_ = metric != nullptr;
    m_ = m;
    active_ = m;
    reserve_log2_shift(m);
    // What the first step and read_modes() need, here with the rest of the preparation: a
    // one-iteration run paid ~26 ms of allocation and page faults in its step (H200, 1,048,576 modes).
    staging_.reserve(dev_->context, dev_->queue,
                     static_cast<std::size_t>(m) * static_cast<std::size_t>(std::max(3, k_)) * sizeof(float));
    std::vector<cl::Memory> resident{modes_, metric_, active_list_, next_list_, report_, counter_};
    if (!config_.ranges) {
        bool combine = false;
        reserve_partial(m, combine);
        resident.push_back(partial_);
    }
    // NVIDIA's driver allocates (and copies COPY_HOST_PTR data) at a buffer's first use: make
    // that happen here, not in the first step (H200: the first step's extra ~17 ms).
    cl_call("moving the mode buffers to the device", [&] {
        dev_->queue.enqueueMigrateMemObjects(resident, 0);
        return dev_->queue.finish();
    });
    if (!config_.ranges) {
        // One launch of the step's kernels with no work (count 0: every work-group skips its
        // loop): NVIDIA's driver finishes loading a kernel at its first launch, which a
        // one-iteration run paid in its only step (H200: ~9 ms of its 13 ms first-step overhead).
        cl_call("warming up the step kernels", [&] {
            bool combine = false;
            reserve_partial(m_, combine);
            enqueue_step(modes_, active_list_, 0, 0, 1, 1, 0.0f, false, combine, nullptr, nullptr);
            return dev_->queue.finish();
        });
    }
}

int OpenCLBinding::choose_segments(int nblocks, Index count) const
{
    const KernelConfig& c = config_;
    const DeviceInfo& info = dev_->device.info;
    int s = tuned_segments_;
    if (s == 0) {
        // Enough units for many waves of work-groups: the device then never idles on a last,
        // mostly empty wave, nor when only a few modes are still active.
        const long per_cu = dev_->is_gpu() ? std::max(1, 2048 / c.tau) : 2;
        const long target = 8L * std::max(1, info.compute_units) * per_cu;
        s = static_cast<int>(std::min<long>((target + nblocks - 1) / nblocks, 1L << 20));
    }
    s = std::max(1, std::min(s, ntiles_));
    // Partial sums: segments x count x accumulators floats; stay within an eighth of the device memory.
    const std::size_t per_segment =
        static_cast<std::size_t>(count) * static_cast<std::size_t>(c.accumulators()) * sizeof(float);
    const std::size_t cap = std::max<std::size_t>(info.global_memory / 8, 1);
    while (s > 1 && (static_cast<std::size_t>(s) * per_segment > std::min(cap, dev_->max_alloc) ||
                     static_cast<long>(s) * nblocks > INT_MAX))
        s /= 2;
    return s;
}

int OpenCLBinding::reserve_partial(Index count, bool& combine, int min_segments, Index plan)
{
    const KernelConfig& c = config_;
    const Index planned = std::max(count, plan);
    const int nblocks = static_cast<int>((planned + c.modes_per_block() - 1) / c.modes_per_block());
    const int segments = std::max(min_segments, choose_segments(nblocks, planned));
    // The GEMM kernel always leaves its sums in `partial` (its PUs hold parts of a mode's dims);
    // combine_segments finishes the modes.
    combine = segments > 1 || c.gemm;
    const std::size_t partial_bytes = combine ? static_cast<std::size_t>(segments) * static_cast<std::size_t>(count) *
                                                    static_cast<std::size_t>(c.accumulators()) * sizeof(float)
                                              : sizeof(float);
    if (partial_bytes > partial_capacity_) {
        partial_ = cl_call("allocating the partial sums",
                           [&] { return cl::Buffer(dev_->context, CL_MEM_READ_WRITE, partial_bytes); });
        partial_capacity_ = partial_bytes;
    }
    return segments;
}

void OpenCLBinding::step(double tol2, bool retire, StepReport& report)
{
    if (m_ == 0) throw Error("opencl: step() before set_modes()");
    if (active_ == 0) return report.clear();
    if (config_.ranges) {
        step_ranges(tol2, retire, report);
        return;
    }
    const KernelConfig& c = config_;
    const int count = static_cast<int>(active_);
    const int nblocks = (count + c.modes_per_block() - 1) / c.modes_per_block();
    bool combine = false;
    const int segments = reserve_partial(active_, combine);
    const int groups = static_cast<int>(std::min<long>(static_cast<long>(nblocks) * segments, topology_.ppus));
    // float32 threshold; a negative tol2 lets nothing converge, a huge one everything
    const cl_float tol2f = static_cast<cl_float>(std::min(tol2, static_cast<double>(FLT_MAX)));
    cl::Event done, combined;
    cl_call("running the approx_mode kernel", [&] {
        enqueue_max(modes_, active_list_, count, nblocks, segments, groups);
        enqueue_step(modes_, active_list_, count, nblocks, segments, groups, tol2f, retire, combine, &done, &combined);
        // only count x (mode, shift², status) cross to the host
        dev_->queue.enqueueReadBuffer(report_, CL_TRUE, 0, 3 * static_cast<std::size_t>(count) * sizeof(cl_int),
                                      staging_.as<cl_int>());
        return 0;
    });
    last_segments_ = segments;
    const Index still_active = unpack_report(count, report);
    try {
        report.kernel_seconds = event_seconds(done) + (combine ? event_seconds(combined) : 0.0);
    } catch (const cl::Error&) {
        report.kernel_seconds = -1;  // profiling unavailable: timing only, never an error
    }
    if (retire) {
        std::swap(active_list_, next_list_);  // the kernels compacted the survivors into next_list_
        active_ = still_active;
    }
}

int OpenCLBinding::set_finish_args(cl::Kernel& kern, int i, cl_float tol2f, bool retire) const
{
    kern.setArg(i++, metric_);
    kern.setArg(i++, static_cast<cl_int>(has_metric_ ? 1 : 0));
    kern.setArg(i++, tol2f);
    kern.setArg(i++, static_cast<cl_int>(retire ? 1 : 0));
    kern.setArg(i++, report_);
    kern.setArg(i++, next_list_);
    kern.setArg(i++, counter_);
    kern.setArg(i++, log2_shift_);
    kern.setArg(i++, sphere_);
    return i;
}

void OpenCLBinding::set_step_args(cl::Kernel& kern, const cl::Buffer& modes, const cl::Buffer& list, int count,
                                  int nblocks, int segments, cl_float tol2f, bool retire) const
{
    int a = 0;
    kern.setArg(a++, records_);
    kern.setArg(a++, centres_);
    kern.setArg(a++, radii_);
    kern.setArg(a++, static_cast<cl_int>(ntiles_));
    kern.setArg(a++, modes);
    kern.setArg(a++, list);
    kern.setArg(a++, static_cast<cl_int>(count));
    kern.setArg(a++, static_cast<cl_int>(nblocks));
    kern.setArg(a++, static_cast<cl_int>(segments));
    kern.setArg(a++, partial_);
    a = set_finish_args(kern, a, tol2f, retire);
    if (config_.gemm) {
        kern.setArg(a++, lcw_);
        // L/2 · cutoff2: weight 0 where the log2-exponent (less L c_i) falls below -cutl
        const double cutl = 0.5 * 1.4426950408889634 * data_->cutoff2;
        kern.setArg(a++, static_cast<cl_float>(std::isfinite(cutl) ? std::min(cutl, 1e30) : 1e30));
    }
}

void OpenCLBinding::reserve_log2_shift(Index count)
{
    const std::size_t bytes = static_cast<std::size_t>(std::max<Index>(1, count)) * sizeof(cl_int);
    if (bytes <= log2_shift_capacity_) return;
    log2_shift_ =
        cl_call("allocating the log2 shifts", [&] { return cl::Buffer(dev_->context, CL_MEM_READ_WRITE, bytes); });
    log2_shift_capacity_ = bytes;
}

void OpenCLBinding::enqueue_max(const cl::Buffer& modes, const cl::Buffer& list, int count, int nblocks, int segments,
                                int groups)
{
    const KernelConfig& c = config_;
    if (!c.log2_shift || count == 0) return;
    cl::CommandQueue& q = dev_->queue;
    // MS_SHIFT_EMPTY (bytes 0x80): no candidate yet; the pass raises it by atomic max.
    q.enqueueFillBuffer(log2_shift_, cl_int(MS_SHIFT_EMPTY), 0, static_cast<std::size_t>(count) * sizeof(cl_int));
    if (c.gemm) {  // the GEMM kernel's own max pass, on the step's units
        set_step_args(max_kernel_, modes, list, count, nblocks, segments, 0.0f, false);
        q.enqueueNDRangeKernel(max_kernel_, cl::NullRange, cl::NDRange(static_cast<std::size_t>(groups) * c.tau),
                               cl::NDRange(c.tau));
        return;
    }
    // log2_weight_max: `parts` work-items a slot, each over every parts-th point, enough work-items
    // in all for the device (2048 a compute unit on GPUs, 64 on CPU devices).
    const Index n = data_->n();
    const long want = static_cast<long>(std::max(1, dev_->device.info.compute_units)) * (dev_->is_gpu() ? 2048 : 64);
    const int parts =
        static_cast<int>(std::max<long>(1, std::min<long>({(want + count - 1) / count, n, INT_MAX / count})));
    int a = 0;
    max_kernel_.setArg(a++, points_);
    max_kernel_.setArg(a++, precision_);
    max_kernel_.setArg(a++, log_weight_);
    max_kernel_.setArg(a++, static_cast<cl_int>(n));
    max_kernel_.setArg(a++, static_cast<cl_int>(max_ps_));
    max_kernel_.setArg(a++, static_cast<cl_int>(max_ds_));
    max_kernel_.setArg(a++,
                       static_cast<cl_float>(std::isfinite(data_->cutoff2) ? std::min(data_->cutoff2, 1e38) : 3.0e38));
    max_kernel_.setArg(a++, modes);
    max_kernel_.setArg(a++, list);
    max_kernel_.setArg(a++, static_cast<cl_int>(count));
    max_kernel_.setArg(a++, static_cast<cl_int>(parts));
    max_kernel_.setArg(a++, log2_shift_);
    q.enqueueNDRangeKernel(max_kernel_, cl::NullRange, cl::NDRange(static_cast<std::size_t>(count) * parts),
                           cl::NullRange);
}

void OpenCLBinding::enqueue_step(const cl::Buffer& modes, const cl::Buffer& list, int count, int nblocks, int segments,
                                 int groups, cl_float tol2f, bool retire, bool combine, cl::Event* done,
                                 cl::Event* combined)
{
    const KernelConfig& c = config_;
    cl::CommandQueue& q = dev_->queue;
    if (retire) q.enqueueFillBuffer(counter_, cl_int(0), 0, sizeof(cl_int));
    set_step_args(kernel_, modes, list, count, nblocks, segments, tol2f, retire);
    q.enqueueNDRangeKernel(kernel_, cl::NullRange, cl::NDRange(static_cast<std::size_t>(groups) * c.tau),
                           cl::NDRange(c.tau), nullptr, done);
    if (combine) {
        int b = 0;
        combine_.setArg(b++, partial_);
        combine_.setArg(b++, static_cast<cl_int>(segments));
        combine_.setArg(b++, modes);
        combine_.setArg(b++, list);
        combine_.setArg(b++, static_cast<cl_int>(count));
        set_finish_args(combine_, b, tol2f, retire);
        const std::size_t local = 64;
        q.enqueueNDRangeKernel(
            combine_, cl::NullRange,
            cl::NDRange(std::max<std::size_t>(local, (static_cast<std::size_t>(count) + local - 1) / local * local)),
            cl::NDRange(local), nullptr, combined);
    }
}

Index OpenCLBinding::unpack_report(int count, StepReport& report) const
{
    gpu::resize_report(report, count);  // in place: no refill of the previous step's entries
    return gpu::unpack_records(staging_.as<const cl_int>(), count, 0, m_, report, 0, "opencl");
}

void OpenCLBinding::step_ranges(double tol2, bool retire, StepReport& report)
{
    const int count = static_cast<int>(active_);
    const cl_float tol2f = static_cast<cl_float>(std::min(tol2, static_cast<double>(FLT_MAX)));
    cl::Event done;
    cl_call("running the range_modes kernel", [&] {
        enqueue_max(modes_, active_list_, count, 0, 0, 0);
        enqueue_ranges(modes_, active_list_, count, nullptr, tol2f, &done);
        dev_->queue.enqueueReadBuffer(report_, CL_TRUE, 0, 3 * static_cast<std::size_t>(count) * sizeof(cl_int),
                                      staging_.as<cl_int>());
        return 0;
    });
    const Index still_active = unpack_report(count, report);
    report.pairs = range_pairs();
    try {
        report.kernel_seconds = event_seconds(done);
    } catch (const cl::Error&) {
        report.kernel_seconds = -1;
    }
    if (!retire || still_active == active_) return;
    // The survivors in mode order (= the driver's Morton order): O(m) here, no device sort.
    std::vector<unsigned char> stays(static_cast<std::size_t>(m_), 0);
    for (std::size_t i = 0; i < report.mode.size(); ++i)
        if (report.status[i] == ModeStatus::Active) stays[static_cast<std::size_t>(report.mode[i])] = 1;
    std::vector<cl_int> list;
    list.reserve(static_cast<std::size_t>(still_active));
    for (Index j = 0; j < m_; ++j)
        if (stays[static_cast<std::size_t>(j)]) list.push_back(static_cast<cl_int>(j));
    if (!list.empty())
        cl_call("writing the active list", [&] {
            return dev_->queue.enqueueWriteBuffer(active_list_, CL_TRUE, 0, list.size() * sizeof(cl_int), list.data());
        });
    active_ = still_active;
}

void OpenCLBinding::enqueue_ranges(const cl::Buffer& modes, const cl::Buffer& list, int count, const cl::Buffer* sums,
                                   cl_float tol2f, cl::Event* done)
{
    // The load factor at work (Theorem 2): when the modes are too few to fill the z work-groups
    // the device holds (bin seeds, the last active modes), range_modes_wide spreads each mode's
    // candidate loop over 32 PUs (built into the same program when the topology allows it).
    KernelConfig c = config_;
    cl::Kernel* kernel = &kernel_;
    if (wide_kernel_() && c.f_vppu < 32 && (count + c.tau / c.f_vppu - 1) / (c.tau / c.f_vppu) * 2 <= topology_.ppus) {
        c.f_vppu = c.f_load = 32;
        kernel = &wide_kernel_;
    }
    const int vppus = c.tau / c.f_vppu;
    // One work-group per block of modes (range_modes.cl has no loop around its barriers); the
    // device keeps as many resident as its compute units hold (z of the topology).
    const int per_group = c.cpu_range_modes > 0 ? c.cpu_range_modes : vppus;  // range_modes_cpu: one PU, many modes
    const int groups = (count + per_group - 1) / per_group;
    if (static_cast<std::size_t>(groups) > group_pairs_capacity_) {
        group_pairs_ = cl_call("allocating the pair counts", [&] {
            return cl::Buffer(dev_->context, CL_MEM_WRITE_ONLY, static_cast<std::size_t>(groups) * sizeof(cl_long));
        });
        group_pairs_capacity_ = static_cast<std::size_t>(groups);
    }
    host_group_pairs_.resize(static_cast<std::size_t>(groups));
    int a = 0;
    kernel->setArg(a++, points_);
    kernel->setArg(a++, precision_);
    kernel->setArg(a++, log_weight_);
    kernel->setArg(a++, static_cast<cl_int>(data_->n()));
    kernel->setArg(a++, grid_start_);
    kernel->setArg(a++, grid_i_);
    kernel->setArg(a++, grid_f_);
    kernel->setArg(a++, static_cast<cl_int>(g_));
    kernel->setArg(a++, static_cast<cl_float>(data_->cutoff2));
    kernel->setArg(a++, modes);
    kernel->setArg(a++, list);
    kernel->setArg(a++, static_cast<cl_int>(count));
    kernel->setArg(a++, group_pairs_);
    kernel->setArg(a++, sums ? *sums : cl::Buffer());  // null: the kernel finishes the modes
    set_finish_args(*kernel, a, tol2f, false);  // retire on the host: keeps the list in Morton order
    dev_->queue.enqueueNDRangeKernel(*kernel, cl::NullRange, cl::NDRange(static_cast<std::size_t>(groups) * c.tau),
                                     cl::NDRange(c.tau), nullptr, done);
    dev_->queue.enqueueReadBuffer(group_pairs_, CL_FALSE, 0, host_group_pairs_.size() * sizeof(cl_long),
                                  host_group_pairs_.data());
}

double OpenCLBinding::range_pairs() const
{
    double pairs = 0;
    for (cl_long p : host_group_pairs_) pairs += static_cast<double>(p);
    return pairs;
}

void OpenCLBinding::read_modes(double* out) const
{
    if (m_ == 0) throw Error("opencl: read_modes() before set_modes()");
    const std::size_t values = static_cast<std::size_t>(m_) * static_cast<std::size_t>(k_);
    const float* f = staging_.as<const float>();
    cl_call("reading the modes", [&] {
        return dev_->queue.enqueueReadBuffer(modes_, CL_TRUE, 0, values * sizeof(float), staging_.as<float>());
    });
    MS_PARALLEL_FOR(values)
    for (std::size_t i = 0; i < values; ++i) out[i] = static_cast<double>(f[i]);
}

double OpenCLBinding::accumulate(const double* positions, Index count, double* sums)
{
    check_accumulate(*data_, positions, count, sums);
    if (count == 0) return 0;
    const KernelConfig& c = config_;
    const int width = c.accumulators();
    const Index chunk = std::min(count, std::max<Index>(1, kAccumulateChunkFloats / width));
    if (query_capacity_ < chunk) {
        std::vector<cl_int> slots(static_cast<std::size_t>(chunk));
        for (std::size_t i = 0; i < slots.size(); ++i) slots[i] = static_cast<cl_int>(i);
        cl_call("allocating the accumulate buffers", [&] {
            queries_ =
                cl::Buffer(dev_->context, CL_MEM_READ_WRITE, static_cast<std::size_t>(chunk) * k_ * sizeof(float));
            query_list_ = cl::Buffer(dev_->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                     slots.size() * sizeof(cl_int), slots.data());
            if (c.ranges)
                query_sums_ = cl::Buffer(dev_->context, CL_MEM_WRITE_ONLY,
                                         static_cast<std::size_t>(chunk) * width * sizeof(float));
            return 0;
        });
        query_capacity_ = chunk;
    }
    // The per-point expanded form's records carry a common factor L (partial_sums.hpp).
    const double scale = c.per_point && !c.ranges && c.form == ExponentForm::Expanded ? kExpandedPerPointSumScale : 1.0;
    reserve_log2_shift(chunk);
    std::vector<float> q(static_cast<std::size_t>(chunk) * k_), acc;
    std::vector<cl_int> shifts(c.log2_shift ? static_cast<std::size_t>(chunk) : 0);
    double pairs = 0;
    for (Index q0 = 0; q0 < count; q0 += chunk) {
        const int qn = static_cast<int>(std::min(chunk, count - q0));
        const double* y = positions + q0 * k_;
        for (std::size_t j = 0; j < static_cast<std::size_t>(qn) * k_; ++j) q[j] = static_cast<float>(y[j]);
        int segments = 1;
        cl_call("running the step kernels for accumulate", [&] {
            dev_->queue.enqueueWriteBuffer(queries_, CL_FALSE, 0, static_cast<std::size_t>(qn) * k_ * sizeof(float),
                                           q.data());
            if (c.ranges) {
                enqueue_max(queries_, query_list_, qn, 0, 0, 0);
                enqueue_ranges(queries_, query_list_, qn, &query_sums_, 0.0f, nullptr);
                acc.resize(static_cast<std::size_t>(qn) * width);
                dev_->queue.enqueueReadBuffer(query_sums_, CL_TRUE, 0, acc.size() * sizeof(float), acc.data());
                pairs += range_pairs();
                return 0;
            }
            // Two segments or more (the GEMM kernel: any): every unit leaves its sums in `partial`,
            // none finishes a mode.
            bool combine = false;
            segments = reserve_partial(qn, combine, c.gemm ? 1 : 2, kAccumulatePlanPositions);
            const int nblocks = (qn + c.modes_per_block() - 1) / c.modes_per_block();
            const int groups = static_cast<int>(std::min<long>(static_cast<long>(nblocks) * segments, topology_.ppus));
            enqueue_max(queries_, query_list_, qn, nblocks, segments, groups);
            enqueue_step(queries_, query_list_, qn, nblocks, segments, groups, 0.0f, false, false, nullptr, nullptr);
            acc.resize(static_cast<std::size_t>(segments) * qn * width);
            dev_->queue.enqueueReadBuffer(partial_, CL_TRUE, 0, acc.size() * sizeof(float), acc.data());
            pairs += static_cast<double>(qn) * static_cast<double>(data_->n());
            return 0;
        });
        // The kernels shifted each query's log2 weights by its maximum: undone in float64.
        if (c.log2_shift)
            cl_call("reading the log2 shifts", [&] {
                return dev_->queue.enqueueReadBuffer(log2_shift_, CL_TRUE, 0,
                                                     static_cast<std::size_t>(qn) * sizeof(cl_int), shifts.data());
            });
        add_relative_sums(acc.data(), segments, y, qn, k_, c.per_point, scale, sums + q0 * width,
                          c.log2_shift ? shifts.data() : nullptr);
    }
    return pairs;
}

std::string OpenCLBinding::program_binary() const
{
    return cl_call("reading the program binary", [&] {
        const auto bins = program_.getInfo<CL_PROGRAM_BINARIES>();
        return bins.empty() ? std::string() : std::string(bins[0].begin(), bins[0].end());
    });
}

std::string OpenCLBinding::build_log() const
{
    return cl_call("reading the build log",
                   [&] { return program_.getBuildInfo<CL_PROGRAM_BUILD_LOG>(dev_->device.handle); });
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
