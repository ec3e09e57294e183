// HostBinding: mode storage, Alg. 5 shifts and active-set compaction of the host backends.
#include "backends/host_binding.hpp"

#include <meanshift/errors.hpp>

#include <chrono>
#include <cstdint>
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace meanshift::detail {

HostBinding::HostBinding(std::shared_ptr<const PreparedData> data, const Topology& topology)
    : data_(std::move(data)), topology_(topology)
{
    if (!data_) throw InvalidArgument("bind: no data (null PreparedData)");
}

void HostBinding::set_modes(const double* positions, Index m, const double* metric)
{
    const int k = data_->k();
    if (m < 1) throw InvalidArgument("set_modes: need at least one mode (m = " + std::to_string(m) + ")");
    if (!positions) throw InvalidArgument("set_modes: null positions");
    modes_ = Eigen::Map<const MatrixD>(positions, m, k);
    if (!modes_.allFinite()) throw InvalidArgument("set_modes: positions must be finite");
    if (metric) {
        metric_ = Eigen::Map<const MatrixD>(metric, m, k);
        if (!metric_.allFinite() || (metric_.array() < 0).any())
            throw InvalidArgument("set_modes: metric weights must be finite and >= 0");
    } else {
        metric_.resize(0, 0);
    }
    active_.resize(static_cast<std::size_t>(m));
    for (Index i = 0; i < m; ++i) active_[static_cast<std::size_t>(i)] = i;
    if (data_->grid) order_by_cell(modes_.data());
}

void HostBinding::step(double tol2, bool retire, StepReport& report)
{
    report.clear();
    if (modes_.rows() == 0) throw Error("step() before set_modes()");
    const Index a = active_count();
    if (a == 0) return;
    const int k = data_->k();
    // The active set only shrinks: keep the buffers of the first step (a resize to a smaller a
    // would reallocate them and fault in fresh pages every step).
    if (in_.rows() < a || in_.cols() != k) {
        in_.resize(a, k);
        out_.resize(a, k);
    }
    supported_.assign(static_cast<std::size_t>(a), 1);
    const std::size_t ku = static_cast<std::size_t>(k);
    double* Y = modes_.data();
    double* in = in_.data();
    for (Index j = 0; j < a; ++j)
        std::copy_n(Y + static_cast<std::size_t>(active_[static_cast<std::size_t>(j)]) * ku, ku, in + j * k);
    const auto t0 = std::chrono::steady_clock::now();
    advance(in, out_.data(), supported_.data(), a);
    report.kernel_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!Eigen::Map<const MatrixD>(out_.data(), a, k).allFinite())
        throw Error("backend produced non-finite mode positions (a backend defect)");

    report.mode.resize(static_cast<std::size_t>(a));
    report.shift2.resize(static_cast<std::size_t>(a));
    report.status.resize(static_cast<std::size_t>(a));
    const double* out = out_.data();
    const double* W = metric_.size() ? metric_.data() : nullptr;
    std::size_t kept = 0;
    for (Index j = 0; j < a; ++j) {
        const std::size_t sj = static_cast<std::size_t>(j);
        const Index q = active_[sj];
        const double* o = out + j * k;
        const double* y = in + j * k;
        const double* w = W ? W + static_cast<std::size_t>(q) * ku : nullptr;
        double d2 = 0;
        for (int d = 0; d < k; ++d) {
            const double t = o[d] - y[d];
            d2 += (w ? w[d] : 1.0) * t * t;
        }
        std::copy_n(o, ku, Y + static_cast<std::size_t>(q) * ku);
        const ModeStatus st = !supported_[sj] ? ModeStatus::NoSupport
                              : d2 <= tol2    ? ModeStatus::Converged
                                              : ModeStatus::Active;
        report.mode[sj] = q;
        report.shift2[sj] = d2;
        report.status[sj] = st;
        if (!retire || st == ModeStatus::Active) active_[kept++] = q;
    }
    active_.resize(kept);
}

