// opencl: Alg. 3 (approx_mode.cl) and Alg. 7 (approx_modes_preload.cl) on an OpenCL 1.2 device.
// PPU = work-group, PU = work-item, vPPU = f_vppu consecutive work-items; with f_vppu = 1 each
// PU carries r modes (register blocking).
#include "backends/opencl/opencl_backend.hpp"

#include "backends/factory.hpp"
#include "backends/opencl/embedded_sources.hpp"
#include "backends/opencl/program_cache.hpp"
#include "backends/opencl/tile_records.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <climits>

namespace meanshift::detail {
namespace {

bool is_gpu(const ClDeviceEntry& d) { return d.info.kind == "gpu"; }

std::vector<std::string> program_sources(bool preload)
{
    return {opencl_sources::device_header(), "\n", opencl_sources::approx_mode_common(), "\n",
            preload ? opencl_sources::approx_modes_preload() : opencl_sources::approx_mode()};
}

}  // namespace

OpenCLBackend::OpenCLBackend(const BackendOptions& options)
    : options_(options), tuning_(KernelTuning::from_environment()), device_(select_cl_device(options.device_spec))
{
    if (options_.preload_size < 0)
        throw InvalidArgument("opencl: preload_size must be >= 0 (0 = default), got " +
                              std::to_string(options_.preload_size));
    context_ = shared_cl_context(device_.handle);
    queue_ = cl_call("creating an OpenCL command queue", [&] {
        return cl::CommandQueue(context_, device_.handle, CL_QUEUE_PROFILING_ENABLE);
    });
    max_work_group_size_ = device_.handle.getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>();
}

KernelConfig OpenCLBackend::make_config(const Topology& t, const PreparedData& data) const
{
    KernelConfig c;
    c.k = data.k();
    c.per_point = data.model == KernelModel::PerPoint;
    c.form = tuning_.form;
    c.preload = options_.preload;
    // Default batch: 512 points when preloading on a GPU (measured best on the H200 with tau = 256,
    // docs/backend-opencl.md), else 128-point reference tiles.
    c.tile = options_.preload_size > 0 ? options_.preload_size : (options_.preload && is_gpu(device_) ? 512 : 128);
    c.tau = t.pus_per_ppu;
    c.f_vppu = t.f_vppu;
    c.f_load = t.f_load;
    c.modes_per_pu = 1;
    c.extra_build_options = tuning_.extra_build_options;
    c.nv_ex2 = tuning_.nv_ex2 && device_.platform_name.find("NVIDIA") != std::string::npos;
    if (c.f_vppu == 1)
        c.modes_per_pu = tuning_.modes_per_pu > 0 ? tuning_.modes_per_pu : default_modes_per_pu(c.k, c.per_point, c.preload);
    return c;
}

Topology OpenCLBackend::resolve_topology(const Topology& requested, const PreparedData& data) const
{
    Topology t = requested;
    if (t.f_vppu == 0) t.f_vppu = 1;
    if (t.pus_per_ppu == 0) {
        // A multiple of f_vppu near 256 work-items (GPU, preloading: larger batches per barrier),
        // 128 (GPU) or 64 (CPU), within the device limit.
        const int want = is_gpu(device_) ? (options_.preload ? 256 : 128) : 64;
        const int limit = static_cast<int>(std::min<std::size_t>(max_work_group_size_, 1024));
        t.pus_per_ppu = std::max(t.f_vppu, std::min(want, limit) / t.f_vppu * t.f_vppu);
        // Shrink (by whole vPPUs) while the preload batch and reduction buffer overflow local memory.
        Topology probe = t;
        if (probe.f_load == 0) probe.f_load = probe.f_vppu;
        while (t.pus_per_ppu > t.f_vppu &&
               make_config(probe, data).local_bytes() > device_.info.local_memory) {
            t.pus_per_ppu = std::max(t.f_vppu, t.pus_per_ppu / 2 / t.f_vppu * t.f_vppu);
            probe.pus_per_ppu = t.pus_per_ppu;
        }
    }
    if (t.f_load == 0) t.f_load = t.f_vppu;
    if (t.ppus == 0) {
        // Work-groups launched per step: enough to fill every compute unit several times over
        // (GPU: 2048 resident work-items per compute unit), each looping over blocks of modes.
        const int per_cu = is_gpu(device_) ? std::max(1, 2048 / t.pus_per_ppu) : 4;
        t.ppus = std::max(1, device_.info.compute_units) * per_cu;
    }
    validate_topology(t, name());
    if (t.f_load >= 2048) throw InvalidArgument("opencl: f_load must be < 2048, got " + std::to_string(t.f_load));
    const KernelConfig c = make_config(t, data);
    if (c.tile > (1 << 20))
        throw InvalidArgument("opencl: preload_size must be <= 1048576, got " + std::to_string(c.tile));
    check_against_device(c, max_work_group_size_, device_.info.local_memory, device_.info.name);
    return t;
}

const KernelConfig& OpenCLBackend::kernel_config() const
{
    if (!config_) throw Error("opencl backend: kernel_config() before bind()");
    return *config_;
}

void OpenCLBackend::bind(const PreparedData& data, const Topology& topology)
{
    if (data.model == KernelModel::PerPoint &&
        (data.precision.rows() != data.n() || data.log_weight.size() != data.n()))
        throw InvalidArgument("opencl: per-point model without precision/log_weight of n rows");
    const KernelConfig c = make_config(topology, data);
    check_against_device(c, max_work_group_size_, device_.info.local_memory, device_.info.name);
    const TileRecords tr = build_tile_records(data, c);
    if (tr.records.size() / 4 > static_cast<std::size_t>(INT_MAX))
        throw InvalidArgument("opencl: too many points for 32-bit indexing in the kernel (n · record size > 2^33)");

    cl::Program program = cached_cl_program(context_, device_.handle, program_sources(c.preload), c.build_options());
    kernel_ = cl_call(std::string("creating kernel ") + c.kernel_name(),
                      [&] { return cl::Kernel(program, c.kernel_name()); });
    combine_ = cl_call("creating kernel combine_segments", [&] { return cl::Kernel(program, "combine_segments"); });
    program_ = program;
    const std::size_t kernel_wg = kernel_.getWorkGroupInfo<CL_KERNEL_WORK_GROUP_SIZE>(device_.handle);
    if (static_cast<std::size_t>(c.tau) > kernel_wg)
        throw DeviceError("opencl: kernel " + std::string(c.kernel_name()) + " allows at most " +
                          std::to_string(kernel_wg) + " work-items per work-group on " + device_.info.name +
                          " (CL_KERNEL_WORK_GROUP_SIZE, limited by registers), but tau = " + std::to_string(c.tau) +
                          ": choose a smaller tau or fewer modes per PU");
    const std::size_t kernel_local = kernel_.getWorkGroupInfo<CL_KERNEL_LOCAL_MEM_SIZE>(device_.handle);
    if (kernel_local > device_.info.local_memory)
        throw DeviceError("opencl: kernel needs " + std::to_string(kernel_local) +
                          " bytes of local memory (CL_KERNEL_LOCAL_MEM_SIZE) but the device has " +
                          std::to_string(device_.info.local_memory));

    records_ = cl_call("allocating the point records", [&] {
        return cl::Buffer(context_, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, tr.records.size() * sizeof(float),
                          const_cast<float*>(tr.records.data()));
    });
    refs_ = cl_call("allocating the tile references", [&] {
        return cl::Buffer(context_, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, tr.refs.size() * sizeof(float),
                          const_cast<float*>(tr.refs.data()));
    });
    mode_capacity_ = 0;
    ntiles_ = tr.ntiles;
    k_ = c.k;
    topology_ = topology;
    config_ = c;
}

void OpenCLBackend::ensure_mode_buffers(Index count)
{
    if (count <= mode_capacity_) return;
    const std::size_t bytes = static_cast<std::size_t>(count) * static_cast<std::size_t>(k_) * sizeof(float);
    queries_ = cl_call("allocating the mode buffers", [&] { return cl::Buffer(context_, CL_MEM_READ_ONLY, bytes); });
    out_ = cl_call("allocating the mode buffers", [&] { return cl::Buffer(context_, CL_MEM_WRITE_ONLY, bytes); });
    mode_capacity_ = count;
}

std::string OpenCLBackend::program_binary() const
{
    if (!config_) throw Error("opencl backend: program_binary() before bind()");
    return cl_call("reading the program binary", [&] {
        const auto bins = program_.getInfo<CL_PROGRAM_BINARIES>();
        return bins.empty() ? std::string() : std::string(bins[0].begin(), bins[0].end());
    });
}

std::string OpenCLBackend::build_log() const
{
    if (!config_) throw Error("opencl backend: build_log() before bind()");
    return cl_call("reading the build log", [&] { return program_.getBuildInfo<CL_PROGRAM_BUILD_LOG>(device_.handle); });
}

int OpenCLBackend::choose_segments(int nblocks, Index count) const
{
    const KernelConfig& c = *config_;
    int s = tuning_.segments;
    if (s == 0) {
        // Enough units for many waves of work-groups: the device then never idles on a last,
        // mostly empty wave, nor when only a few modes are still active.
        const long per_cu = is_gpu(device_) ? std::max(1, 2048 / c.tau) : 2;
        const long target = 8L * std::max(1, device_.info.compute_units) * per_cu;
        s = static_cast<int>(std::min<long>((target + nblocks - 1) / nblocks, 1L << 20));
    }
    s = std::max(1, std::min(s, ntiles_));
    // Partial sums: segments x count x NACC floats; stay within an eighth of the device memory.
    const std::size_t per_segment =
        static_cast<std::size_t>(count) * static_cast<std::size_t>(c.reduction_floats() / c.tau) * sizeof(float);
    const std::size_t cap = std::max<std::size_t>(device_.info.global_memory / 8, 1);
    const std::size_t max_alloc = device_.handle.getInfo<CL_DEVICE_MAX_MEM_ALLOC_SIZE>();
    while (s > 1 && (static_cast<std::size_t>(s) * per_segment > std::min(cap, max_alloc) ||
                     static_cast<long>(s) * nblocks > INT_MAX))
        s /= 2;
    return s;
}

void OpenCLBackend::step(const StepRequest& req)
{
    if (!config_) throw Error("opencl backend: step() before bind()");
    if (req.candidates) throw NotSupported("opencl backend: candidate lists are not supported (exact Gaussian only)");
    if (req.count <= 0) return;
    if (req.count > INT_MAX / std::max(1, k_)) throw InvalidArgument("opencl: too many modes in one step");
    const KernelConfig& c = *config_;
    const std::size_t values = static_cast<std::size_t>(req.count) * static_cast<std::size_t>(k_);
    host_in_.resize(values);
    host_out_.resize(values);
    for (std::size_t i = 0; i < values; ++i) host_in_[i] = static_cast<float>(req.positions[i]);
    ensure_mode_buffers(req.count);

    const int count = static_cast<int>(req.count);
    const int nblocks = (count + c.modes_per_block() - 1) / c.modes_per_block();
    const int segments = choose_segments(nblocks, req.count);
    const std::size_t partial_bytes = segments > 1 ? static_cast<std::size_t>(segments) * static_cast<std::size_t>(count) *
                                                         static_cast<std::size_t>(c.reduction_floats() / c.tau) * sizeof(float)
                                                   : sizeof(float);
    if (partial_bytes > partial_capacity_) {
        partial_ = cl_call("allocating the partial sums", [&] { return cl::Buffer(context_, CL_MEM_READ_WRITE, partial_bytes); });
        partial_capacity_ = partial_bytes;
    }
    const int groups = static_cast<int>(std::min<long>(static_cast<long>(nblocks) * segments, topology_.ppus));
    cl::Event done, combined;
    cl_call("running the approx_mode kernel", [&] {
        queue_.enqueueWriteBuffer(queries_, CL_FALSE, 0, values * sizeof(float), host_in_.data());
        kernel_.setArg(0, records_);
        kernel_.setArg(1, refs_);
        kernel_.setArg(2, static_cast<cl_int>(ntiles_));
        kernel_.setArg(3, queries_);
        kernel_.setArg(4, out_);
        kernel_.setArg(5, static_cast<cl_int>(count));
        kernel_.setArg(6, static_cast<cl_int>(nblocks));
        kernel_.setArg(7, static_cast<cl_int>(segments));
        kernel_.setArg(8, partial_);
        queue_.enqueueNDRangeKernel(kernel_, cl::NullRange,
                                    cl::NDRange(static_cast<std::size_t>(groups) * c.tau), cl::NDRange(c.tau),
                                    nullptr, &done);
        if (segments > 1) {
            combine_.setArg(0, partial_);
            combine_.setArg(1, static_cast<cl_int>(segments));
            combine_.setArg(2, queries_);
            combine_.setArg(3, out_);
            combine_.setArg(4, static_cast<cl_int>(count));
            const std::size_t local = 64;
            queue_.enqueueNDRangeKernel(combine_, cl::NullRange,
                                        cl::NDRange((static_cast<std::size_t>(count) + local - 1) / local * local),
                                        cl::NDRange(local), nullptr, &combined);
        }
        queue_.enqueueReadBuffer(out_, CL_TRUE, 0, values * sizeof(float), host_out_.data());
        return 0;
    });
    last_segments_ = segments;
    auto seconds = [](const cl::Event& e) {
        return 1e-9 * static_cast<double>(e.getProfilingInfo<CL_PROFILING_COMMAND_END>() -
                                          e.getProfilingInfo<CL_PROFILING_COMMAND_START>());
    };
    try {
        last_kernel_seconds_ = seconds(done) + (segments > 1 ? seconds(combined) : 0.0);
    } catch (const cl::Error&) {
        last_kernel_seconds_ = 0;  // profiling unavailable: timing only, never an error
    }
    for (std::size_t i = 0; i < values; ++i) req.out[i] = static_cast<double>(host_out_[i]);
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
