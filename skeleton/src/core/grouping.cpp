// groupModes on the host: Alg. 6 (sequential semantics) and connected components (003), in
// parallel. Both walk the modes in blocks: the threads test a block's modes against everything
// decided before the block (read-only), then the block's undecided modes are settled in order.
// That keeps Alg. 6's result exactly (a mode joins the first group, in creation order, whose
// representative is within eps) while the bulk of the work, m · c distance tests for m modes and
// c groups, runs on all threads: through a hashed cell grid at small k (mode_grid.hpp), through
// GEMM tiles |y|² + |r|² − 2 y·r at larger k, with every candidate the tile admits re-tested in
// the direct form, so the expanded form's rounding can never change a decision.
#include "skeleton/src/core/array_scan.hpp"
#include "skeleton/src/core/mode_grid.hpp"
#include "skeleton/src/core/parallel.hpp"

#include <meanshift/errors.hpp>
#include <meanshift/grouping.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace meanshift {
namespace {

using detail::ModeGrid;

double dist2(const MatrixD& p, Index a, Index b)
{
    return (p.row(a) - p.row(b)).squaredNorm();
}

/// Modes per block: enough rows to share among the threads, few enough that the in-order pass
/// over a block's undecided modes (≤ block² / 2 tests) stays small beside the parallel pass.
Index block_rows()
{
    return std::max<Index>(1024, Index{64} * detail::host_threads());
}

/// Rows whose distance to `rows` is tested per GEMM tile (a tile is rows × kTile doubles per thread).
constexpr Index kChunk = 32;
constexpr Index kTile = 512;

/// The lowest index j in [0, count) of the rows `ref` (a row-major count × k buffer whose squared
/// norms are `ref_norm`) with |y_i − ref_j|² ≤ eps2, for each mode i in [s, e); -1 when none.
/// In parallel over chunks of modes; each chunk scans the reference rows tile by tile in order
/// and stops once all its modes have their first match.
void first_within(const MatrixD& modes, const VectorD& norm, Index s, Index e, const double* ref,
                  const double* ref_norm, Index count, double eps2, std::vector<int>& found)
{
    const Index k = modes.cols();
    const double u = 4.0 * double(k + 2) * std::numeric_limits<double>::epsilon();
    using Map = Eigen::Map<const MatrixD>;
    const Index chunks = (e - s + kChunk - 1) / kChunk;
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 1)                                                                          \
    num_threads(detail::host_threads()) if ((e - s) * count * k >= detail::kParallelMinValues)
#endif
    for (Index ch = 0; ch < chunks; ++ch) {
        const Index a = s + ch * kChunk, b = std::min(e, a + kChunk), rows = b - a;
        Index open = rows;
        MatrixD G;
        for (Index t0 = 0; t0 < count && open > 0; t0 += kTile) {
            const Index t = std::min(kTile, count - t0);
            G.noalias() = modes.middleRows(a, rows) * Map(ref + t0 * k, t, k).transpose();
            for (Index r = 0; r < rows; ++r) {
                int& f = found[std::size_t(a + r - s)];
                if (f >= 0) continue;
                const double yn = norm[a + r];
                for (Index j = 0; j < t; ++j) {
                    const double rn = ref_norm[t0 + j];
                    if (yn + rn - 2 * G(r, j) > eps2 + u * (yn + rn)) continue;  // surely outside
                    const double d2 = (modes.row(a + r) - Map(ref + (t0 + j) * k, 1, k)).squaredNorm();
                    if (d2 <= eps2) {
                        f = static_cast<int>(t0 + j);
                        --open;
                        break;
                    }
                }
            }
        }
    }
}