namespace {

/// The low 16 bits of v spread to the even bits of the result (Morton interleaving of two dims).
inline std::uint64_t spread2(std::uint64_t v)
{
    v &= 0xffffu;
    v = (v | (v << 8)) & 0x00ff00ffu;
    v = (v | (v << 4)) & 0x0f0f0f0fu;
    v = (v | (v << 2)) & 0x33333333u;
    v = (v | (v << 1)) & 0x55555555u;
    return v;
}

}  // namespace

void HostBinding::order_by_cell(const double* Y)
{
    // Blocks of consecutive active modes share one box of cells (block_ranges), so the box is
    // smallest when a block's modes are close. The driver's Morton order over all k dims does not
    // keep blocks compact in the grid dims (an image's colour dims interleave with x and y: a block
    // of 32 pixels spanned ~100 x 56 pixels, 7x the pairs). So set_modes orders the active modes
    // by the Morton key of their cell coordinates (a block of 32 modes of a full image is then an
    // 8 x 4 tile) by an LSD radix sort. Retiring modes keeps that order; moving modes shuffle it
    // a little: re-sorting every step saved 5 % of the pairs on china.jpg and cost more than that.
    const CellGrid& G = *data_->grid;
    const int g = G.g(), k = data_->k();
    int bits = 0;
    for (int j = 0; j < g; ++j)
        while (bits < 63 / g && (Index{1} << bits) < G.cells[std::size_t(j)]) ++bits;
    const std::size_t a = active_.size();
    std::vector<std::pair<std::uint64_t, Index>> keyed(a), sorted(a);
    for (std::size_t q = 0; q < a; ++q) {
        const double* y = Y + static_cast<std::size_t>(active_[q]) * static_cast<std::size_t>(k);
        std::uint64_t key = 0;
        if (g == 2 && bits <= 16) {
            key = spread2(static_cast<std::uint64_t>(G.coord(0, y[G.dims[0]]))) << 1 |
                  spread2(static_cast<std::uint64_t>(G.coord(1, y[G.dims[1]])));
        } else {
            for (int j = 0; j < g; ++j) {
                const auto c = static_cast<std::uint64_t>(G.coord(j, y[G.dims[std::size_t(j)]]));
                for (int b = 0; b < bits; ++b) key |= ((c >> b) & 1u) << (b * g + (g - 1 - j));
            }
        }
        keyed[q] = {key, active_[q]};
    }
    constexpr int kDigit = 11;
    const int key_bits = bits * g;
    std::vector<std::size_t> count;
    for (int shift = 0; shift < key_bits; shift += kDigit) {
        count.assign((std::size_t{1} << kDigit) + 1, 0);
        const std::uint64_t mask = (std::uint64_t{1} << kDigit) - 1;
        for (const auto& e : keyed) ++count[((e.first >> shift) & mask) + 1];
        for (std::size_t b = 0; b + 1 < count.size(); ++b) count[b + 1] += count[b];
        for (const auto& e : keyed) sorted[count[(e.first >> shift) & mask]++] = e;
        keyed.swap(sorted);
    }
    for (std::size_t q = 0; q < a; ++q) active_[q] = keyed[q].second;
}

Index HostBinding::block_ranges(const double* modes, Index count, std::vector<Index>& ranges) const
{
    const PreparedData& D = *data_;
    if (!D.grid) {
        ranges.push_back(0);
        ranges.push_back(D.n());
        return D.n();
    }
    const CellGrid& G = *D.grid;
    Index lo[64], hi[64];
    std::vector<Index> lo_v, hi_v;
    Index* l = lo;
    Index* h = hi;
    if (G.g() > 64) {
        lo_v.resize(std::size_t(G.g()));
        hi_v.resize(std::size_t(G.g()));
        l = lo_v.data();
        h = hi_v.data();
    }
    G.empty_box(l, h);
    const int k = D.k();
    for (Index q = 0; q < count; ++q) G.add_neighbourhood(modes + q * k, l, h);
    return G.box_ranges(l, h, ranges);
}

void HostBinding::read_modes(double* out) const
{
    if (modes_.rows() == 0) throw Error("read_modes() before set_modes()");
    Eigen::Map<MatrixD>(out, modes_.rows(), modes_.cols()) = modes_;
}

}  // namespace meanshift::detail
