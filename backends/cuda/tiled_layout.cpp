#include "backends/cuda/tiled_layout.hpp"

#include "backends/cuda/kernel_params.hpp"
#include "meanshift_device.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace meanshift::cuda {

std::vector<Index> morton_order(const MatrixD& points)
{
    const Index n = points.rows();
    const int k = static_cast<int>(points.cols());
    std::vector<Index> order(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
    if (n < 2 || k < 1) return order;

    // Interleave the top `bits` bits of each (quantised) dimension; beyond 21 dimensions only
    // the first 21 take part (the order stays valid, just less compact).
    const int dims = std::min(k, 21);
    const int bits = std::max(1, 63 / dims);
    const double cells = std::ldexp(1.0, bits) - 1.0;
    std::vector<double> lo(static_cast<std::size_t>(dims)), scale(static_cast<std::size_t>(dims));
    for (int d = 0; d < dims; ++d) {
        const double mn = points.col(d).minCoeff(), mx = points.col(d).maxCoeff();
        lo[static_cast<std::size_t>(d)] = mn;
        scale[static_cast<std::size_t>(d)] = mx > mn ? cells / (mx - mn) : 0.0;
    }
    std::vector<std::pair<std::uint64_t, Index>> keyed(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) {
        std::uint64_t cell[21];
        for (int d = 0; d < dims; ++d)
            cell[d] = static_cast<std::uint64_t>((points(i, d) - lo[static_cast<std::size_t>(d)]) *
                                                 scale[static_cast<std::size_t>(d)]);
        std::uint64_t key = 0;
        for (int b = bits - 1; b >= 0; --b)
            for (int d = 0; d < dims; ++d) key = (key << 1) | ((cell[d] >> b) & 1u);
        keyed[static_cast<std::size_t>(i)] = {key, i};
    }
    std::sort(keyed.begin(), keyed.end());
    for (Index i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = keyed[static_cast<std::size_t>(i)].second;
    return order;
}

TiledLayout build_tiled_layout(const PreparedData& data, int tile)
{
    const bool pp = data.model == KernelModel::PerPoint;
    const int k = data.k();
    const Index n = data.n();
    const double log2e = 1.0 / std::log(2.0);

    TiledLayout out;
    out.k = k;
    out.tile = tile;
    out.stride = fast_stride(k, pp);
    out.tiles = (n + tile - 1) / tile;
    out.data.assign(static_cast<std::size_t>(out.tiles) * tile * out.stride, 0.0f);
    out.centres.assign(static_cast<std::size_t>(out.tiles) * k, 0.0f);
    out.radii.assign(static_cast<std::size_t>(out.tiles), 0.0f);

    const std::vector<Index> order = morton_order(data.points);
    std::vector<double> c(static_cast<std::size_t>(k));
    for (Index t = 0; t < out.tiles; ++t) {
        const Index i0 = t * tile, i1 = std::min(n, i0 + tile);
        // Centre of the tile's bounding box, rounded to float (the kernel subtracts the float).
        for (int d = 0; d < k; ++d) {
            double mn = std::numeric_limits<double>::infinity(), mx = -mn;
            for (Index s = i0; s < i1; ++s) {
                const double v = data.points(order[static_cast<std::size_t>(s)], d);
                mn = std::min(mn, v);
                mx = std::max(mx, v);
            }
            const float cf = static_cast<float>(0.5 * (mn + mx));
            out.centres[static_cast<std::size_t>(t * k + d)] = cf;
            c[static_cast<std::size_t>(d)] = cf;
        }
        // Records as kernels/meanshift_device.h defines them (expanded form, relative to c_t):
        //   shared:    [p'_0 .. p'_{k-1}, -L/2 |p'|²]
        //   per-point: [L c_i - L/2 Σ w_d p'_d², L w_d p'_d (k), -L/2 w_d (k)]     (L = log2 e)
        for (Index s = i0; s < t * tile + tile; ++s) {
            float* row = out.data.data() + static_cast<std::size_t>(s) * out.stride;
            if (s >= i1) {  // padding: weight exactly 0
                row[pp ? 0 : k] = MS_PAD_LOG2W;
                continue;
            }
            const Index i = order[static_cast<std::size_t>(s)];
            double quad = 0.0, r2 = 0.0;
            for (int d = 0; d < k; ++d) {
                const double pd = data.points(i, d) - c[static_cast<std::size_t>(d)];
                const double w = pp ? data.precision(i, d) : 1.0;
                quad += w * pd * pd;
                r2 += pd * pd;
                if (pp) {
                    row[1 + d] = static_cast<float>(log2e * w * pd);
                    row[1 + k + d] = static_cast<float>(-0.5 * log2e * w);
                } else {
                    row[d] = static_cast<float>(pd);
                }
            }
            if (pp)
                row[0] = static_cast<float>(log2e * data.log_weight[i] - 0.5 * log2e * quad);
            else
                row[k] = static_cast<float>(-0.5 * log2e * quad);
            float& rt = out.radii[static_cast<std::size_t>(t)];
            rt = std::max(rt, static_cast<float>(std::sqrt(r2) * (1.0 + 1e-6)));
        }
    }
    return out;
}

}  // namespace meanshift::cuda
