// Binding::accumulate's shared parts (partial_sums.hpp).
#include "backends/common/partial_sums.hpp"
#include "skeleton/src/core/array_scan.hpp"

#include "meanshift_device.h"  // ms_log2_shift: the kernels' own decoding of the shift

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace meanshift::detail {

void check_accumulate(const PreparedData& data, const double* positions, Index count, const double* sums)
{
    if (count < 0 || (count > 0 && (!positions || !sums)))
        throw InvalidArgument("accumulate: need count >= 0 positions and a sums array");
    if (!all_finite(positions, static_cast<std::size_t>(count) * static_cast<std::size_t>(data.k())))
        throw InvalidArgument("accumulate: positions must be finite");
}

bool needs_log2_shift(const PreparedData& data)
{
    if (data.model != KernelModel::PerPoint || data.log_weight.size() == 0) return false;
    constexpr double L = 1.4426950408889634;
    return L * data.log_weight.minCoeff() < -kLog2WeightFreeRange ||
           L * data.log_weight.maxCoeff() > kLog2WeightFreeRange;
}

double log2_shift_value(std::int32_t ordered_max)
{
    const float s = ms_log2_shift(ordered_max);
    return s == MS_SHIFT_NO_SUPPORT ? -INFINITY : static_cast<double>(s);
}

void add_relative_sums(const float* acc, Index segments, const double* positions, Index count, int k, bool per_point,
                       double scale, double* sums, const std::int32_t* ordered_max)
{
    const Index ns0 = per_point ? k : 1, width = ns0 + k;
    std::vector<double> s(static_cast<std::size_t>(width));
    const double base_scale = scale;
    for (Index q = 0; q < count; ++q) {
        if (ordered_max) {
            const double shift = log2_shift_value(ordered_max[q]);
            if (!(shift > -INFINITY)) continue;  // no support: every weight was 0, as in float64
            scale = base_scale * std::exp2(shift);
        }
        std::fill(s.begin(), s.end(), 0.0);
        for (Index g = 0; g < segments; ++g) {
            const float* a = acc + (g * count + q) * width;
            for (Index c = 0; c < width; ++c) s[std::size_t(c)] += a[c];
        }
        double* out = sums + q * width;
        for (Index c = 0; c < ns0; ++c) out[c] += scale * s[std::size_t(c)];
        for (int d = 0; d < k; ++d) {
            const double y = static_cast<float>(positions[q * k + d]);
            out[ns0 + d] += scale * (s[std::size_t(ns0 + d)] + y * s[std::size_t(per_point ? d : 0)]);
        }
    }
}

}  // namespace meanshift::detail
