// The CUDA binding: the data of one run and the modes on one or more devices (Part per device),
// driven by the GPU binding lifecycle (backends/gpu/gpu_binding.hpp); a step gathers the active
// modes, accumulates, finishes them in place, and only (index, shift², status) of each advanced
// mode crosses to the host. Points that do not fit one device's memory are streamed in chunks.
#include "backends/cuda/cuda_binding.hpp"

#include "backends/cuda/cuda_check.hpp"
#include "backends/cuda/mode_kernels.hpp"
#include "backends/cuda/staged_upload.hpp"
#include "backends/gpu/gpu_binding.hpp"
#include "backends/gpu/range_grid.hpp"
#include "backends/gpu/rebindable.hpp"
#include "backends/gpu/tile_layout.hpp"
#include "backends/common/partial_sums.hpp"
#include "skeleton/src/core/parallel.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace meanshift::cuda {
namespace {

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

    Index m0 = 0, m = 0, capacity = 0;  // the share [m0, m0 + m) of the modes (GpuBinding's), capacity
    bool has_metric = false;
    DeviceBuffer pos, metric, act, keep, records;  // act: the active list (GpuBinding::write_active)
    DeviceBuffer queries, acc;
    DeviceBuffer sphere;  // vMF: [origin, radius] for the finish (FinishParams::sphere), else unallocated
    bool has_sphere = false;
    DeviceBuffer shift;  // Plan::shift: per query, the ordered maximum of its log2 weights (max pass)
    Index query_capacity = 0;
    Index query_room = 0;  // queries of one chunk that bind_part left device memory for
    PinnedBuffer<ModeRecord> host_records;
    PinnedBuffer<float> host_stage;

    double kernel_seconds = 0;  // kernels of the last step

    explicit Part(std::shared_ptr<DeviceContext> c)
        : ctx(std::move(c)), stream(ctx->device), start(ctx->device), stop(ctx->device)
    {
    }
};