// Relabel so that groups are numbered by decreasing size (ties: first appearance), then centres.
Grouping finish(const MatrixD& modes, std::vector<int> raw, int groups)
{
    std::vector<Index> size(static_cast<std::size_t>(groups), 0);
    for (int g : raw) ++size[std::size_t(g)];
    std::vector<int> order(static_cast<std::size_t>(groups));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return size[std::size_t(a)] > size[std::size_t(b)]; });
    std::vector<int> rank(static_cast<std::size_t>(groups));
    for (int r = 0; r < groups; ++r) rank[std::size_t(order[std::size_t(r)])] = r;

    Grouping out;
    out.labels.resize(raw.size());
    out.sizes.resize(static_cast<std::size_t>(groups));
    out.centres = MatrixD::Zero(groups, modes.cols());
    for (std::size_t i = 0; i < raw.size(); ++i) {
        const int g = rank[std::size_t(raw[i])];
        out.labels[i] = g;
        out.centres.row(g) += modes.row(Index(i));
    }
    for (int g = 0; g < groups; ++g) {
        out.sizes[std::size_t(g)] = size[std::size_t(order[std::size_t(g)])];
        out.centres.row(g) /= static_cast<double>(out.sizes[std::size_t(g)]);
    }
    return out;
}

/// The groups' representatives (first modes), kept contiguous for the GEMM tiles.
struct Representatives {
    std::vector<Index> mode;  ///< mode index of each group's representative
    std::vector<double> rows;  ///< count × k, row-major
    std::vector<double> norm;  ///< squared norms
    void add(const MatrixD& modes, Index i)
    {
        mode.push_back(i);
        rows.insert(rows.end(), modes.row(i).data(), modes.row(i).data() + modes.cols());
        norm.push_back(modes.row(i).squaredNorm());
    }
    Index count() const { return static_cast<Index>(mode.size()); }
};

Grouping sequential(const MatrixD& modes, double eps)
{
    // Alg. 6 with the intended test: a mode joins the first group (in creation order) whose
    // representative (first mode) is within eps, else opens a new group.
    const Index m = modes.rows();
    const double eps2 = eps * eps;
    std::vector<int> raw(static_cast<std::size_t>(m), -1);
    Representatives rep;
    ModeGrid grid(modes, eps > 0 ? eps : 1.0);
    const bool use_grid = grid.usable();
    VectorD norm;
    if (!use_grid) norm = modes.rowwise().squaredNorm();
    const Index B = block_rows();
    std::vector<int> found;
    for (Index s = 0; s < m; s += B) {
        const Index e = std::min(m, s + B);
        const Index old = rep.count();
        // 1. In parallel: the first group created before this block that takes the mode.
        found.assign(std::size_t(e - s), -1);
        if (old > 0) {
            if (use_grid) {
                MS_PARALLEL_FOR((e - s) * 243)
                for (Index i = s; i < e; ++i) {
                    int f = -1;
                    grid.for_neighbours(i, [&](int g) {
                        if ((f < 0 || g < f) && dist2(modes, i, rep.mode[std::size_t(g)]) <= eps2) f = g;
                    });
                    found[std::size_t(i - s)] = f;
                }
            } else {
                first_within(modes, norm, s, e, rep.rows.data(), rep.norm.data(), old, eps2, found);
            }
        }
        // 2. In order: modes no earlier group takes may join a group opened in this block.
        for (Index i = s; i < e; ++i) {
            int f = found[std::size_t(i - s)];
            if (f < 0) {
                if (use_grid) {
                    grid.for_neighbours(i, [&](int g) {
                        if ((f < 0 || g < f) && dist2(modes, i, rep.mode[std::size_t(g)]) <= eps2) f = g;
                    });
                } else {
                    for (Index g = old; g < rep.count() && f < 0; ++g)
                        if (dist2(modes, i, rep.mode[std::size_t(g)]) <= eps2) f = static_cast<int>(g);
                }
            }
            if (f < 0) {
                f = static_cast<int>(rep.count());
                rep.add(modes, i);
                if (use_grid) grid.insert(i, f);
            }
            raw[std::size_t(i)] = f;
        }
    }
    return finish(modes, std::move(raw), static_cast<int>(rep.count()));
}

