#include "backends/opencl/tile_records.hpp"

#include <algorithm>
#include <cmath>

namespace meanshift::detail {
namespace {
constexpr double kLog2e = 1.44269504088896340736;
constexpr float kPadLog2w = -1.0e30f;  // MS_PAD_LOG2W

// Orders the points so that every tile of `tile` consecutive points is spatially compact: a
// k-d split along the widest dimension at a tile boundary near the median, recursively. The
// kernels' sums do not depend on the order, but the expanded exponent's rounding error scales
// with the tile's extent, so compact tiles keep it small for any input order.
void kd_order(const MatrixD& x, std::vector<Index>& idx, Index lo, Index hi, int tile)
{
    const Index count = hi - lo;
    if (count <= tile) return;
    const int k = static_cast<int>(x.cols());
    int widest = 0;
    double best = -1;
    for (int d = 0; d < k; ++d) {
        double a = x(idx[lo], d), b = a;
        for (Index i = lo + 1; i < hi; ++i) {
            a = std::min(a, x(idx[i], d));
            b = std::max(b, x(idx[i], d));
        }
        if (b - a > best) best = b - a, widest = d;
    }
    const Index tiles = (count + tile - 1) / tile;
    const Index mid = lo + (tiles / 2) * tile;
    std::nth_element(idx.begin() + lo, idx.begin() + mid, idx.begin() + hi,
                     [&](Index a, Index b) { return x(a, widest) < x(b, widest); });
    kd_order(x, idx, lo, mid, tile);
    kd_order(x, idx, mid, hi, tile);
}
}  // namespace

TileRecords build_tile_records(const PreparedData& data, const KernelConfig& cfg)
{
    const int k = data.k();
    const Index n = data.n();
    const int tile = cfg.tile;
    const int stride = cfg.stride();
    const bool expanded = cfg.form == ExponentForm::Expanded;
    TileRecords out;
    out.ntiles = static_cast<int>((n + tile - 1) / tile);
    out.records.assign(static_cast<std::size_t>(out.ntiles) * tile * stride, 0.0f);
    const int ref_stride = k + 1;  // r_t, radius
    out.refs.assign(static_cast<std::size_t>(out.ntiles) * ref_stride, 0.0f);
    std::vector<double> ref(static_cast<std::size_t>(k)), p(static_cast<std::size_t>(k));
    std::vector<Index> order(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
    kd_order(data.points, order, 0, n, tile);
    auto X = [&](Index slot, int d) { return data.points(order[static_cast<std::size_t>(slot)], d); };

    for (int t = 0; t < out.ntiles; ++t) {
        const Index begin = static_cast<Index>(t) * tile;
        const Index end = std::min<Index>(n, begin + tile);
        for (int d = 0; d < k; ++d) {
            double lo = X(begin, d), hi = lo;
            for (Index i = begin + 1; i < end; ++i) {
                lo = std::min(lo, X(i, d));
                hi = std::max(hi, X(i, d));
            }
            // The kernels subtract the float32 reference: use exactly that value here too.
            const float r = static_cast<float>(0.5 * (lo + hi));
            out.refs[static_cast<std::size_t>(t) * ref_stride + d] = r;
            ref[d] = r;
        }
        double radius2 = 0;
        for (Index i = begin; i < end; ++i) {
            double r2 = 0;
            for (int d = 0; d < k; ++d) r2 += (X(i, d) - ref[d]) * (X(i, d) - ref[d]);
            radius2 = std::max(radius2, r2);
        }
        // rounded up: the kernels use it in a bound
        out.refs[static_cast<std::size_t>(t) * ref_stride + k] = static_cast<float>(std::sqrt(radius2) * (1 + 1e-6));
        for (Index i = begin; i < begin + tile; ++i) {
            float* rec = out.records.data() + static_cast<std::size_t>(i) * stride;
            if (i >= n) {  // padding: zero coordinates and weights, log-weight MS_PAD_LOG2W
                rec[cfg.per_point ? 0 : k] = kPadLog2w;
                continue;
            }
            const Index src = order[static_cast<std::size_t>(i)];
            for (int d = 0; d < k; ++d) p[d] = data.points(src, d) - ref[d];
            if (!cfg.per_point) {
                double sq = 0;
                for (int d = 0; d < k; ++d) {
                    rec[d] = static_cast<float>(p[d]);
                    sq += p[d] * p[d];
                }
                rec[k] = expanded ? static_cast<float>(-0.5 * kLog2e * sq) : 0.0f;
            } else {
                const double c = kLog2e * data.log_weight[src];
                if (expanded) {  // [A, B_d = L w p', C_d = -L/2 w]
                    double a = c;
                    for (int d = 0; d < k; ++d) {
                        const double w = data.precision(src, d);
                        a -= 0.5 * kLog2e * w * p[d] * p[d];
                        rec[1 + d] = static_cast<float>(kLog2e * w * p[d]);
                        rec[1 + k + d] = static_cast<float>(-0.5 * kLog2e * w);
                    }
                    rec[0] = static_cast<float>(a);
                } else {  // [L c, p', w]
                    rec[0] = static_cast<float>(c);
                    for (int d = 0; d < k; ++d) {
                        rec[1 + d] = static_cast<float>(p[d]);
                        rec[1 + k + d] = static_cast<float>(data.precision(src, d));
                    }
                }
            }
        }
    }
    return out;
}

}  // namespace meanshift::detail
