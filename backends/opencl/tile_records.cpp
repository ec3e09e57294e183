#include "backends/opencl/tile_records.hpp"

#include <algorithm>
#include <cmath>

namespace meanshift::detail {
namespace {
constexpr double kLog2e = 1.44269504088896340736;
constexpr float kPadLog2w = -1.0e30f;  // MS_PAD_LOG2W
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
    out.refs.assign(static_cast<std::size_t>(out.ntiles) * k, 0.0f);
    std::vector<double> ref(static_cast<std::size_t>(k)), p(static_cast<std::size_t>(k));

    for (int t = 0; t < out.ntiles; ++t) {
        const Index begin = static_cast<Index>(t) * tile;
        const Index end = std::min<Index>(n, begin + tile);
        for (int d = 0; d < k; ++d) {
            double lo = data.points(begin, d), hi = lo;
            for (Index i = begin + 1; i < end; ++i) {
                lo = std::min(lo, data.points(i, d));
                hi = std::max(hi, data.points(i, d));
            }
            // The kernels subtract the float32 reference: use exactly that value here too.
            const float r = static_cast<float>(0.5 * (lo + hi));
            out.refs[static_cast<std::size_t>(t) * k + d] = r;
            ref[d] = r;
        }
        for (Index i = begin; i < begin + tile; ++i) {
            float* rec = out.records.data() + static_cast<std::size_t>(i) * stride;
            if (i >= n) {  // padding: zero coordinates and weights, log-weight MS_PAD_LOG2W
                rec[cfg.per_point ? 0 : k] = kPadLog2w;
                continue;
            }
            for (int d = 0; d < k; ++d) p[d] = data.points(i, d) - ref[d];
            if (!cfg.per_point) {
                double sq = 0;
                for (int d = 0; d < k; ++d) {
                    rec[d] = static_cast<float>(p[d]);
                    sq += p[d] * p[d];
                }
                rec[k] = expanded ? static_cast<float>(-0.5 * kLog2e * sq) : 0.0f;
            } else {
                const double c = kLog2e * data.log_weight[i];
                if (expanded) {  // [A, B_d = L w p', C_d = -L/2 w]
                    double a = c;
                    for (int d = 0; d < k; ++d) {
                        const double w = data.precision(i, d);
                        a -= 0.5 * kLog2e * w * p[d] * p[d];
                        rec[1 + d] = static_cast<float>(kLog2e * w * p[d]);
                        rec[1 + k + d] = static_cast<float>(-0.5 * kLog2e * w);
                    }
                    rec[0] = static_cast<float>(a);
                } else {  // [L c, p', w]
                    rec[0] = static_cast<float>(c);
                    for (int d = 0; d < k; ++d) {
                        rec[1 + d] = static_cast<float>(p[d]);
                        rec[1 + k + d] = static_cast<float>(data.precision(i, d));
                    }
                }
            }
        }
    }
    return out;
}

}  // namespace meanshift::detail
