// Binding::accumulate's shared parts (partial_sums.hpp).
#include "backends/partial_sums.hpp"
#include "skeleton/src/array_scan.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <vector>

namespace meanshift::detail {

void check_accumulate(const PreparedData& data, const double* positions, Index count, const double* sums)
{
    if (count < 0 || (count > 0 && (!positions || !sums)))
        throw InvalidArgument("accumulate: need count >= 0 positions and a sums array");
    if (!all_finite(positions, static_cast<std::size_t>(count) * static_cast<std::size_t>(data.k())))
        throw InvalidArgument("accumulate: positions must be finite");
}

void add_relative_sums(const float* acc, Index segments, const double* positions, Index count, int k, bool per_point,
                       double scale, double* sums)
{
    const Index ns0 = per_point ? k : 1, width = ns0 + k;
    std::vector<double> s(static_cast<std::size_t>(width));
    for (Index q = 0; q < count; ++q) {
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
