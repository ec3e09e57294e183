// OpenCLBinding::accumulate (the step's kernels on positions of their own) and the program's
// inspection (build log, binary).
#include "backends/opencl/opencl_backend.hpp"

#include "backends/common/partial_sums.hpp"
#include "backends/opencl/cl_common.hpp"
#include "skeleton/src/core/parallel.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <vector>

namespace meanshift::detail {
namespace {

/// accumulate(): positions per launch, so that a chunk's sums take at most 2^22 floats (16 MB) per
/// n-loop segment.
constexpr Index kAccumulateChunkFloats = Index(1) << 22;

/// accumulate(): the n-loop segments are chosen as for a call of at least this many positions, so
/// that a position's float32 sums do not depend on how many others share its call up to this many
/// (segments from the call's own count split 4,096 points in 2 for 300 positions, in 8 for 64 on
/// PoCL with AVX2 and 2 compute units: the MPI ring's chunks then differed from the one-chunk
/// ring's sums). Calls of more positions get fewer segments, as the step's do.
constexpr Index kAccumulatePlanPositions = 4096;

}  // namespace

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
