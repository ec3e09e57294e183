// The OpenCL binding (opencl_binding.hpp): the device buffers of one run, the step's launches, and the
// hooks of the GPU binding lifecycle (backends/gpu/gpu_binding.hpp): load_modes, advance, write_active,
// fetch_modes.
#include "backends/opencl/opencl_backend.hpp"
#include "backends/opencl/opencl_binding_detail.hpp"

#include "backends/opencl/program_cache.hpp"
#include "skeleton/src/core/parallel.hpp"

#include "meanshift_device.h"  // MS_SHIFT_EMPTY: the log2 shift buffer's "no candidate" bytes

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>

namespace meanshift::detail {
namespace {

/// A read-only device buffer holding `v`.
cl::Buffer upload_floats(const cl::Context& context, const std::vector<float>& v, const char* what)
{
    return cl_call(std::string("allocating ") + what, [&] {
        return cl::Buffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, v.size() * sizeof(float),
                          const_cast<float*>(v.data()));
    });
}

}  // namespace

OpenCLBinding::OpenCLBinding(std::shared_ptr<ClDeviceState> device, std::shared_ptr<const PreparedData> data,
                             const Topology& topology, const KernelConfig& config, int segments)
    : GpuBinding(std::move(data), topology, "opencl", 1),
      dev_(std::move(device)),
      config_(config),
      tuned_segments_(segments)
{
    const KernelConfig& c = config_;
    const ClDeviceEntry& device_entry = dev_->device;
    check_against_device(c, dev_->max_work_group_size, device_entry.info.local_memory, device_entry.info.name);
    upload_sphere();
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
    build_kernels();
    if (c.ranges)
        upload_range_points();
    else
        upload_records(layout);
}

void OpenCLBinding::upload_sphere()
{
    // vMF: [origin, radius] of the sphere the finish projects the modes onto (MS_SPHERE); one
    // unused float otherwise.
    std::vector<float> sphere(1, 0.0f);
    if (config_.sphere) {
        if (data_->sphere_origin.size() != k_)
            throw InvalidArgument("opencl: the vMF sphere's origin has " + std::to_string(data_->sphere_origin.size()) +
                                  " values for k = " + std::to_string(k_));
        sphere.resize(static_cast<std::size_t>(k_) + 1);
        for (int d = 0; d < k_; ++d) sphere[static_cast<std::size_t>(d)] = static_cast<float>(data_->sphere_origin[d]);
        sphere[static_cast<std::size_t>(k_)] = static_cast<float>(data_->sphere_radius);
    }
    sphere_ = cl_call("allocating the sphere", [&] {
        return cl::Buffer(dev_->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sphere.size() * sizeof(float),
                          sphere.data());
    });
}

void OpenCLBinding::build_kernels()
{
    const KernelConfig& c = config_;
    const ClDeviceEntry& device_entry = dev_->device;
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
}

void OpenCLBinding::upload_records(gpu::TileLayout& layout)
{
    const KernelConfig& c = config_;
    auto upload = [&](const std::vector<float>& v, const char* what) { return upload_floats(dev_->context, v, what); };
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
}

void OpenCLBinding::upload_range_points()
{
    const KernelConfig& c = config_;
    auto upload = [&](const std::vector<float>& v, const char* what) { return upload_floats(dev_->context, v, what); };
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

void OpenCLBinding::load_modes(std::size_t, const double* positions, Index m, const double* metric)
{
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
        // The kernels' own compaction (MS_FINISH_PARAMS' retire) is not used: GpuBinding retires on
        // the host, in mode order; its arguments stay bound to one unused int each.
        next_list_ = buffer(CL_MEM_READ_WRITE, sizeof(cl_int), nullptr);
        report_ = buffer(CL_MEM_WRITE_ONLY, 3 * list.size() * sizeof(cl_int), nullptr);
        counter_ = buffer(CL_MEM_READ_WRITE, sizeof(cl_int), nullptr);
        return 0;
    });
    has_metric_ = metric != nullptr;
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
            reserve_partial(m, combine);
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

gpu::ShareStep OpenCLBinding::advance(std::size_t, Index active, float tol2f)
{
    const int count = static_cast<int>(active);
    if (config_.ranges) return advance_ranges(count, tol2f);
    const KernelConfig& c = config_;
    const int nblocks = (count + c.modes_per_block() - 1) / c.modes_per_block();
    bool combine = false;
    const int segments = reserve_partial(active, combine);
    const int groups = static_cast<int>(std::min<long>(static_cast<long>(nblocks) * segments, topology_.ppus));
    cl::Event done, combined;
    cl_call("running the approx_mode kernel", [&] {
        enqueue_max(modes_, active_list_, count, nblocks, segments, groups);
        enqueue_step(modes_, active_list_, count, nblocks, segments, groups, tol2f, false, combine, &done, &combined);
        // only count x (mode, shift², status) cross to the host
        dev_->queue.enqueueReadBuffer(report_, CL_TRUE, 0, 3 * static_cast<std::size_t>(count) * sizeof(cl_int),
                                      staging_.as<cl_int>());
        return 0;
    });
    last_segments_ = segments;
    gpu::ShareStep out;
    out.records = staging_.as<const cl_int>();
    try {
        out.kernel_seconds = event_seconds(done) + (combine ? event_seconds(combined) : 0.0);
    } catch (const cl::Error&) {
        out.kernel_seconds = -1;  // profiling unavailable: timing only, never an error
    }
    return out;
}

void OpenCLBinding::write_active(std::size_t, const std::int32_t* list, Index count)
{
    static_assert(sizeof(cl_int) == sizeof(std::int32_t), "the active list is read as cl_int");
    cl_call("writing the active list", [&] {
        return dev_->queue.enqueueWriteBuffer(active_list_, CL_TRUE, 0,
                                              static_cast<std::size_t>(count) * sizeof(cl_int), list);
    });
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

gpu::ShareStep OpenCLBinding::advance_ranges(int count, cl_float tol2f)
{
    cl::Event done;
    cl_call("running the range_modes kernel", [&] {
        enqueue_max(modes_, active_list_, count, 0, 0, 0);
        enqueue_ranges(modes_, active_list_, count, nullptr, tol2f, &done);
        dev_->queue.enqueueReadBuffer(report_, CL_TRUE, 0, 3 * static_cast<std::size_t>(count) * sizeof(cl_int),
                                      staging_.as<cl_int>());
        return 0;
    });
    gpu::ShareStep out;
    out.records = staging_.as<const cl_int>();
    out.pairs = range_pairs();
    try {
        out.kernel_seconds = event_seconds(done);
    } catch (const cl::Error&) {
        out.kernel_seconds = -1;
    }
    return out;
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

const float* OpenCLBinding::fetch_modes(std::size_t i) const
{
    const std::size_t values = static_cast<std::size_t>(share(i).m) * static_cast<std::size_t>(k_);
    cl_call("reading the modes", [&] {
        return dev_->queue.enqueueReadBuffer(modes_, CL_TRUE, 0, values * sizeof(float), staging_.as<float>());
    });
    return staging_.as<const float>();
}

}  // namespace meanshift::detail