Index find_root(std::vector<Index>& parent, Index x)
{
    while (parent[std::size_t(x)] != x) {
        parent[std::size_t(x)] = parent[std::size_t(parent[std::size_t(x)])];
        x = parent[std::size_t(x)];
    }
    return x;
}

Grouping components(const MatrixD& modes, double delta)
{
    const Index m = modes.rows();
    const double d2max = delta * delta;
    std::vector<Index> parent(static_cast<std::size_t>(m));
    std::iota(parent.begin(), parent.end(), Index(0));
    auto unite = [&](Index a, Index b) {
        a = find_root(parent, a);
        b = find_root(parent, b);
        if (a != b) parent[std::size_t(std::max(a, b))] = std::min(a, b);
    };
    ModeGrid grid(modes, delta > 0 ? delta : 1.0);
    const Index B = block_rows();
    // Per block: in parallel, each mode's links to earlier modes (one per component the earlier
    // modes formed when the block began: more links to one component add nothing), then united.
    std::vector<Index> root(static_cast<std::size_t>(m));
    std::vector<std::vector<Index>> links;
    for (Index s = 0; s < m; s += B) {
        const Index e = std::min(m, s + B);
        links.assign(std::size_t(e - s), {});
        if (grid.usable()) {  // few neighbours per mode: link them all
            for (Index i = s; i < e; ++i) grid.insert(i, static_cast<int>(i));
            MS_PARALLEL_FOR((e - s) * 243)
            for (Index i = s; i < e; ++i) {
                auto& l = links[std::size_t(i - s)];
                grid.for_neighbours(i, [&](int j) {
                    if (j < i && dist2(modes, i, j) <= d2max) l.push_back(j);
                });
            }
        } else {
            for (Index j = 0; j < s; ++j) root[std::size_t(j)] = find_root(parent, j);
            for (Index j = s; j < e; ++j) root[std::size_t(j)] = j;
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 16)                                                                         \
    num_threads(detail::host_threads()) if ((e - s) * e * modes.cols() >= detail::kParallelMinValues)
#endif
            for (Index i = s; i < e; ++i) {
                auto& l = links[std::size_t(i - s)];
                for (Index j = 0; j < i; ++j) {
                    const Index r = root[std::size_t(j)];
                    if (std::find(l.begin(), l.end(), r) == l.end() && dist2(modes, i, j) <= d2max) l.push_back(r);
                }
            }
        }
        for (Index i = s; i < e; ++i)
            for (Index r : links[std::size_t(i - s)]) unite(i, r);
    }
    std::vector<int> raw(static_cast<std::size_t>(m));
    std::unordered_map<Index, int> id;
    for (Index i = 0; i < m; ++i) {
        const Index r = find_root(parent, i);
        auto it = id.emplace(r, static_cast<int>(id.size())).first;
        raw[std::size_t(i)] = it->second;
    }
    return finish(modes, std::move(raw), static_cast<int>(id.size()));
}

}  // namespace

Grouping group_modes(const MatrixD& modes, double eps, GroupingMethod method)
{
    if (!std::isfinite(eps) || eps < 0)
        throw InvalidArgument("groupModes: eps must be finite and >= 0, got " + std::to_string(eps));
    if (modes.rows() > std::numeric_limits<int>::max())
        throw InvalidArgument("groupModes: too many modes for int labels");
    // One pass in memory order: Eigen's allFinite() walked this row-major matrix column by column,
    // 0.3 s of 0.4 s for 100,000 x 384 modes.
    if (!detail::all_finite(modes.data(), static_cast<std::size_t>(modes.size())))
        throw InvalidArgument("groupModes: the modes hold NaN or Inf");
    if (method == GroupingMethod::ScikitLearn)  // its intensities and labels are counted over the data
        throw InvalidArgument("groupModes: GroupingMethod::ScikitLearn needs the data points; cluster() runs it");
    if (modes.rows() == 0 || method == GroupingMethod::None) return Grouping{{}, MatrixD(0, modes.cols()), {}};
    return method == GroupingMethod::Sequential ? sequential(modes, eps) : components(modes, eps);
}

}  // namespace meanshift