class CudaBinding final : public gpu::GpuBinding, public gpu::Rebindable {
public:
    CudaBinding(Contexts ctx, std::shared_ptr<const PreparedData> data, const Topology& topology,
                const BackendOptions& options, const Plan& plan)
        : GpuBinding(std::move(data), topology, "cuda backend", ctx.size()),
          ctx_(std::move(ctx)),
          plan_(plan),
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
        drop_modes();
        g_ = plan_.range && data_->grid && data_->grid->g() <= kMaxRangeGridDims ? data_->grid->g() : 0;
        const Index parts = static_cast<Index>(parts_.size());
        on_devices(ctx_, [&](std::size_t i) {
            Part& s = *parts_[i];
            s.chunk_points = data_->n();
            s.m = 0;
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

protected:
    void for_each_share(const std::function<void(std::size_t)>& f) const override { on_devices(ctx_, f); }
    void load_modes(std::size_t i, const double* positions, Index m, const double* metric) override
    {
        set_part_modes(*parts_[i], share(i).m0, m, positions, metric);
    }
    gpu::ShareStep advance(std::size_t i, Index count, float tol2) override
    {
        static_assert(sizeof(ModeRecord) == 3 * sizeof(std::int32_t), "records are read as 3 words");
        Part& s = *parts_[i];
        step_part(s, count, tol2);
        gpu::ShareStep out;
        out.records = reinterpret_cast<const std::int32_t*>(s.host_records.get());
        out.pairs = s.step_pairs;
        out.kernel_seconds = s.kernel_seconds;
        return out;
    }
    void write_active(std::size_t i, const std::int32_t* list, Index count) override
    {
        Part& s = *parts_[i];
        MS_CUDA_CHECK(cudaMemcpyAsync(s.act.as<std::int32_t>(), list,
                                      static_cast<std::size_t>(count) * sizeof(std::int32_t), cudaMemcpyHostToDevice,
                                      s.stream.get()));
        MS_CUDA_CHECK(cudaStreamSynchronize(s.stream.get()));
    }
    const float* fetch_modes(std::size_t i) const override
    {
        const Part& s = *parts_[i];
        const std::size_t floats = static_cast<std::size_t>(share(i).m) * k_;
        MS_CUDA_CHECK(cudaMemcpyAsync(s.host_stage.get(), s.pos.f(), floats * sizeof(float), cudaMemcpyDeviceToHost,
                                      s.stream.get()));
        MS_CUDA_CHECK(cudaStreamSynchronize(s.stream.get()));
        return s.host_stage.get();
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
                : static_cast<std::size_t>(topology_.ppus) * topology_.pus_per_ppu * 3 * k_ * sizeof(float);
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
        const cudaStream_t st = s.stream.get();
        const std::size_t floats = static_cast<std::size_t>(m) * k_;
        if (s.capacity < m) {
            s.capacity = 0;
            s.pos.allocate(floats * sizeof(float));
            s.metric.allocate(floats * sizeof(float));
            s.act.allocate(static_cast<std::size_t>(m) * sizeof(std::int32_t));
            s.keep.allocate(static_cast<std::size_t>(m));
            s.records.allocate(static_cast<std::size_t>(m) * sizeof(ModeRecord));
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

    /// The `count` active modes of one device advanced by one iteration (gather, sums, finish); their
    /// records in s.host_records, the kernels' time and pairs in s.kernel_seconds, s.step_pairs.
    void step_part(Part& s, Index count, float tol2)
    {
        s.kernel_seconds = 0;
        s.step_pairs = plan_.range ? 0.0 : -1.0;
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
        const int T = topology_.pus_per_ppu;
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
            p.f_vppu = topology_.f_vppu;
            p.f_load = topology_.f_load;
            // The load factor at work (Theorem 2): when f_load = f_vppu and the modes are too few to
            // fill the z resident blocks (bin seeds, the last active modes), a mode's candidate loop
            // is spread over more PUs, doubling up to a warp while the blocks stay at most z.
            if (p.f_load == p.f_vppu) {
                while (p.f_vppu < 32 && p.f_vppu * 2 <= T && (nq * p.f_vppu * 2 + T - 1) / T <= topology_.ppus)
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
            const Index max_slices = std::max<Index>(64, 4 * topology_.ppus / p.groups);
            for (Index sl = 1; sl <= std::min<Index>(p.tiles, max_slices); ++sl) {
                const Index tps = (p.tiles + sl - 1) / sl;
                const Index real = (p.tiles + tps - 1) / tps;
                const Index units = p.groups * real;
                const Index rounds = (units + topology_.ppus - 1) / topology_.ppus;
                const double eff = static_cast<double>(units) / static_cast<double>(rounds * topology_.ppus) *
                                   static_cast<double>(p.tiles) / static_cast<double>(real * tps);
                if (eff > best + 0.01) {
                    best = eff;
                    slices = real;
                }
            }
            p.tiles_per_slice = (p.tiles + slices - 1) / slices;
            slices = (p.tiles + p.tiles_per_slice - 1) / p.tiles_per_slice;
            p.units = p.groups * slices;
            const unsigned grid = static_cast<unsigned>(std::min<Index>(p.units, topology_.ppus));
            void* args[] = {&p};
            MS_CUDA_CHECK(cudaLaunchKernel(plan_.kernel, dim3(grid), dim3(T), args, plan_.smem, s.stream.get()));
        } else {
            TopologyParams p;
            set_points(p, s, npoints);
            p.f_vppu = topology_.f_vppu;
            p.f_load = topology_.f_load;
            p.tile = plan_.tile;
            p.queries = s.queries.f();
            p.acc = s.acc.f();
            p.count = nq;
            p.scratch = s.scratch.f();
            p.log2_shift = shift;
            const Index vppus = T / topology_.f_vppu;
            const unsigned grid = static_cast<unsigned>(std::min<Index>((nq + vppus - 1) / vppus, topology_.ppus));
            void* args[] = {&p};
            MS_CUDA_CHECK(cudaLaunchKernel(plan_.kernel, dim3(grid), dim3(T), args, plan_.smem, s.stream.get()));
        }
        MS_CUDA_CHECK(cudaGetLastError());
    }

    Contexts ctx_;
    Plan plan_;
    bool pp_ = false;
    Index max_queries_ = 0, max_points_ = 0;
    gpu::TileLayout layout_;  // host records, kept only while some device streams point chunks
    Index tiles_ = 0;
    int g_ = 0;  // grid dims the range kernels use (0: one range [0, n))
    std::vector<std::unique_ptr<Part>> parts_;
};

}  // namespace

std::unique_ptr<Binding> make_binding(Contexts ctx, std::shared_ptr<const PreparedData> data, const Topology& topology,
                                      const BackendOptions& options, const Plan& plan)
{
    return std::make_unique<CudaBinding>(std::move(ctx), std::move(data), topology, options, plan);
}

}  // namespace meanshift::cuda
