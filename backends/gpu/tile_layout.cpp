#include "backends/gpu/tile_layout.hpp"

#include "skeleton/src/core/parallel.hpp"
#include "skeleton/src/approx/spatial_order.hpp"

#include "meanshift_device.h"  // MS_LOG2E, MS_PAD_LOG2W: the device's constants, the only definitions

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cmath>

namespace meanshift::gpu {
namespace {

// L = log2(e) exactly as the kernels use it (the float MS_LOG2E, widened): the host's point terms
// and the device's query terms of the expanded exponent then carry the same L.
constexpr double kL = static_cast<double>(MS_LOG2E);

}  // namespace

int record_floats(int k, bool per_point) noexcept
{
    return per_point ? 2 * k + 1 : k + 1;
}

int record_stride(int k, bool per_point) noexcept
{
    return (record_floats(k, per_point) + 3) / 4 * 4;
}

int log_weight_slot(int k, bool per_point) noexcept
{
    return per_point ? 0 : k;
}

std::size_t tile_bytes(int k, bool per_point, int tile) noexcept
{
    return static_cast<std::size_t>(tile) * static_cast<std::size_t>(record_stride(k, per_point)) * sizeof(float);
}

std::vector<Index> spatial_order(const MatrixD& points, int tile)
{
    if (tile < 1) throw InvalidArgument("gpu layout: tile must be >= 1, got " + std::to_string(tile));
    return detail::kd_order(points, tile);
}

TileLayout build_tile_layout(const PreparedData& data, int tile, ExponentForm form)
{
    const int k = data.k();
    const Index n = data.n();
    const bool pp = data.model == KernelModel::PerPoint;
    if (n < 1 || k < 1)
        throw InvalidArgument("gpu layout: no points (n = " + std::to_string(n) + ", k = " + std::to_string(k) + ")");
    if (pp && (data.precision.rows() != n || data.precision.cols() != k || data.log_weight.size() != n))
        throw InvalidArgument("gpu layout: per-point model without precision (n x k) and log_weight (n)");

    TileLayout out;
    out.k = k;
    out.per_point = pp;
    out.form = form;
    out.tile = tile;
    out.stride = record_stride(k, pp);
    out.n = n;
    out.original = spatial_order(data.points, tile);
    out.tiles = (n + tile - 1) / tile;
    const std::size_t stride = static_cast<std::size_t>(out.stride);
    out.records.assign(static_cast<std::size_t>(out.tiles) * static_cast<std::size_t>(tile) * stride, 0.0f);
    out.centres.assign(static_cast<std::size_t>(out.tiles) * static_cast<std::size_t>(k), 0.0f);
    out.radii.assign(static_cast<std::size_t>(out.tiles), 0.0f);

    const bool expanded = form == ExponentForm::Expanded;
    const int lw = log_weight_slot(k, pp);
    auto src_of = [&](Index s) { return out.original[static_cast<std::size_t>(s)]; };
    // Tiles are independent (each writes its own records, centre and radius).
    MS_PARALLEL_FOR(n * k)
    for (Index t = 0; t < out.tiles; ++t) {
        std::vector<double> c(static_cast<std::size_t>(k)), p(static_cast<std::size_t>(k));
        const Index begin = t * tile, end = std::min<Index>(n, begin + tile);
        for (int d = 0; d < k; ++d) {
            double lo = data.points(src_of(begin), d), hi = lo;
            for (Index s = begin + 1; s < end; ++s) {
                const double v = data.points(src_of(s), d);
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
            const float cf = static_cast<float>(0.5 * (lo + hi));  // the kernels subtract this float
            out.centres[static_cast<std::size_t>(t) * k + d] = cf;
            c[static_cast<std::size_t>(d)] = cf;
        }
        double radius2 = 0;
        for (Index s = begin; s < begin + tile; ++s) {
            float* rec = out.records.data() + static_cast<std::size_t>(s) * stride;
            if (s >= end) {  // padding: zero coordinates and weights, log2 weight MS_PAD_LOG2W
                rec[lw] = MS_PAD_LOG2W;
                continue;
            }
            const Index i = src_of(s);
            double r2 = 0, quad = 0;
            for (int d = 0; d < k; ++d) {
                p[static_cast<std::size_t>(d)] = data.points(i, d) - c[static_cast<std::size_t>(d)];
                r2 += p[static_cast<std::size_t>(d)] * p[static_cast<std::size_t>(d)];
            }
            radius2 = std::max(radius2, r2);
            if (!pp) {
                for (int d = 0; d < k; ++d) rec[d] = static_cast<float>(p[static_cast<std::size_t>(d)]);
                rec[k] = expanded ? static_cast<float>(-0.5 * kL * r2) : 0.0f;
                continue;
            }
            const double lc = kL * data.log_weight[i];
            for (int d = 0; d < k; ++d) {
                const double w = data.precision(i, d), pd = p[static_cast<std::size_t>(d)];
                if (expanded) {  // [A, B_d = L w p', C_d = -L/2 w]
                    quad += w * pd * pd;
                    rec[1 + d] = static_cast<float>(kL * w * pd);
                    rec[1 + k + d] = static_cast<float>(-0.5 * kL * w);
                } else {  // [L c, p', w]
                    rec[1 + d] = static_cast<float>(pd);
                    rec[1 + k + d] = static_cast<float>(w);
                }
            }
            rec[0] = static_cast<float>(expanded ? lc - 0.5 * kL * quad : lc);
        }
        out.radii[static_cast<std::size_t>(t)] = static_cast<float>(std::sqrt(radius2) * (1 + 1e-6));
    }
    return out;
}

}  // namespace meanshift::gpu
